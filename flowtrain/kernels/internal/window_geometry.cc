#include "flowtrain/kernels/internal/window_geometry.h"

#include "flowtrain/core/error.h"

namespace flowtrain {

WindowGeometry MakeWindowGeometry(const TensorShape& input, int64_t window_rows, int64_t window_cols,
                                  const std::vector<int64_t>& strides, Padding padding) {
  if (input.dims() != 4) InvalidArgument("input must be 4-dimensional", input.DebugString());
  WindowGeometry g;
  g.batch = input.dim_size(0);
  g.in_rows = input.dim_size(1);
  g.in_cols = input.dim_size(2);
  g.in_depth = input.dim_size(3);
  g.window_rows = window_rows;
  g.window_cols = window_cols;
  g.stride_rows = strides[1];
  g.stride_cols = strides[2];
  const WindowDim rows = ComputeWindowDim(g.in_rows, g.window_rows, g.stride_rows, padding);
  const WindowDim cols = ComputeWindowDim(g.in_cols, g.window_cols, g.stride_cols, padding);
  g.out_rows = rows.output;
  g.out_cols = cols.output;
  g.pad_rows = rows.pad_before;
  g.pad_cols = cols.pad_before;
  return g;
}

TensorShape ShapeFromTensor(const Tensor& t, std::string_view what) {
  if (t.dims() != 1 || t.NumElements() != 4) {
    InvalidArgument(what, " must be a 1-D tensor of 4 elements, got shape ", t.shape().DebugString());
  }
  DimVector dims(4);
  for (int i = 0; i < 4; ++i) {
    dims[i] = t.dtype() == DT_INT32 ? t.flat<int32_t>()[i] : t.flat<int64_t>()[i];
    if (dims[i] < 0) InvalidArgument(what, " has a negative dimension: ", dims[i]);
  }
  return TensorShape(std::move(dims));
}

}  // namespace flowtrain
