// Kernels of the TensorArrayV3 ops. TensorArrayV3 creates a TensorArray in the run's
// per-step container (it is dropped when the run ends, as in TF) and outputs its handle;
// the other ops look it up by that handle. The rules — which index may be written or read
// when, what an unwritten element of a gradient array reads as, when shapes must agree —
// and the error messages are TF 1.15's (core/kernels/tensor_array.{h,cc}).
#include <algorithm>
#include <atomic>
#include <memory>
#include <numeric>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/internal/step_resources.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/kernels/internal/array_util.h"

namespace flowtrain {
namespace {

constexpr const char* kTensorArrayType = "TensorArray";

// One array of tensors. Thread-safe: every method locks `mu_`.
class TensorArray : public ResourceBase {
 public:
  struct Options {
    DataType dtype = DT_FLOAT;
    PartialTensorShape element_shape = PartialTensorShape::Unknown();
    bool identical_element_shapes = false;
    bool dynamic_size = false;
    // A gradient array: writes to one index add up.
    bool is_grad = false;
    bool clear_after_read = true;
  };

  TensorArray(std::string name, int64_t size, Options options)
      : name_(std::move(name)),
        options_(std::move(options)),
        element_shape_(options_.element_shape),
        elements_(size) {}

  std::string DebugString() const override { return StrCat("TensorArray ", name_); }
  const std::string& name() const { return name_; }
  DataType dtype() const { return options_.dtype; }
  bool dynamic_size() const { return options_.dynamic_size; }
  bool identical_element_shapes() const { return options_.identical_element_shapes; }

