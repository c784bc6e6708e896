// Stride-1 float32 NHWC convolutions with 5x5 and 3x3 filters by Winograd's minimal filtering
// (Lavin & Gray 2015, "Fast Algorithms for Convolutional Neural Networks"): F(2x2, 5x5)
// computes each 2x2 block of outputs ("tile") from its 6x6 input patch with 36 multiplies per
// input/output channel pair instead of 100 (2.78x fewer than im2col + GEMM), F(4x4, 3x3) each
// 4x4 tile from a 6x6 patch with 36 instead of 144 (4x fewer). Why: im2col + GEMM already runs
// at ~90% of the machine's FMA peak (as libtorch's oneDNN direct convolutions do), so only
// fewer multiplies make a CNN's inner layers faster.
//
// How: the filter is transformed once per call to 36 [in, out] matrices U = G w G^T; blocks
// of tiles sized for L2 have their input patches transformed to 36 [tiles, in] matrices
// V = B^T x B, multiplied position by position (M = V U, a register-tiled kernel of its own:
// the operands are already whole vectors wide, so unlike a GEMM it packs nothing) and
// transformed back (y = A^T M A). The intra-op pool's threads claim runs of blocks. The
// input gradient is the forward convolution of the output gradient with the filter turned
// 180 degrees, in and out channels swapped; the filter gradient runs the adjoint of the
// forward map: per position the [in, out] product V^T (A dY A^T) summed over all tiles, then
// G^T (.) G back to r x r once. The CNN benchmark's second layer (64 x 14x14, 32 -> 64
// channels, 5x5) runs each of the three ops 2.0-2.3x faster than on im2col, 3x3 layers 2-4x
// (bench/conv_bench).
//
// Accuracy: the transforms use the interpolation points 0, +-1, +-2 and infinity; their
// largest coefficients (5 in B, 8 in F(4x4, 3x3)'s A) cost a few bits over a direct float32
// sum: the worst error measured is 2.8e-6 (5x5) and 5.9e-6 (3x3) of the sum of |terms|
// (im2col: ~1e-7; winograd_conv_test.cc bounds it by 1e-5). Filter transforms and the filter
// gradient's last steps run in float64.
//
// When: conv_kernels.cc calls these for float32, stride 1 (dilations other than 1 are
// rejected when building), 3x3 or 5x5 filters, 16 or more channels on both sides
// (WinogradConvApplies); everything else stays on im2col or the direct one-channel kernels.
// TF_ENABLE_WINOGRAD_NONFUSED=0 (or "false") in the environment turns them off, as the same
// variable turns off TF's (GPU) Winograd convolutions.
//
//   WinogradConvDims d{.batch = 64, .in_rows = 14, .in_cols = 14, .in_depth = 32,
//                      .out_rows = 14, .out_cols = 14, .out_depth = 64, .pad_rows = 2, .pad_cols = 2,
//                      .filter_size = 5};
//   WinogradConv2D(ctx->intra_op_pool(), d, input, filter, output);  // "SAME" 5x5
#ifndef FLOWTRAIN_KERNELS_INTERNAL_WINOGRAD_CONV_H_
#define FLOWTRAIN_KERNELS_INTERNAL_WINOGRAD_CONV_H_

#include <cstdint>

#include "flowtrain/core/thread_pool.h"

namespace flowtrain {

// A stride-1 convolution of an NHWC input [batch, in_rows, in_cols, in_depth] with an HWIO
// filter [r, r, in_depth, out_depth] (r = filter_size, 3 or 5) giving [batch, out_rows,
// out_cols, out_depth]: output (oh, ow) reads input rows oh - pad_rows + [0, r) and columns
// ow - pad_cols + [0, r), zero outside the input ("SAME" pads by (r - 1) / 2, "VALID" by 0).
struct WinogradConvDims {
  int64_t batch = 0;
  int64_t in_rows = 0, in_cols = 0, in_depth = 0;
  int64_t out_rows = 0, out_cols = 0, out_depth = 0;
  int64_t pad_rows = 0, pad_cols = 0;
  int64_t filter_size = 5;
};

// Whether a stride-1, undilated float32 convolution with this filter and these channel counts
// is faster through the Winograd kernels (and they are enabled).
bool WinogradConvApplies(int64_t filter_rows, int64_t filter_cols, int64_t in_depth, int64_t out_depth);

// output = the convolution of `input` with `filter` (Conv2D).
void WinogradConv2D(ThreadPool* pool, const WinogradConvDims& d, const float* input, const float* filter,
                    float* output);

// in_backprop [batch, in_rows, in_cols, in_depth] = the gradient of the convolution d with
// respect to its input, given `out_backprop` (Conv2DBackpropInput).
void WinogradConv2DBackpropInput(ThreadPool* pool, const WinogradConvDims& d, const float* filter,
                                 const float* out_backprop, float* in_backprop);

// filter_backprop [r, r, in_depth, out_depth] = the gradient of the convolution d with
// respect to its filter (Conv2DBackpropFilter).
void WinogradConv2DBackpropFilter(ThreadPool* pool, const WinogradConvDims& d, const float* input,
                                  const float* out_backprop, float* filter_backprop);

}  // namespace flowtrain

#endif  // FLOWTRAIN_KERNELS_INTERNAL_WINOGRAD_CONV_H_
