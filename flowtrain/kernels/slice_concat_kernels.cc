// Kernels of the ops that cut tensors apart or join them: Slice, StridedSlice,
// StridedSliceGrad, ConcatV2, Split, SplitV and Unpack. They move elements without arithmetic:
// contiguous runs are copied with memcpy, strided ones element by element.
#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/array_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/ops/strided_slice_spec.h"

namespace flowtrain {
namespace {

// Copies between a strided window of `window` — begin[d] + i * stride[d] for i < size[d] in
// each dimension, row-major — and the same number of elements of `dense`, in order.
// `to_window` copies dense -> window (a gradient scatter), else window -> dense (a slice).
// Tensor data is shared, so `const` refers to the handles, not the buffers.
void StridedCopy(const Tensor& window, const Tensor& dense, const std::vector<int64_t>& begin,
                 const std::vector<int64_t>& stride, const std::vector<int64_t>& size, bool to_window) {
  const int rank = static_cast<int>(size.size());
  int64_t total = 1;
  for (int64_t s : size) total *= s;
  if (total == 0) return;
  const DimVector strides = RowMajorStrides(window.shape());
  int64_t offset = 0;
  for (int d = 0; d < rank; ++d) offset += begin[d] * strides[d];
  const int64_t run = rank == 0 ? 1 : size[rank - 1];
  const int64_t step = rank == 0 ? 1 : stride[rank - 1] * strides[rank - 1];
  std::vector<int64_t> index(std::max(rank - 1, 0), 0);
  DispatchDataType(dense.dtype(), "strided copy", [&]<typename T>() {
    T* w = window.data<T>();
    T* x = dense.data<T>();
    for (int64_t pos = 0; pos < total; pos += run) {
      if (to_window) {
        for (int64_t k = 0; k < run; ++k) w[offset + k * step] = x[pos + k];
      } else if (step == 1 && std::is_trivially_copyable_v<T>) {
        std::copy(w + offset, w + offset + run, x + pos);
      } else {
        for (int64_t k = 0; k < run; ++k) x[pos + k] = w[offset + k * step];
      }
      // Odometer over the outer dimensions.
      for (int d = rank - 2; d >= 0; --d) {
        offset += stride[d] * strides[d];
        if (++index[d] < size[d]) break;
        offset -= stride[d] * strides[d] * size[d];
        index[d] = 0;
      }
    }
  });
}

class SliceOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const std::vector<int64_t> begin = ReadIndices(ctx->input(1));
    std::vector<int64_t> size = ReadIndices(ctx->input(2));
    if (ctx->input(1).dims() != 1 || begin.size() != size.size() ||
        static_cast<int>(begin.size()) != input.dims()) {
      InvalidArgument("Expected begin and size arguments to be 1-D tensors of size ", input.dims(),
                      ", but got shapes ", ctx->input(1).shape().DebugString(), " and ",
                      ctx->input(2).shape().DebugString(), " instead.");
    }
    bool identity = true;
    DimVector out_dims;
    for (int d = 0; d < input.dims(); ++d) {
      const int64_t dim = input.dim_size(d);
      if (begin[d] < 0 || begin[d] > dim) {
        InvalidArgument("Expected begin[", d, "] in [0, ", dim, "], but got ", begin[d]);
      }
      if (size[d] == -1) size[d] = dim - begin[d];
      if (size[d] < 0 || begin[d] + size[d] > dim) {
        InvalidArgument("Expected size[", d, "] in [0, ", dim - begin[d], "], but got ", size[d]);
      }
      identity = identity && begin[d] == 0 && size[d] == dim;
      out_dims.push_back(size[d]);
    }
    if (identity) {
      ctx->set_output(0, input);
      return;
    }
    Tensor* out = ctx->allocate_output(0, TensorShape(out_dims));
    StridedCopy(input, *out, begin, std::vector<int64_t>(input.dims(), 1), size, /*to_window=*/false);
  }
};
FT_REGISTER_KERNEL("Slice", SliceOp);

StridedSliceMasks MasksOf(OpKernelConstruction& c) {
  return {c.GetAttr<int64_t>("begin_mask"), c.GetAttr<int64_t>("end_mask"),
          c.GetAttr<int64_t>("ellipsis_mask"), c.GetAttr<int64_t>("new_axis_mask"),
          c.GetAttr<int64_t>("shrink_axis_mask")};
}

void CheckSpecVectors(OpKernelContext* ctx, int first) {
  for (int i = first; i < first + 3; ++i) {
    if (ctx->input(i).dims() != 1) {
      InvalidArgument("Expected begin, end, and strides to be 1D equal size tensors, but got shapes ",
                      ctx->input(first).shape().DebugString(), ", ",
                      ctx->input(first + 1).shape().DebugString(), ", and ",
                      ctx->input(first + 2).shape().DebugString(), " instead.");
    }
  }
}