  PartialTensorShape element_shape() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return element_shape_;
  }
  // The number of elements; InvalidArgument once closed.
  int64_t Size() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    CheckNotClosed();
    return static_cast<int64_t>(elements_.size());
  }
  // Drops the elements; closing twice is allowed, as in TF.
  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    elements_.clear();
  }
  void Write(int64_t index, const Tensor& value) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    CheckNotClosed();
    LockedWrite(index, value);
  }
  // Writes values[i] at indices[i], after checking every index (nothing is written when one
  // is out of range).
  void WriteMany(const std::vector<int64_t>& indices, const std::vector<Tensor>& values)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    CheckNotClosed();
    if (!indices.empty() && !options_.dynamic_size) {
      const int64_t max_index = *std::max_element(indices.begin(), indices.end());
      if (max_index >= static_cast<int64_t>(elements_.size())) {
        InvalidArgument("TensorArray ", name_, ": Tried to write to index ", max_index,
                        " but array is not resizeable and size is: ", elements_.size());
      }
    }
    for (size_t i = 0; i < indices.size(); ++i) LockedWrite(indices[i], values[i]);
  }
  Tensor Read(int64_t index) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    CheckNotClosed();
    return LockedRead(index);
  }
  // The elements at `indices`, in order.
  std::vector<Tensor> ReadMany(const std::vector<int64_t>& indices) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    CheckNotClosed();
    std::vector<Tensor> values;
    values.reserve(indices.size());
    for (int64_t index : indices) values.push_back(LockedRead(index));
    return values;
  }

 private:
  struct Element {
    Tensor value;
    bool written = false;
    bool read = false;
    bool cleared = false;
  };

  void CheckNotClosed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) InvalidArgument("TensorArray ", name_, " has already been closed.");
  }

  void LockedWrite(int64_t index, const Tensor& value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (index < 0) {
      OutOfRange("TensorArray ", name_, ": Writing to negative indices (index ", index, ") is not allowed.");
    }
    if (index >= static_cast<int64_t>(elements_.size())) {
      if (!options_.dynamic_size) {
        InvalidArgument("TensorArray ", name_, ": Tried to write to index ", index,
                        " but array is not resizeable and size is: ", elements_.size());
      }
      elements_.resize(index + 1);
    }
    if (value.dtype() != options_.dtype) {
      InvalidArgument("TensorArray ", name_, ": Could not write to TensorArray index ", index,
                      " because the value dtype is ", DataTypeString(value.dtype()),
                      " but TensorArray dtype is ", DataTypeString(options_.dtype), ".");
    }
    const PartialTensorShape value_shape(value.shape());
    if (!element_shape_.IsCompatibleWith(value_shape)) {
      InvalidArgument("TensorArray ", name_, ": Could not write to TensorArray index ", index,
                      " because the value shape is ", value.shape().DebugString(),
                      " which is incompatible with the TensorArray's inferred element shape: ",
                      element_shape_.DebugString(), " (consider setting infer_shape=False).");
    }
    if (options_.identical_element_shapes) {
      element_shape_ = element_shape_.MergeWith(value_shape);
    }
    Element& element = elements_[index];
    if (element.read) {
      InvalidArgument("TensorArray ", name_, ": Could not write to TensorArray index ", index,
                      " because it has already been read.");
    }
    if (element.written && !options_.is_grad) {
      InvalidArgument("TensorArray ", name_, ": Could not write to TensorArray index ", index,
                      " because it has already been written to.");
    }
    if (!element.written) {
      element.value = value;
      element.written = true;
      return;
    }
    // A gradient array sums what several consumers of one forward element contribute.
    if (element.value.shape() != value.shape()) {
      InvalidArgument("TensorArray ", name_, ": Could not aggregate to TensorArray index ", index,
                      " because the existing shape is ", element.value.shape().DebugString(),
                      " but the new input shape is ", value.shape().DebugString(), ".");
    }
    Tensor sum(value.dtype(), value.shape());
    DispatchNumericType(value.dtype(), "TensorArray aggregation", [&]<typename T>() {
      const T* a = element.value.data<T>();
      const T* b = value.data<T>();
      T* out = sum.data<T>();
      for (int64_t i = 0; i < sum.NumElements(); ++i) out[i] = a[i] + b[i];
    });
    element.value = std::move(sum);
  }

  Tensor LockedRead(int64_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (index < 0 || index >= static_cast<int64_t>(elements_.size())) {
      InvalidArgument("TensorArray ", name_, ": Tried to read from index ", index,
                      " but array size is: ", elements_.size());
    }
    Element& element = elements_[index];
    if (element.cleared) {
      InvalidArgument("TensorArray ", name_, ": Could not read index ", index,
                      " twice because it was cleared after a previous read "
                      "(perhaps try setting clear_after_read = false?).");
    }
    Tensor value;
    if (element.written) {
      value = element.value;
    } else if (!element_shape_.IsFullyDefined()) {
      // An unwritten element reads as zeros of the element shape, as in TF (what
      // dynamic_rnn's outputs past the longest sequence are); without a full shape it fails.
      InvalidArgument(
          "TensorArray ", name_, ": Could not read from TensorArray index ", index,
          ".  Furthermore, the element shape is not fully defined: ", element_shape_.DebugString(),
          ".  It is possible you are working with a resizeable TensorArray and "
          "stop_gradients is not allowing the gradients to be written.  If you set the "
          "full element_shape property on the forward TensorArray, the proper all-zeros "
          "tensor will be returned instead of incurring this error.");
    } else {
      value = Tensor(options_.dtype, element_shape_.AsTensorShape());
      SetZero(value);
    }
    element.read = true;
    if (options_.clear_after_read) {
      element.value = Tensor();
      element.cleared = true;
    }
    return value;
  }

  const std::string name_;
  mutable absl::Mutex mu_;
  // Fixed at construction; `options_.element_shape` is the initial value of `element_shape_`.
  const Options options_;
  // Narrowed by the first write when `identical_element_shapes`.
  PartialTensorShape element_shape_ ABSL_GUARDED_BY(mu_);
  std::vector<Element> elements_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// TF names each array "<tensor_array_name>_<n>" with a process-wide counter.
std::atomic<int64_t> tensor_array_counter{0};

Tensor MakeHandle(const std::string& container, const std::string& name) {
  Tensor handle(DT_RESOURCE, TensorShape());
  handle.scalar<ResourceHandle>() = {.container = container, .name = name, .type_name = kTensorArrayType};
  return handle;
}

