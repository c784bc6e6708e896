// The geometry of a window sliding over NHWC input, shared by the convolution and pooling
// kernels: the input's size, the window, its strides, and the output size and padding they
// give under SAME or VALID padding.
//
//   WindowGeometry g = MakeWindowGeometry(input.shape(), 3, 3, strides, Padding::kSame);
//   Tensor* out = ctx->allocate_output(0, TensorShape({g.batch, g.out_rows, g.out_cols, depth}));
//
// Failures throw InvalidArgument naming the bad shape or attribute.
#ifndef FLOWTRAIN_KERNELS_INTERNAL_WINDOW_GEOMETRY_H_
#define FLOWTRAIN_KERNELS_INTERNAL_WINDOW_GEOMETRY_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/ops/internal/nn_window.h"

namespace flowtrain {

// A window sliding over NHWC input (a convolution's filter, a pooling window): the input's
// geometry, the window, its strides, and the output and padding they give.
struct WindowGeometry {
  int64_t batch, in_rows, in_cols, in_depth;
  int64_t window_rows, window_cols, stride_rows, stride_cols;
  int64_t out_rows, out_cols, pad_rows, pad_cols;
};

// The geometry of `input` (NHWC) under a window_rows x window_cols window moving by
// strides[1], strides[2].
WindowGeometry MakeWindowGeometry(const TensorShape& input, int64_t window_rows, int64_t window_cols,
                                  const std::vector<int64_t>& strides, Padding padding);

// A shape given as a 1-D int32/int64 tensor of 4 elements (input_sizes, filter_sizes, ...).
TensorShape ShapeFromTensor(const Tensor& t, std::string_view what);

}  // namespace flowtrain

#endif  // FLOWTRAIN_KERNELS_INTERNAL_WINDOW_GEOMETRY_H_
