// Kernels that choose or place elements: Select (TF1), SelectV2 (broadcasting), OneHot and
// UnsortedSegmentSum.
#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/array_util.h"
#include "flowtrain/kernels/internal/cwise_binary.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

class SelectOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& then_t = ctx->input(1);
    const Tensor& else_t = ctx->input(2);
    if (then_t.shape() != else_t.shape()) {
      InvalidArgument("'then' and 'else' must have the same size.  but received: ",
                      then_t.shape().DebugString(), " vs. ", else_t.shape().DebugString());
    }
    const bool* c = cond.data<bool>();
    if (cond.dims() == 0) {
      ctx->set_output(0, c[0] ? then_t : else_t);
      return;
    }
    int64_t rows, row_size;
    if (cond.dims() == 1 && then_t.dims() > 1) {
      if (cond.dim_size(0) != then_t.dim_size(0)) {
        InvalidArgument("Number of batches of 'then' must match size of 'cond', but saw: ",
                        then_t.dim_size(0), " vs. ", cond.dim_size(0));
      }
      rows = cond.dim_size(0);
      row_size = rows == 0 ? 0 : then_t.NumElements() / rows;
    } else {
      if (cond.shape() != then_t.shape()) {
        InvalidArgument("'cond' and 'then' must have the same size.  but received: ",
                        cond.shape().DebugString(), " vs. ", then_t.shape().DebugString());
      }
      rows = cond.NumElements();
      row_size = 1;
    }
    Tensor* out = ctx->allocate_output(0, then_t.shape());
    DispatchDataType(then_t.dtype(), "Select", [&]<typename T>() {
      const T* a = then_t.data<T>();
      const T* b = else_t.data<T>();
      T* o = out->data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        const T* src = c[r] ? a : b;
        std::copy(src + r * row_size, src + (r + 1) * row_size, o + r * row_size);
      }
    });
  }
};
FT_REGISTER_KERNEL("Select", SelectOp);

class SelectV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& then_t = ctx->input(1);
    const Tensor& else_t = ctx->input(2);
    const TensorShape out_shape = BroadcastOutputShape(
        cond.shape(), BroadcastOutputShape(then_t.shape(), else_t.shape(), name()), name());
    Tensor* out = ctx->allocate_output(0, out_shape);
    const int64_t n = out_shape.num_elements();
    if (n == 0) return;
    const DimVector sc = BroadcastStrides(cond.shape(), out_shape);
    const DimVector sa = BroadcastStrides(then_t.shape(), out_shape);
    const DimVector sb = BroadcastStrides(else_t.shape(), out_shape);
    const int rank = out_shape.dims();
    const bool* c = cond.data<bool>();
    DispatchDataType(then_t.dtype(), "SelectV2", [&]<typename T>() {
      const T* a = then_t.data<T>();
      const T* b = else_t.data<T>();
      T* o = out->data<T>();
      if (cond.shape() == out_shape && then_t.shape() == out_shape && else_t.shape() == out_shape) {
        for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : b[i];
        return;
      }
      std::vector<int64_t> index(rank, 0);
      int64_t oc = 0, oa = 0, ob = 0;
      for (int64_t i = 0; i < n; ++i) {
        o[i] = c[oc] ? a[oa] : b[ob];
        for (int d = rank - 1; d >= 0; --d) {
          oc += sc[d];
          oa += sa[d];
          ob += sb[d];
          if (++index[d] < out_shape.dim_size(d)) break;
          oc -= sc[d] * out_shape.dim_size(d);
          oa -= sa[d] * out_shape.dim_size(d);
          ob -= sb[d] * out_shape.dim_size(d);
          index[d] = 0;
        }
      }
    });
  }
};
FT_REGISTER_KERNEL("SelectV2", SelectV2Op);