// The array behind input 0; InvalidArgument for a handle of another kind, NotFound when the
// array is gone (another run's, or never created).
std::shared_ptr<TensorArray> GetTensorArray(OpKernelContext* ctx, const OpKernel& kernel) {
  const Tensor& handle_tensor = ctx->input(0);
  if (handle_tensor.dtype() != DT_RESOURCE || handle_tensor.NumElements() != 1) {
    InvalidArgument(kernel.name(), " expects a TensorArray handle, got a ",
                    DataTypeString(handle_tensor.dtype()), " tensor of shape ",
                    handle_tensor.shape().DebugString());
  }
  const ResourceHandle& handle = handle_tensor.data<ResourceHandle>()[0];
  if (handle.type_name != kTensorArrayType) {
    InvalidArgument(kernel.name(), " expects a TensorArray handle, but ", handle.DebugString(), " is a ",
                    handle.type_name.empty() ? std::string("resource of unknown kind") : handle.type_name);
  }
  auto array = ctx->resource_manager()->Lookup<TensorArray>(handle.container, handle.name);
  if (array == nullptr) {
    NotFound("Container ", handle.container,
             " does not exist. (Could not find resource: ", handle.DebugString(),
             ") — a TensorArray lives only for the run that created it");
  }
  return array;
}

void CheckDtype(const TensorArray& array, DataType op_dtype) {
  if (array.dtype() != op_dtype) {
    InvalidArgument("TensorArray ", array.name(), ": TensorArray dtype is ", DataTypeString(array.dtype()),
                    " but Op requested dtype ", DataTypeString(op_dtype), ".");
  }
}

int64_t ScalarIndex(const Tensor& t, std::string_view what) {
  if (t.dims() != 0) InvalidArgument(what, " must be a scalar, got shape ", t.shape().DebugString());
  return ReadIndex(t, 0);
}

// The elements of `values` stacked along a new dimension 0; all must have one shape.
Tensor StackElements(const TensorArray& array, const std::vector<Tensor>& values, DataType dtype) {
  const TensorShape& element = values[0].shape();
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i].shape() != element) {
      InvalidArgument("TensorArray ", array.name(),
                      " has inconsistent shapes.  Index 0 has shape: ", element.DebugString(), " but index ",
                      i, " has shape: ", values[i].shape().DebugString());
    }
  }
  TensorShape shape = element;
  shape.InsertDim(0, static_cast<int64_t>(values.size()));
  Tensor out(dtype, shape);
  const int64_t n = element.num_elements();
  for (size_t i = 0; i < values.size(); ++i) CopyElements(values[i], 0, out, static_cast<int64_t>(i) * n, n);
  return out;
}

