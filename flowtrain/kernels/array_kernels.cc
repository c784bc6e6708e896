// Kernels of the array ops: constants, placeholders, identity and shape manipulation. They
// move data without arithmetic, so they work on raw bytes (or std::string elements).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/work_sharder.h"
#include "flowtrain/kernels/internal/array_util.h"

namespace flowtrain {
namespace {

class ConstOp : public OpKernel {
 public:
  explicit ConstOp(OpKernelConstruction& c) : OpKernel(c), value_(*c.node().constant_value()) {}
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, value_); }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  const Tensor value_;
};
FT_REGISTER_KERNEL("Const", ConstOp);

class PlaceholderOp : public OpKernel {
 public:
  explicit PlaceholderOp(OpKernelConstruction& c)
      : OpKernel(c), dtype_(c.GetAttr<DataType>("dtype")), shape_(c.GetAttr<PartialTensorShape>("shape")) {}
  void Compute(OpKernelContext* ctx) override {
    // Reached only when the placeholder was not fed.
    if (shape_.unknown_rank()) {
      InvalidArgument("You must feed a value for placeholder tensor '", name(), "' with dtype ",
                      DataTypeString(dtype_));
    }
    InvalidArgument("You must feed a value for placeholder tensor '", name(), "' with dtype ",
                    DataTypeString(dtype_), " and shape ", shape_.DebugString());
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  DataType dtype_;
  PartialTensorShape shape_;
};
FT_REGISTER_KERNEL("Placeholder", PlaceholderOp);

// Identity, PlaceholderWithDefault (when not fed) and StopGradient forward their input.
class ForwardInputOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("Identity", ForwardInputOp);
FT_REGISTER_KERNEL("PlaceholderWithDefault", ForwardInputOp);

class IdentityNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) ctx->set_output(i, ctx->input(i));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("IdentityN", IdentityNOp);

class NoOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("NoOp", NoOp);

class ReshapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& shape = ctx->input(1);
    if (shape.dims() != 1) {
      InvalidArgument("sizes input must be 1-D, not ", shape.shape().DebugString());
    }
    DimVector dims;
    int unknown = -1;
    int64_t product = 1;
    for (int64_t i = 0; i < shape.NumElements(); ++i) {
      const int64_t d = ReadIndex(shape, i);
      if (d == -1) {
        if (unknown >= 0) InvalidArgument("Only one input size may be -1, not both ", unknown, " and ", i);
        unknown = static_cast<int>(i);
        dims.push_back(1);
      } else if (d < 0) {
        InvalidArgument("Size ", i, " must be non-negative, not ", d);
      } else {
        dims.push_back(d);
        product = CheckedMultiplySizes(product, d, "Reshape", StrCat("requested shape up to size ", i));
      }
    }
    if (unknown >= 0) {
      if (product == 0 || input.NumElements() % product != 0) {
        InvalidArgument("Input to reshape is a tensor with ", input.NumElements(),
                        " values, but the requested shape requires a multiple of ", product);
      }
      dims[unknown] = input.NumElements() / product;
    }
    TensorShape target(std::move(dims));
    if (target.num_elements() != input.NumElements()) {
      InvalidArgument("Input to reshape is a tensor with ", input.NumElements(),
                      " values, but the requested shape has ", target.num_elements());
    }
    ctx->set_output(0, input.Reshaped(target));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("Reshape", ReshapeOp);

class ShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, TensorShape({input.dims()}));
    for (int i = 0; i < input.dims(); ++i) {
      if (out->dtype() == DT_INT32) {
        if (input.dim_size(i) > INT32_MAX) {
          InvalidArgument("Shape output type is 32-bit but dim ", i, " is ", input.dim_size(i));
        }
        out->flat<int32_t>()[i] = static_cast<int32_t>(input.dim_size(i));
      } else {
        out->flat<int64_t>()[i] = input.dim_size(i);
      }
    }
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("Shape", ShapeOp);

class ShapeNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int k = 0; k < ctx->num_inputs(); ++k) {
      const Tensor& input = ctx->input(k);
      Tensor* out = ctx->allocate_output(k, TensorShape({input.dims()}));
      for (int i = 0; i < input.dims(); ++i) {
        if (out->dtype() == DT_INT32) {
          if (input.dim_size(i) > INT32_MAX) {
            InvalidArgument("ShapeN output type is 32-bit but dim ", i, " of input ", k, " is ",
                            input.dim_size(i));
          }
          out->flat<int32_t>()[i] = static_cast<int32_t>(input.dim_size(i));
        } else {
          out->flat<int64_t>()[i] = input.dim_size(i);
        }
      }
    }
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("ShapeN", ShapeNOp);

// Offsets are 0 in every dimension but concat_dim, where they are the running sum of the
// inputs' sizes; every shape must agree with the first outside concat_dim (TF's errors).
class ConcatOffsetOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dim_t = ctx->input(0);
    if (dim_t.NumElements() != 1) InvalidArgument("Concat dim tensor should be a scalar integer");
    const Tensor& first = ctx->input(1);
    if (first.dims() != 1) InvalidArgument("input 0 should be a vector, got ", first.shape().DebugString());
    const int64_t rank = first.NumElements();
    int64_t axis = dim_t.flat<int32_t>()[0];
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) {
      InvalidArgument("Concat dim is out of range: ", dim_t.flat<int32_t>()[0], " vs. ", rank);
    }
    auto dim = [](const Tensor& t, int64_t i) -> int64_t {
      return t.dtype() == DT_INT32 ? t.flat<int32_t>()[i] : t.flat<int64_t>()[i];
    };
    int64_t offset = 0;
    for (int k = 1; k < ctx->num_inputs(); ++k) {
      const Tensor& shape = ctx->input(k);
      if (shape.dims() != 1 || shape.NumElements() != rank || shape.dtype() != first.dtype()) {
        InvalidArgument("input ", k - 1, " should contain ", rank, " elements, but got ",
                        shape.NumElements());
      }
      Tensor* out = ctx->allocate_output(k - 1, TensorShape({rank}));
      for (int64_t i = 0; i < rank; ++i) {
        if (i != axis && dim(shape, i) != dim(first, i)) {
          InvalidArgument("input[", k - 1, ",", i, "] mismatch: ", dim(shape, i), " vs. ", dim(first, i));
        }
        const int64_t v = i == axis ? offset : 0;
        if (out->dtype() == DT_INT32) {
          out->flat<int32_t>()[i] = static_cast<int32_t>(v);
        } else {
          out->flat<int64_t>()[i] = v;
        }
      }
      offset += dim(shape, axis);
    }
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("ConcatOffset", ConcatOffsetOp);

class UniqueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.dims() != 1) InvalidArgument("unique expects a 1D vector, got ", x.shape().DebugString());
    Tensor* idx = ctx->allocate_output(1, x.shape());
    DispatchDataType(x.dtype(), "Unique", [&]<typename T>() {
      // 16-bit floats are compared (and hashed) as the floats they convert to exactly.
      using Key = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;
      const auto values = x.flat<T>();
      absl::flat_hash_map<Key, int64_t> seen;
      seen.reserve(values.size());
      std::vector<size_t> first;  // where in x each distinct value first appears
      for (size_t i = 0; i < values.size(); ++i) {
        auto [it, inserted] =
            seen.try_emplace(static_cast<Key>(values[i]), static_cast<int64_t>(first.size()));
        if (inserted) first.push_back(i);
        if (idx->dtype() == DT_INT32) {
          idx->flat<int32_t>()[i] = static_cast<int32_t>(it->second);
        } else {
          idx->flat<int64_t>()[i] = it->second;
        }
      }
      if (idx->dtype() == DT_INT32 && first.size() > static_cast<size_t>(INT32_MAX)) {
        InvalidArgument("Unique: more distinct values than out_idx int32 can number");
      }
      Tensor* y = ctx->allocate_output(0, TensorShape({static_cast<int64_t>(first.size())}));
      auto out = y->flat<T>();
      for (size_t k = 0; k < first.size(); ++k) out[k] = values[first[k]];
    });
  }
};
FT_REGISTER_KERNEL("Unique", UniqueOp);

class DynamicStitchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() / 2;
    int64_t max_index = -1;
    const Tensor& data0 = ctx->input(n);
    const int index_rank0 = ctx->input(0).dims();
    for (int m = 0; m < n; ++m) {
      const Tensor& indices = ctx->input(m);
      const Tensor& data = ctx->input(n + m);
      bool prefix =
          data.dims() >= indices.dims() && data.dims() - indices.dims() == data0.dims() - index_rank0;
      for (int d = 0; prefix && d < indices.dims(); ++d) prefix = data.dim_size(d) == indices.dim_size(d);
      for (int d = indices.dims(); prefix && d < data.dims(); ++d) {
        prefix = data.dim_size(d) == data0.dim_size(d - indices.dims() + index_rank0);
      }
      if (!prefix) {
        InvalidArgument("DynamicStitch: data[", m, "].shape = ", data.shape().DebugString(),
                        " does not start with indices[", m, "].shape = ", indices.shape().DebugString(),
                        " followed by the shape of the other slices");
      }
      for (int64_t i = 0; i < indices.NumElements(); ++i) {
        const int64_t index = indices.flat<int32_t>()[i];
        if (index < 0) InvalidArgument("DynamicStitch: indices[", m, "] has a negative index ", index);
        max_index = std::max(max_index, index);
      }
    }
    DimVector dims = {max_index + 1};
    for (int d = index_rank0; d < data0.dims(); ++d) dims.push_back(data0.dim_size(d));
    Tensor* out = ctx->allocate_output(0, TensorShape(std::move(dims)));
    const int64_t slice = max_index + 1 == 0 ? 0 : out->NumElements() / (max_index + 1);
    // Rows no index names stay zero (TF leaves them unspecified).
    DispatchDataType(out->dtype(), "DynamicStitch", [&]<typename T>() {
      for (T& v : out->flat<T>()) v = T();
    });
    for (int m = 0; m < n; ++m) {
      const Tensor& indices = ctx->input(m);
      for (int64_t i = 0; i < indices.NumElements(); ++i) {
        CopyElements(ctx->input(n + m), i * slice, *out, indices.flat<int32_t>()[i] * slice, slice);
      }
    }
  }
};
FT_REGISTER_KERNEL("DynamicStitch", DynamicStitchOp);
FT_REGISTER_KERNEL("ParallelDynamicStitch", DynamicStitchOp);

class DynamicPartitionOp : public OpKernel {
 public:
  explicit DynamicPartitionOp(OpKernelConstruction& c)
      : OpKernel(c), num_partitions_(c.GetAttr<int64_t>("num_partitions")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& partitions = ctx->input(1);
    bool prefix = partitions.dims() <= data.dims();
    for (int d = 0; prefix && d < partitions.dims(); ++d) prefix = data.dim_size(d) == partitions.dim_size(d);
    if (!prefix) {
      InvalidArgument("DynamicPartition: data.shape must start with partitions.shape, got data.shape = ",
                      data.shape().DebugString(), ", partitions.shape = ", partitions.shape().DebugString());
    }
    const int64_t n = partitions.NumElements();
    std::vector<int64_t> counts(static_cast<size_t>(num_partitions_), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int32_t p = partitions.flat<int32_t>()[i];
      if (p < 0 || p >= num_partitions_) {
        InvalidArgument("partitions[", i, "] = ", p, " is not in [0, ", num_partitions_, ")");
      }
      ++counts[p];
    }
    const int64_t slice = n == 0 ? 0 : data.NumElements() / n;
    std::vector<Tensor*> outs;
    for (int64_t p = 0; p < num_partitions_; ++p) {
      DimVector dims = {counts[p]};
      for (int d = partitions.dims(); d < data.dims(); ++d) dims.push_back(data.dim_size(d));
      outs.push_back(ctx->allocate_output(static_cast<int>(p), TensorShape(std::move(dims))));
    }
    std::vector<int64_t> filled(static_cast<size_t>(num_partitions_), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int32_t p = partitions.flat<int32_t>()[i];
      CopyElements(data, i * slice, *outs[p], filled[p]++ * slice, slice);
    }
  }

 private:
  int64_t num_partitions_;
};
FT_REGISTER_KERNEL("DynamicPartition", DynamicPartitionOp);

class RangeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < 3; ++i) {
      if (ctx->input(i).NumElements() != 1) {
        InvalidArgument("Range: ",
                        i == 0   ? "start"
                        : i == 1 ? "limit"
                                 : "delta",
                        " must be a scalar, not shape ", ctx->input(i).shape().DebugString());
      }
    }
    switch (ctx->input(0).dtype()) {
      case DT_INT32:
        return Run<int32_t>(ctx);
      case DT_INT64:
        return Run<int64_t>(ctx);
      case DT_FLOAT:
        return Run<float>(ctx);
      case DT_DOUBLE:
        return Run<double>(ctx);
      default:
        InvalidArgument("Range has no kernel for ", DataTypeString(ctx->input(0).dtype()));
    }
  }

 private:
  template <typename T>
  static void Run(OpKernelContext* ctx) {
    const T start = ctx->input(0).flat<T>()[0];
    const T limit = ctx->input(1).flat<T>()[0];
    const T delta = ctx->input(2).flat<T>()[0];
    if (delta == 0) InvalidArgument("Requires delta != 0: ", delta);
    if (delta > 0 ? start > limit : start < limit) {
      InvalidArgument("Requires start ", delta > 0 ? "<=" : ">=", " limit when delta ",
                      delta > 0 ? "> 0" : "< 0", ": ", start, "/", limit);
    }
    int64_t n = 0;
    if constexpr (std::is_integral_v<T>) {
      // |limit - start| and |delta| in uint64, exact over all of int64 (limit - start itself
      // can overflow: Range(INT64_MIN, INT64_MAX)).
      const auto abs_diff = [](int64_t a, int64_t b) {
        return a > b ? uint64_t(a) - uint64_t(b) : uint64_t(b) - uint64_t(a);
      };
      const uint64_t span = abs_diff(limit, start), step = abs_diff(delta, 0);
      const uint64_t size = span / step + (span % step != 0);
      if (size > uint64_t(std::numeric_limits<int64_t>::max())) {
        InvalidArgument("Range: size of (", limit, " - ", start, ") / ", delta, " = ", size,
                        " overflows int64");
      }
      n = static_cast<int64_t>(size);
    } else {
      const double size = std::ceil(
          std::abs((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta)));
      // Also false for NaN and infinity; the cast to int64 would be undefined.
      if (!(size < 0x1p63)) {
        InvalidArgument("Range: size of (", limit, " - ", start, ") / ", delta, " = ", size,
                        " overflows int64");
      }
      n = static_cast<int64_t>(size);
    }
    Tensor* out = ctx->allocate_output(0, TensorShape({n}));
    T* o = out->data<T>();
    if constexpr (std::is_integral_v<T>) {
      // start + i * delta in uint64: it fits T for every i < n, but stepping v += delta once
      // more past the last element could overflow.
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(uint64_t(start) + uint64_t(i) * uint64_t(delta));
    } else {
      T v = start;
      for (int64_t i = 0; i < n; ++i, v += delta) o[i] = v;
    }
  }
};
FT_REGISTER_KERNEL("Range", RangeOp);

class PackOp : public OpKernel {
 public:
  explicit PackOp(OpKernelConstruction& c) : OpKernel(c), axis_(c.GetAttr<int64_t>("axis")) {}
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const TensorShape& first = ctx->input(0).shape();
    for (int i = 1; i < n; ++i) {
      if (ctx->input(i).shape() != first) {
        InvalidArgument("Shapes of all inputs must match: values[0].shape = ", first.DebugString(),
                        " != values[", i, "].shape = ", ctx->input(i).shape().DebugString());
      }
    }
    int64_t axis = axis_ < 0 ? axis_ + first.dims() + 1 : axis_;
    if (axis < 0 || axis > first.dims()) {
      InvalidArgument("axis = ", axis_, " not in [", -first.dims() - 1, ", ", first.dims() + 1, ")");
    }
    DimVector out_dims = first.dim_sizes();
    out_dims.insert(out_dims.begin() + axis, n);
    CheckedNumElements(out_dims, "Pack");
    const TensorShape out_shape(std::move(out_dims));
    Tensor* out = ctx->allocate_output(0, out_shape);
    // Each input is [outer, inner]; the output interleaves them as [outer, n, inner].
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= first.dim_size(d);
    const int64_t inner = outer == 0 ? 0 : first.num_elements() / std::max<int64_t>(outer, 1);
    for (int64_t o = 0; o < outer; ++o) {
      for (int i = 0; i < n; ++i) CopyElements(ctx->input(i), o * inner, *out, (o * n + i) * inner, inner);
    }
  }

 private:
  int64_t axis_;
};
FT_REGISTER_KERNEL("Pack", PackOp);