class OneHotOp : public OpKernel {
 public:
  explicit OneHotOp(OpKernelConstruction& c) : OpKernel(c), axis_(c.GetAttr<int64_t>("axis")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    const Tensor& depth_tensor = ctx->input(1);
    const Tensor& on = ctx->input(2);
    const Tensor& off = ctx->input(3);
    if (depth_tensor.dims() != 0)
      InvalidArgument("depth must be a scalar, but got: ", depth_tensor.shape().DebugString());
    if (on.dims() != 0) InvalidArgument("on_value must be a scalar, but got: ", on.shape().DebugString());
    if (off.dims() != 0) InvalidArgument("off_value must be a scalar, but got: ", off.shape().DebugString());
    const int64_t depth = depth_tensor.scalar<int32_t>();
    if (depth < 0) InvalidArgument("depth must be non-negative, got: ", depth);
    const int rank = indices.dims();
    if (axis_ < -1 || axis_ > rank) {
      InvalidArgument("Expected axis to be -1 or between [0, ", rank, "].  But received: ", axis_);
    }
    const int axis = axis_ == -1 ? rank : static_cast<int>(axis_);
    DimVector out_dims = indices.shape().dim_sizes();
    out_dims.insert(out_dims.begin() + axis, depth);
    CheckedNumElements(out_dims, "OneHot");
    const TensorShape out_shape(std::move(out_dims));
    Tensor* out = ctx->allocate_output(0, out_shape);
    int64_t prefix = 1;
    for (int d = 0; d < axis; ++d) prefix *= indices.dim_size(d);
    const int64_t suffix = prefix == 0 ? 0 : indices.NumElements() / prefix;
    const std::vector<int64_t> idx = ReadIndices(indices);
    DispatchDataType(on.dtype(), "OneHot", [&]<typename T>() {
      const T on_value = on.scalar<T>();
      const T off_value = off.scalar<T>();
      T* o = out->data<T>();
      for (int64_t p = 0; p < prefix; ++p) {
        for (int64_t d = 0; d < depth; ++d) {
          for (int64_t s = 0; s < suffix; ++s) {
            o[(p * depth + d) * suffix + s] = idx[p * suffix + s] == d ? on_value : off_value;
          }
        }
      }
    });
  }

 private:
  int64_t axis_;
};
FT_REGISTER_KERNEL("OneHot", OneHotOp);

class UnsortedSegmentSumOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids = ctx->input(1);
    const Tensor& num_tensor = ctx->input(2);
    if (num_tensor.dims() != 0)
      InvalidArgument("num_segments should be a scalar, not shape ", num_tensor.shape().DebugString());
    const int64_t num = ReadIndex(num_tensor, 0);
    if (num < 0) InvalidArgument("Input num_segments == ", num, " must not be negative.");
    bool prefix = ids.dims() <= data.dims();
    for (int d = 0; prefix && d < ids.dims(); ++d) prefix = ids.dim_size(d) == data.dim_size(d);
    if (!prefix) {
      InvalidArgument("data.shape = ", data.shape().DebugString(),
                      " does not start with segment_ids.shape = ", ids.shape().DebugString());
    }
    TensorShape out_shape({num});
    for (int d = ids.dims(); d < data.dims(); ++d) out_shape.AddDim(data.dim_size(d));
    Tensor* out = ctx->allocate_output(0, out_shape);
    SetZero(*out);
    const int64_t n = ids.NumElements();
    const int64_t row = n == 0 ? 0 : data.NumElements() / n;
    DispatchNumericType(data.dtype(), "UnsortedSegmentSum", [&]<typename T>() {
      const T* in = data.data<T>();
      T* o = out->data<T>();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t id = ReadIndex(ids, i);
        if (id < 0) continue;  // dropped, as TF
        if (id >= num) InvalidArgument("segment_ids[", i, "] = ", id, " is out of range [0, ", num, ")");
        T* dst = o + id * row;
        const T* src = in + i * row;
        for (int64_t k = 0; k < row; ++k) dst[k] = static_cast<T>(dst[k] + src[k]);
      }
    });
  }
};
FT_REGISTER_KERNEL("UnsortedSegmentSum", UnsortedSegmentSumOp);

}  // namespace
}  // namespace flowtrain