class TensorArrayOp : public OpKernel {
 public:
  explicit TensorArrayOp(OpKernelConstruction& c) : OpKernel(c) {
    options_.dtype = c.GetAttr<DataType>("dtype");
    options_.element_shape = c.GetAttr<PartialTensorShape>("element_shape");
    options_.identical_element_shapes = c.GetAttr<bool>("identical_element_shapes");
    options_.dynamic_size = c.GetAttr<bool>("dynamic_size");
    options_.clear_after_read = c.GetAttr<bool>("clear_after_read");
    base_name_ = c.GetAttr<std::string>("tensor_array_name");
    if (base_name_.empty()) base_name_ = c.name();
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& size = ctx->input(0);
    if (size.dims() != 0)
      InvalidArgument("TensorArray size must be scalar, but had shape: ", size.shape().DebugString());
    const int64_t n = ReadIndex(size, 0);
    if (n < 0) InvalidArgument("Size should be >= 0.");
    const std::string name = StrCat(base_name_, "_", tensor_array_counter.fetch_add(1));
    const std::string container = ctx->step_container();
    ctx->resource_manager()->LookupOrCreate<TensorArray>(
        container, name, [&] { return std::make_shared<TensorArray>(name, n, options_); });
    ctx->set_output(0, MakeHandle(container, name));
    ctx->set_output(1, Tensor::Scalar<float>(0));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  TensorArray::Options options_;
  std::string base_name_;
};
FT_REGISTER_KERNEL("TensorArrayV3", TensorArrayOp);
FT_REGISTER_STEP_RESOURCE_OP("TensorArrayV3");

// The gradient array of a forward array for one gradient computation (`source`): created on
// first use as "<forward name>@<source>", so every gradient op of that computation shares it.
class TensorArrayGradOp : public OpKernel {
 public:
  explicit TensorArrayGradOp(OpKernelConstruction& c)
      : OpKernel(c), source_(c.GetAttr<std::string>("source")) {}
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<TensorArray> forward = GetTensorArray(ctx, *this);
    const int64_t size = forward->Size();
    const ResourceHandle& handle = ctx->input(0).data<ResourceHandle>()[0];
    const std::string name = StrCat(forward->name(), "@", source_);
    ctx->resource_manager()->LookupOrCreate<TensorArray>(handle.container, name, [&] {
      TensorArray::Options options{.dtype = forward->dtype(),
                                   .element_shape = forward->element_shape(),
                                   .identical_element_shapes = forward->identical_element_shapes(),
                                   .dynamic_size = false,
                                   .is_grad = true,
                                   .clear_after_read = true};
      return std::make_shared<TensorArray>(name, size, options);
    });
    ctx->set_output(0, MakeHandle(handle.container, name));
    ctx->set_output(1, ctx->input(1));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  std::string source_;
};
FT_REGISTER_KERNEL("TensorArrayGradV3", TensorArrayGradOp);

struct TensorArrayWriteOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<TensorArray> array = GetTensorArray(ctx, *this);
    array->Write(ScalarIndex(ctx->input(1), "TensorArray index"), ctx->input(2));
    ctx->set_output(0, ctx->input(3));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("TensorArrayWriteV3", TensorArrayWriteOp);

struct TensorArrayReadOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<TensorArray> array = GetTensorArray(ctx, *this);
    CheckDtype(*array, ctx->output_type(0));
    ctx->set_output(0, array->Read(ScalarIndex(ctx->input(1), "TensorArray index")));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("TensorArrayReadV3", TensorArrayReadOp);

class TensorArrayGatherOp : public OpKernel {
 public:
  explicit TensorArrayGatherOp(OpKernelConstruction& c)
      : OpKernel(c), element_shape_(c.GetAttr<PartialTensorShape>("element_shape")) {}
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<TensorArray> array = GetTensorArray(ctx, *this);
    CheckDtype(*array, ctx->output_type(0));
    const Tensor& indices = ctx->input(1);
    if (indices.dims() != 1) {
      InvalidArgument("Expected indices to be a vector, but received shape: ", indices.shape().DebugString());
    }
    const std::vector<Tensor> values = array->ReadMany(ReadIndices(indices));
    if (values.empty()) {
      const PartialTensorShape element = element_shape_.MergeWith(array->element_shape());
      if (!element.IsFullyDefined()) {
        InvalidArgument("TensorArray ", array->name(), " has size zero, but element shape ",
                        element.DebugString(),
                        " is not fully defined. Currently only static shapes are supported when packing "
                        "zero-size TensorArrays.");
      }
      TensorShape shape = element.AsTensorShape();
      shape.InsertDim(0, 0);
      ctx->allocate_output(0, shape);
      return;
    }
    ctx->set_output(0, StackElements(*array, values, ctx->output_type(0)));
  }

 private:
  PartialTensorShape element_shape_;
};
FT_REGISTER_KERNEL("TensorArrayGatherV3", TensorArrayGatherOp);

struct TensorArrayScatterOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<TensorArray> array = GetTensorArray(ctx, *this);
    const Tensor& indices = ctx->input(1);
    const Tensor& value = ctx->input(2);
    if (indices.dims() != 1) {
      InvalidArgument("Expected indices to be a vector, but received shape: ", indices.shape().DebugString());
    }
    if (value.dims() < 1) {
      InvalidArgument("TensorArray ", array->name(),
                      ": Input value for unpack must be at least a vector, got shape ",
                      value.shape().DebugString());
    }
    const std::vector<int64_t> index_values = ReadIndices(indices);
    if (static_cast<int64_t>(index_values.size()) != value.dim_size(0)) {
      InvalidArgument("TensorArray ", array->name(),
                      ": Expected len(indices) == values.shape[0], but saw: ", index_values.size(), " vs. ",
                      value.dim_size(0));
    }
    std::vector<Tensor> elements;
    TensorShape element_shape = value.shape();
    element_shape.RemoveDim(0);
    for (int64_t i = 0; i < value.dim_size(0); ++i)
      elements.push_back(value.Slice(i, i + 1).Reshaped(element_shape));
    array->WriteMany(index_values, elements);
    ctx->set_output(0, ctx->input(3));
  }
};
FT_REGISTER_KERNEL("TensorArrayScatterV3", TensorArrayScatterOp);