class StridedSliceOp : public OpKernel {
 public:
  explicit StridedSliceOp(OpKernelConstruction& c) : OpKernel(c), masks_(MasksOf(c)) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    CheckSpecVectors(ctx, 1);
    const StridedSliceSpec spec =
        ResolveStridedSlice(input.shape(), ReadIndices(ctx->input(1)), ReadIndices(ctx->input(2)),
                            ReadIndices(ctx->input(3)), masks_);
    const TensorShape out_shape = spec.final_shape.AsTensorShape();
    if (spec.is_identity) {
      ctx->set_output(0, input.Reshaped(out_shape));
      return;
    }
    Tensor* out = ctx->allocate_output(0, out_shape);
    StridedCopy(input, *out, spec.begin, spec.stride, spec.size, /*to_window=*/false);
  }

 private:
  StridedSliceMasks masks_;
};
FT_REGISTER_KERNEL("StridedSlice", StridedSliceOp);

class StridedSliceGradOp : public OpKernel {
 public:
  explicit StridedSliceGradOp(OpKernelConstruction& c) : OpKernel(c), masks_(MasksOf(c)) {}
  void Compute(OpKernelContext* ctx) override {
    DimVector dims;
    for (int64_t d : ReadIndices(ctx->input(0))) {
      if (d < 0) InvalidArgument("StridedSliceGrad: shape dimensions must be >= 0, got ", d);
      dims.push_back(d);
    }
    const TensorShape shape(dims);
    const Tensor& dy = ctx->input(4);
    CheckSpecVectors(ctx, 1);
    const StridedSliceSpec spec = ResolveStridedSlice(
        shape, ReadIndices(ctx->input(1)), ReadIndices(ctx->input(2)), ReadIndices(ctx->input(3)), masks_);
    if (!spec.final_shape.IsIdenticalTo(dy.shape())) {
      InvalidArgument("shape of dy was ", dy.shape().DebugString(), " instead of ",
                      spec.final_shape.DebugString());
    }
    if (spec.is_identity) {
      ctx->set_output(0, dy.Reshaped(shape));
      return;
    }
    Tensor* out = ctx->allocate_output(0, shape);
    SetZero(*out);
    StridedCopy(*out, dy, spec.begin, spec.stride, spec.size, /*to_window=*/true);
  }

 private:
  StridedSliceMasks masks_;
};
FT_REGISTER_KERNEL("StridedSliceGrad", StridedSliceGradOp);

int64_t CanonicalAxis(int64_t axis, int rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    InvalidArgument(what, " : Expected axis in the range [", -rank, ", ", rank, "), but got ", axis);
  }
  return axis < 0 ? axis + rank : axis;
}

// [outer, dim, inner] view of `shape` around `axis`.
void AxisView(const TensorShape& shape, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int d = 0; d < axis; ++d) *outer *= shape.dim_size(d);
  for (int d = static_cast<int>(axis) + 1; d < shape.dims(); ++d) *inner *= shape.dim_size(d);
}

class ConcatV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    const Tensor& axis_tensor = ctx->input(n);
    if (axis_tensor.NumElements() != 1) {
      InvalidArgument("Concat dim tensor should be a scalar integer, but got shape ",
                      axis_tensor.shape().DebugString());
    }
    const TensorShape& first = ctx->input(0).shape();
    if (first.dims() == 0) InvalidArgument("Can't concatenate scalars (use tf.stack instead)");
    const int64_t axis = CanonicalAxis(ReadIndex(axis_tensor, 0), first.dims(), "ConcatOp");
    TensorShape out_shape = first;
    int64_t total = 0;
    for (int i = 0; i < n; ++i) {
      const TensorShape& s = ctx->input(i).shape();
      bool match = s.dims() == first.dims();
      for (int d = 0; match && d < s.dims(); ++d) match = d == axis || s.dim_size(d) == first.dim_size(d);
      if (!match) {
        InvalidArgument("ConcatOp : Dimensions of inputs should match: shape[0] = ", first.DebugString(),
                        " vs. shape[", i, "] = ", s.DebugString());
      }
      // Zero-element inputs can have any size along the axis: [2^62, 0] four times wraps.
      total = CheckedAddSizes(total, s.dim_size(static_cast<int>(axis)), "ConcatOp",
                              StrCat("size along axis ", axis, " with values[", i, "]"));
    }
    out_shape.set_dim(static_cast<int>(axis), total);
    Tensor* out = ctx->allocate_output(0, out_shape);
    int64_t outer, out_inner;
    AxisView(out_shape, axis, &outer, &out_inner);
    const int64_t out_row = total * out_inner;
    int64_t column = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& in = ctx->input(i);
      const int64_t row = in.dim_size(static_cast<int>(axis)) * out_inner;
      for (int64_t o = 0; o < outer; ++o) CopyElements(in, o * row, *out, o * out_row + column, row);
      column += row;
    }
  }
};
FT_REGISTER_KERNEL("ConcatV2", ConcatV2Op);