class SqueezeOp : public OpKernel {
 public:
  explicit SqueezeOp(OpKernelConstruction& c)
      : OpKernel(c), axes_(c.GetAttr<std::vector<int64_t>>("squeeze_dims")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    std::vector<int64_t> axes = axes_;
    for (int64_t& a : axes) {
      if (a < -input.dims() || a >= input.dims()) {
        InvalidArgument("Tried to squeeze dim index ", a, " for tensor with ", input.dims(), " dimensions.");
      }
      if (a < 0) a += input.dims();
    }
    DimVector dims;
    for (int i = 0; i < input.dims(); ++i) {
      const bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
      if (listed) {
        if (input.dim_size(i) != 1) {
          InvalidArgument("Can not squeeze dim[", i, "], expected a dimension of 1, got ", input.dim_size(i));
        }
        continue;
      }
      if (axes.empty() && input.dim_size(i) == 1) continue;
      dims.push_back(input.dim_size(i));
    }
    ctx->set_output(0, input.Reshaped(TensorShape(std::move(dims))));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  std::vector<int64_t> axes_;
};
FT_REGISTER_KERNEL("Squeeze", SqueezeOp);

class GatherV2Op : public OpKernel {
 public:
  explicit GatherV2Op(OpKernelConstruction& c) : OpKernel(c) {
    if (c.GetAttr<int64_t>("batch_dims") != 0) {
      InvalidArgument("GatherV2 '", c.name(), "': batch_dims other than 0 are not supported");
    }
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& axis_tensor = ctx->input(2);
    if (axis_tensor.NumElements() != 1) InvalidArgument("axis must be scalar");
    int64_t axis = ReadIndex(axis_tensor, 0);
    if (axis < -params.dims() || axis >= params.dims()) {
      InvalidArgument("Expected axis in the range [", -params.dims(), ", ", params.dims(), "), but got ",
                      axis);
    }
    if (axis < 0) axis += params.dims();
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= params.dim_size(d);
    const int64_t limit = params.dim_size(static_cast<int>(axis));
    int64_t inner = 1;
    for (int d = static_cast<int>(axis) + 1; d < params.dims(); ++d) inner *= params.dim_size(d);
    DimVector dims;
    for (int d = 0; d < axis; ++d) dims.push_back(params.dim_size(d));
    for (int64_t d : indices.shape().dim_sizes()) dims.push_back(d);
    for (int d = static_cast<int>(axis) + 1; d < params.dims(); ++d) dims.push_back(params.dim_size(d));
    Tensor* out = ctx->allocate_output(0, TensorShape(std::move(dims)));
    const std::vector<int64_t> index = ReadIndices(indices);
    const int64_t n = static_cast<int64_t>(index.size());
    for (int64_t i = 0; i < n; ++i) {
      if (index[i] < 0 || index[i] >= limit) {
        InvalidArgument("indices[", i, "] = ", index[i], " is not in [0, ", limit, ")");
      }
    }
    if (params.dtype() == DT_STRING) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < n; ++i) {
          CopyElements(params, (o * limit + index[i]) * inner, *out, (o * n + i) * inner, inner);
        }
      }
      return;
    }
    // Rows of plain bytes, copied over the pool: an embedding lookup's rows are scattered
    // over a table far larger than the caches, so each row is mostly a wait for memory.
    const size_t row_bytes = static_cast<size_t>(inner) * DataTypeSize(params.dtype());
    const char* src = static_cast<const char*>(params.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    ParallelRange(ctx, outer * n, 200 + static_cast<int64_t>(row_bytes) / 4, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const int64_t o = k / n, i = k % n;
        std::memcpy(dst + k * row_bytes, src + (o * limit + index[i]) * row_bytes, row_bytes);
      }
    });
  }
};
FT_REGISTER_KERNEL("GatherV2", GatherV2Op);

class WhereOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    std::vector<int64_t> true_positions;
    DispatchDataType(input.dtype(), "Where", [&]<typename T>() {
      if constexpr (std::is_same_v<T, std::string>) {
        InvalidArgument("Where does not support string inputs");
      } else {
        const auto values = input.flat<T>();
        for (size_t i = 0; i < values.size(); ++i) {
          if (values[i] != T(0)) true_positions.push_back(static_cast<int64_t>(i));
        }
      }
    });
    const int rank = input.dims();
    Tensor* out = ctx->allocate_output(0, TensorShape({static_cast<int64_t>(true_positions.size()), rank}));
    auto coords = out->flat<int64_t>();
    for (size_t k = 0; k < true_positions.size(); ++k) {
      int64_t flat = true_positions[k];
      for (int d = rank - 1; d >= 0; --d) {
        coords[k * rank + d] = flat % input.dim_size(d);
        flat /= input.dim_size(d);
      }
    }
  }
};
FT_REGISTER_KERNEL("Where", WhereOp);

}  // namespace
}  // namespace flowtrain

// ---- Fill, ZerosLike, OnesLike, BroadcastTo, BroadcastGradientArgs ----

namespace flowtrain {
namespace {

TensorShape ShapeFromTensor(const Tensor& t, std::string_view op) {
  if (t.dims() != 1) InvalidArgument(op, ": shape must be a vector, got ", t.shape().DebugString());
  DimVector dims;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const int64_t d = t.dtype() == DT_INT32 ? t.flat<int32_t>()[i] : t.flat<int64_t>()[i];
    if (d < 0) InvalidArgument(op, ": dimension ", i, " must be >= 0, got ", d);
    dims.push_back(d);
  }
  CheckedNumElements(dims, op);
  return TensorShape(std::move(dims));
}

// Writes `value` broadcast (numpy rules) to `out`'s shape.
void BroadcastInto(const Tensor& value, Tensor* out, std::string_view op) {
  const TensorShape& shape = out->shape();
  const int rank = shape.dims();
  if (value.dims() > rank) {
    InvalidArgument(op, ": cannot broadcast ", value.shape().DebugString(), " to ", shape.DebugString());
  }
  DimVector strides(rank, 0);
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int vi = value.dims() - rank + i;
    const int64_t d = vi >= 0 ? value.dim_size(vi) : 1;
    if (d != 1 && d != shape.dim_size(i)) {
      InvalidArgument(op, ": cannot broadcast ", value.shape().DebugString(), " to ", shape.DebugString());
    }
    strides[i] = d == 1 ? 0 : stride;
    stride *= d;
  }
  const int64_t n = shape.num_elements();
  if (n == 0) return;
  if (value.NumElements() == 1) {
    // One value everywhere (the gradient of a mean): copy it once, then double the filled
    // prefix, O(log n) block copies instead of one per element.
    CopyElements(value, 0, *out, 0, 1);
    for (int64_t filled = 1; filled < n; filled *= 2)
      CopyElements(*out, 0, *out, filled, std::min(filled, n - filled));
    return;
  }
  const int64_t inner = rank == 0 ? 1 : shape.dim_size(rank - 1);
  const bool inner_contiguous = rank > 0 && strides[rank - 1] == 1;
  for (int64_t row = 0; row < n / inner; ++row) {
    int64_t offset = 0, rest = row;
    for (int d = rank - 2; d >= 0; --d) {
      offset += (rest % shape.dim_size(d)) * strides[d];
      rest /= shape.dim_size(d);
    }
    if (inner_contiguous) {
      CopyElements(value, offset, *out, row * inner, inner);
    } else {
      for (int64_t j = 0; j < inner; ++j) CopyElements(value, offset, *out, row * inner + j, 1);
    }
  }
}

class FillOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    if (value.NumElements() != 1 || value.dims() != 0) {
      InvalidArgument("value must be a scalar, got shape ", value.shape().DebugString());
    }
    Tensor* out = ctx->allocate_output(0, ShapeFromTensor(ctx->input(0), "Fill"));
    BroadcastInto(value, out, "Fill");
  }
};
FT_REGISTER_KERNEL("Fill", FillOp);