class TensorArrayConcatOp : public OpKernel {
 public:
  explicit TensorArrayConcatOp(OpKernelConstruction& c)
      : OpKernel(c), element_shape_except0_(c.GetAttr<PartialTensorShape>("element_shape_except0")) {}
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<TensorArray> array = GetTensorArray(ctx, *this);
    CheckDtype(*array, ctx->output_type(0));
    std::vector<int64_t> all(array->Size());
    std::iota(all.begin(), all.end(), 0);
    const std::vector<Tensor> values = array->ReadMany(all);
    Tensor* lengths = ctx->allocate_output(1, TensorShape({static_cast<int64_t>(values.size())}));
    if (values.empty()) {
      if (!element_shape_except0_.IsFullyDefined()) {
        InvalidArgument("TensorArray ", array->name(), " has size zero, but element_shape_except0 ",
                        element_shape_except0_.DebugString(),
                        " is not fully defined. Currently only static shapes are supported when "
                        "concatenating zero-size TensorArrays.");
      }
      TensorShape shape = element_shape_except0_.AsTensorShape();
      shape.InsertDim(0, 0);
      ctx->allocate_output(0, shape);
      return;
    }
    TensorShape rest;
    int64_t rows = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      TensorShape shape = values[i].shape();
      if (shape.dims() == 0) {
        InvalidArgument("TensorArray ", array->name(), ": Concat saw a scalar shape at index ", i,
                        " but requires at least vectors.  Did you mean to call TensorArray::Pack?");
      }
      lengths->data<int64_t>()[i] = shape.dim_size(0);
      rows += shape.dim_size(0);
      shape.RemoveDim(0);
      if (i == 0) {
        rest = shape;
      } else if (shape != rest) {
        InvalidArgument(
            "TensorArray ", array->name(),
            " has inconsistent shapes.  Index 0 has (excepting dimension 0) shape: ", rest.DebugString(),
            " but index ", i, " has (excepting dimension 0) shape: ", shape.DebugString());
      }
    }
    TensorShape shape = rest;
    shape.InsertDim(0, rows);
    Tensor* out = ctx->allocate_output(0, shape);
    int64_t offset = 0;
    for (const Tensor& value : values) {
      CopyElements(value, 0, *out, offset, value.NumElements());
      offset += value.NumElements();
    }
  }

 private:
  PartialTensorShape element_shape_except0_;
};
FT_REGISTER_KERNEL("TensorArrayConcatV3", TensorArrayConcatOp);

struct TensorArraySplitOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<TensorArray> array = GetTensorArray(ctx, *this);
    const Tensor& value = ctx->input(1);
    const Tensor& lengths = ctx->input(2);
    if (lengths.dims() != 1) {
      InvalidArgument("Expected lengths to be a vector, received shape: ", lengths.shape().DebugString());
    }
    if (value.dims() < 1) {
      InvalidArgument(
          "TensorArray ", array->name(),
          ": Expected value to be at least a vector, but received shape: ", value.shape().DebugString());
    }
    const std::vector<int64_t> sizes = ReadIndices(lengths);
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) InvalidArgument("TensorArray ", array->name(), ": lengths must be non-negative, got ", s);
      total += s;
    }
    if (total != value.dim_size(0)) {
      InvalidArgument("TensorArray ", array->name(),
                      ": Expected sum of lengths to be equal to values.shape[0], but sum of lengths is ",
                      total, " and value's shape is: ", value.shape().DebugString());
    }
    const int64_t array_size = array->Size();
    if (!array->dynamic_size() && array_size != static_cast<int64_t>(sizes.size())) {
      InvalidArgument("TensorArray ", array->name(), "'s size is not equal to the size of lengths (",
                      array_size, " vs. ", sizes.size(),
                      "), and the TensorArray is not marked as dynamically resizeable");
    }
    std::vector<int64_t> indices(sizes.size());
    std::iota(indices.begin(), indices.end(), 0);
    std::vector<Tensor> elements;
    int64_t row = 0;
    for (int64_t s : sizes) {
      elements.push_back(value.Slice(row, row + s));
      row += s;
    }
    array->WriteMany(indices, elements);
    ctx->set_output(0, ctx->input(3));
  }
};
FT_REGISTER_KERNEL("TensorArraySplitV3", TensorArraySplitOp);

struct TensorArraySizeOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(GetTensorArray(ctx, *this)->Size())));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("TensorArraySizeV3", TensorArraySizeOp);

struct TensorArrayCloseOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { GetTensorArray(ctx, *this)->Close(); }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("TensorArrayCloseV3", TensorArrayCloseOp);

}  // namespace
}  // namespace flowtrain