// Writes consecutive pieces of `value` along `axis`, of the given sizes, to outputs 0..n-1.
void SplitAlong(OpKernelContext* ctx, const Tensor& value, int64_t axis, const std::vector<int64_t>& sizes) {
  int64_t outer, inner;
  AxisView(value.shape(), axis, &outer, &inner);
  const int64_t in_row = value.dim_size(static_cast<int>(axis)) * inner;
  int64_t column = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    TensorShape shape = value.shape();
    shape.set_dim(static_cast<int>(axis), sizes[i]);
    if (sizes.size() == 1) {
      ctx->set_output(0, value);
      return;
    }
    Tensor* out = ctx->allocate_output(static_cast<int>(i), shape);
    const int64_t row = sizes[i] * inner;
    for (int64_t o = 0; o < outer; ++o) CopyElements(value, o * in_row + column, *out, o * row, row);
    column += row;
  }
}

class SplitOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    if (ctx->input(0).NumElements() != 1) InvalidArgument("split_dim must be a scalar");
    if (value.dims() == 0) InvalidArgument("Split: cannot split a scalar");
    const int64_t axis = CanonicalAxis(ReadIndex(ctx->input(0), 0), value.dims(), "Split");
    const int64_t n = ctx->num_outputs();
    const int64_t dim = value.dim_size(static_cast<int>(axis));
    if (dim % n != 0) {
      InvalidArgument("Number of ways to split should evenly divide the split dimension, but got split_dim ",
                      axis, " (size = ", dim, ") and num_split ", n);
    }
    SplitAlong(ctx, value, axis, std::vector<int64_t>(n, dim / n));
  }
};
FT_REGISTER_KERNEL("Split", SplitOp);

class SplitVOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    std::vector<int64_t> sizes = ReadIndices(ctx->input(1));
    if (ctx->input(2).NumElements() != 1) InvalidArgument("split_dim must be a scalar");
    if (value.dims() == 0) InvalidArgument("SplitV: cannot split a scalar");
    const int64_t axis = CanonicalAxis(ReadIndex(ctx->input(2), 0), value.dims(), "SplitV");
    if (static_cast<int>(sizes.size()) != ctx->num_outputs()) {
      InvalidArgument("Length of size_splits should be equal to num_split, but got ", sizes.size(), " and ",
                      ctx->num_outputs());
    }
    const int64_t dim = value.dim_size(static_cast<int>(axis));
    int unknown = -1;
    int64_t known = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1) {
        if (unknown >= 0) InvalidArgument("There can only be one -1 in the input.");
        unknown = static_cast<int>(i);
      } else if (sizes[i] < 0) {
        InvalidArgument("size_splits[", i, "] must be >= -1, got ", sizes[i]);
      } else {
        known += sizes[i];
      }
    }
    if ((unknown < 0 && known != dim) || (unknown >= 0 && known > dim)) {
      InvalidArgument(
          "Determined shape must either match input shape along split_dim exactly if fully "
          "specified, or be less than the size of the input along split_dim if not fully "
          "specified.  Got: ",
          known);
    }
    if (unknown >= 0) sizes[unknown] = dim - known;
    SplitAlong(ctx, value, axis, sizes);
  }
};
FT_REGISTER_KERNEL("SplitV", SplitVOp);

class UnpackOp : public OpKernel {
 public:
  explicit UnpackOp(OpKernelConstruction& c) : OpKernel(c), axis_(c.GetAttr<int64_t>("axis")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    if (value.dims() == 0) InvalidArgument("Unpack: cannot unpack a scalar");
    const int64_t axis = CanonicalAxis(axis_, value.dims(), "Unpack");
    const int64_t n = ctx->num_outputs();
    if (value.dim_size(static_cast<int>(axis)) != n) {
      InvalidArgument("Input shape axis ", axis, " must equal ", n, ", got shape ",
                      value.shape().DebugString());
    }
    TensorShape shape = value.shape();
    shape.RemoveDim(static_cast<int>(axis));
    int64_t outer, inner;
    AxisView(value.shape(), axis, &outer, &inner);
    for (int64_t i = 0; i < n; ++i) {
      Tensor* out = ctx->allocate_output(static_cast<int>(i), shape);
      for (int64_t o = 0; o < outer; ++o) CopyElements(value, (o * n + i) * inner, *out, o * inner, inner);
    }
  }

 private:
  int64_t axis_;
};
FT_REGISTER_KERNEL("Unpack", UnpackOp);

}  // namespace
}  // namespace flowtrain