template <int kValue>
class ConstantLikeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, x.shape());
    if (x.dtype() == DT_STRING) {
      if (kValue != 0) InvalidArgument("OnesLike does not support strings");
      return;  // strings are constructed empty
    }
    if (x.dtype() == DT_BOOL) {
      for (bool& b : out->flat<bool>()) b = kValue != 0;
      return;
    }
    DispatchNumericType(x.dtype(), type_string(), [&]<typename T>() {
      for (T& v : out->flat<T>()) v = static_cast<T>(kValue);
    });
  }
};
FT_REGISTER_KERNEL("ZerosLike", ConstantLikeOp<0>);
FT_REGISTER_KERNEL("OnesLike", ConstantLikeOp<1>);

class BroadcastToOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const TensorShape shape = ShapeFromTensor(ctx->input(1), "BroadcastTo");
    if (shape == input.shape()) {
      ctx->set_output(0, input);
      return;
    }
    Tensor* out = ctx->allocate_output(0, shape);
    BroadcastInto(input, out, "BroadcastTo");
  }
};
FT_REGISTER_KERNEL("BroadcastTo", BroadcastToOp);

class BroadcastGradientArgsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& s0 = ctx->input(0);
    const Tensor& s1 = ctx->input(1);
    auto read = [](const Tensor& t) {
      std::vector<int64_t> v;
      for (int64_t i = 0; i < t.NumElements(); ++i) {
        v.push_back(t.dtype() == DT_INT32 ? t.flat<int32_t>()[i] : t.flat<int64_t>()[i]);
      }
      return v;
    };
    const std::vector<int64_t> x = read(s0), y = read(s1);
    const size_t rank = std::max(x.size(), y.size());
    std::vector<int64_t> r0, r1;
    for (size_t i = 0; i < rank; ++i) {
      const int64_t dx = i + x.size() >= rank ? x[i + x.size() - rank] : 1;
      const int64_t dy = i + y.size() >= rank ? y[i + y.size() - rank] : 1;
      if (dx != dy && dx != 1 && dy != 1) {
        InvalidArgument("Incompatible shapes: [", StrJoin(x, ","), "] vs. [", StrJoin(y, ","), "]");
      }
      if (dx == 1) r0.push_back(static_cast<int64_t>(i));
      if (dy == 1) r1.push_back(static_cast<int64_t>(i));
    }
    for (int k = 0; k < 2; ++k) {
      const std::vector<int64_t>& r = k == 0 ? r0 : r1;
      Tensor* out = ctx->allocate_output(k, TensorShape({static_cast<int64_t>(r.size())}));
      for (size_t i = 0; i < r.size(); ++i) {
        if (out->dtype() == DT_INT32) {
          out->flat<int32_t>()[i] = static_cast<int32_t>(r[i]);
        } else {
          out->flat<int64_t>()[i] = r[i];
        }
      }
    }
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("BroadcastGradientArgs", BroadcastGradientArgsOp);

}  // namespace
}  // namespace flowtrain

// ---- StopGradient, Size, Rank, ExpandDims ----

namespace flowtrain {
namespace {

class StopGradientOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("StopGradient", StopGradientOp);

class SizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int64_t n = ctx->input(0).NumElements();
    Tensor* out = ctx->allocate_output(0, TensorShape({}));
    if (out->dtype() == DT_INT32) {
      if (n > INT32_MAX)
        InvalidArgument("Number of elements was larger than representable by 32-bit output type");
      out->scalar<int32_t>() = static_cast<int32_t>(n);
    } else {
      out->scalar<int64_t>() = n;
    }
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("Size", SizeOp);

class RankOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->allocate_output(0, TensorShape({}))->scalar<int32_t>() = ctx->input(0).dims();
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("Rank", RankOp);

class ExpandDimsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& dim_tensor = ctx->input(1);
    if (dim_tensor.NumElements() != 1) {
      InvalidArgument("'dim' must be a tensor with a single value, got shape ",
                      dim_tensor.shape().DebugString());
    }
    int64_t dim = ReadIndex(dim_tensor, 0);
    if (dim < -input.dims() - 1 || dim > input.dims()) {
      InvalidArgument("Tried to expand dim index ", dim, " for tensor with ", input.dims(), " dimensions.");
    }
    if (dim < 0) dim += input.dims() + 1;
    TensorShape shape = input.shape();
    shape.InsertDim(static_cast<int>(dim), 1);
    ctx->set_output(0, input.Reshaped(shape));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("ExpandDims", ExpandDimsOp);

}  // namespace
}  // namespace flowtrain
