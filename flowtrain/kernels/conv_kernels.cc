// Kernels of the 2-D convolution ops (NHWC, filters HWIO), float32 and float64.
//
// Convolutions are im2col + matrix products (gemm.h): a block of output positions gathers its
// input patches into a [positions, rows*cols*in_depth] scratch matrix (the filter is already
// the matching [rows*cols*in_depth, out_depth] matrix), so each block is one GEMM. Blocks are
// sized to stay in cache and claimed one at a time by the intra-op pool's threads, each with
// its own scratch.
// A 1x1 stride-1 convolution skips im2col: the input is already the patch matrix. One-channel
// convolutions with unit strides (first layers) run on direct AVX-512 kernels instead, where
// the CPU has AVX-512 (cpu_features.h).
// Stride-1 float32 5x5 and 3x3 convolutions with 16 or more channels on both sides (a CNN's
// inner layers) run on Winograd's F(2x2, 5x5) and F(4x4, 3x3) (winograd_conv.h, on AVX-512
// CPUs): im2col + GEMM
// already runs near the machine's multiply-add peak, so only fewer multiplies make them
// faster; Winograd needs 2.78x (5x5) and 4x (3x3) fewer, at a float32 error of at most ~6e-6
// relative to the sum of |terms| (im2col: ~1e-7). All three ops use it: the input gradient is
// the forward convolution of the output gradient with the turned filter, the filter gradient
// the adjoint of the forward's transforms. TF_ENABLE_WINOGRAD_NONFUSED=0 turns it off.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "flowtrain/core/internal/cpu_features.h"
#if FLOWTRAIN_HAS_AVX512_CODE
#include <immintrin.h>
#endif

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/float_kernel_util.h"
#include "flowtrain/kernels/internal/gemm.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/kernels/internal/winograd_conv.h"
#include "flowtrain/framework/work_sharder.h"
#include "flowtrain/kernels/internal/window_geometry.h"
#include "flowtrain/ops/internal/nn_window.h"

namespace flowtrain {
namespace {

// Scratch elements per im2col block (512 KiB of floats): big enough for an efficient GEMM,
// small enough to stay in L2.
constexpr int64_t kBlockElements = 1 << 17;

// out[0, size) = the sum of what fn(shard, first, last, acc) writes (not adds) to acc for the
// runs of ClaimRuns (RunsFor's count): the first run writes to out, the others to partials of
// their own, added in order at the end, so the sum does not depend on which thread ran which.
template <typename T, typename Fn>
void SumOverRuns(OpKernelContext* ctx, int shards, int64_t units, T* out, int64_t size, const Fn& fn) {
  const int64_t runs = RunsFor(shards, units);
  Tensor partials(DataTypeToEnum<T>::value, TensorShape({runs - 1, size}));
  ClaimRuns(ctx->intra_op_pool(), shards, units, runs, [&](int s, int64_t first, int64_t last, int64_t run) {
    fn(s, first, last, run == 0 ? out : partials.data<T>() + (run - 1) * size);
  });
  ArrayMap<T> total(out, size);
  for (int64_t run = 1; run < runs; ++run) total += ArrayMap<T>(partials.data<T>() + (run - 1) * size, size);
}

// ---- Convolution ----

// A convolution: the window is the filter, `out_depth` its output channels.
struct ConvDims : WindowGeometry {
  int64_t out_depth;

  int64_t patch_size() const { return window_rows * window_cols * in_depth; }
  int64_t positions() const { return batch * out_rows * out_cols; }
  int64_t positions_per_image() const { return out_rows * out_cols; }
  TensorShape input_shape() const { return TensorShape({batch, in_rows, in_cols, in_depth}); }
  TensorShape output_shape() const { return TensorShape({batch, out_rows, out_cols, out_depth}); }
  // The input is its own patch matrix: a 1x1 filter moving one pixel at a time.
  bool pointwise() const {
    return window_rows == 1 && window_cols == 1 && stride_rows == 1 && stride_cols == 1;
  }
  // Output positions per im2col block: a multiple of 8, the GEMM's row panel, so that only the
  // last block has a partial panel.
  int64_t block_positions() const {
    const int64_t by_cache =
        std::max<int64_t>(kBlockElements / std::max<int64_t>(patch_size(), 1) / 8 * 8, 8);
    return std::clamp<int64_t>(by_cache, 1, std::max<int64_t>(positions(), 1));
  }
};

ConvDims MakeConvDims(const TensorShape& input, const TensorShape& filter,
                      const std::vector<int64_t>& strides, Padding padding) {
  if (input.dims() != 4) InvalidArgument("input must be 4-dimensional", input.DebugString());
  if (filter.dims() != 4) InvalidArgument("filter must be 4-dimensional: ", filter.DebugString());
  if (input.dim_size(3) != filter.dim_size(2)) {
    InvalidArgument("input and filter must have the same depth: ", input.dim_size(3), " vs ",
                    filter.dim_size(2));
  }
  ConvDims d;
  static_cast<WindowGeometry&>(d) =
      MakeWindowGeometry(input, filter.dim_size(0), filter.dim_size(1), strides, padding);
  d.out_depth = filter.dim_size(3);
  return d;
}

// Whether d runs on the Winograd kernels (float32 only; the caller checks the type).
bool UseWinograd(const ConvDims& d) {
  return d.stride_rows == 1 && d.stride_cols == 1 &&
         WinogradConvApplies(d.window_rows, d.window_cols, d.in_depth, d.out_depth);
}

WinogradConvDims ToWinogradDims(const ConvDims& d) {
  return {.batch = d.batch,
          .in_rows = d.in_rows,
          .in_cols = d.in_cols,
          .in_depth = d.in_depth,
          .out_rows = d.out_rows,
          .out_cols = d.out_cols,
          .out_depth = d.out_depth,
          .pad_rows = d.pad_rows,
          .pad_cols = d.pad_cols,
          .filter_size = d.window_rows};
}

// For each output position p in [begin, end): calls fn(p - begin, at, input_offset, count)
// for each run of `count` consecutive entries of p's patch, starting at entry `at`, that come
// from the input at `input_offset`, and fn(p - begin, at, -1, count) for runs that fall into
// the padding. Positions are decoded incrementally (divisions per position cost as much as
// the copies of a one-channel convolution).
template <typename Fn>
void ForEachPatchRun(const ConvDims& d, int64_t begin, int64_t end, const Fn& fn) {
  int64_t ow = begin % d.out_cols;
  int64_t oh = begin / d.out_cols % d.out_rows;
  int64_t n = begin / d.out_cols / d.out_rows;
  const int64_t row_len = d.window_cols * d.in_depth;
  for (int64_t p = 0; p < end - begin; ++p) {
    const int64_t ih0 = oh * d.stride_rows - d.pad_rows;
    const int64_t iw0 = ow * d.stride_cols - d.pad_cols;
    // Filter columns that land inside the input, the same for every filter row.
    const int64_t fc_begin = std::max<int64_t>(0, -iw0);
    const int64_t fc_end = std::min<int64_t>(d.window_cols, d.in_cols - iw0);
    for (int64_t fr = 0; fr < d.window_rows; ++fr) {
      const int64_t ih = ih0 + fr;
      const int64_t at = fr * row_len;
      if (ih < 0 || ih >= d.in_rows || fc_begin >= fc_end) {
        fn(p, at, int64_t{-1}, row_len);
        continue;
      }
      if (fc_begin > 0) fn(p, at, int64_t{-1}, fc_begin * d.in_depth);
      const int64_t offset = ((n * d.in_rows + ih) * d.in_cols + iw0 + fc_begin) * d.in_depth;
      fn(p, at + fc_begin * d.in_depth, offset, (fc_end - fc_begin) * d.in_depth);
      if (fc_end < d.window_cols)
        fn(p, at + fc_end * d.in_depth, int64_t{-1}, (d.window_cols - fc_end) * d.in_depth);
    }
    if (++ow == d.out_cols) {
      ow = 0;
      if (++oh == d.out_rows) {
        oh = 0;
        ++n;
      }
    }
  }
}

// dst[0, count) = src[0, count), a SIMD packet at a time: runs are often a few elements (one
// input channel), too short for a memcpy call to pay. With AVX-512 the tail is one masked
// packet (a one-channel 5x5 filter's runs are 5 floats).
template <typename T>
inline void CopyRun(const T* src, T* dst, int64_t count) {
  namespace ei = Eigen::internal;
  using Packet = typename ei::packet_traits<T>::type;
  constexpr int64_t kLanes = ei::packet_traits<T>::size;
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) ei::pstoreu(dst + i, ei::ploadu<Packet>(src + i));
#if defined(EIGEN_VECTORIZE_AVX512)
  if constexpr (std::is_same_v<T, float>) {
    if (i < count) {
      const auto mask = static_cast<uint16_t>((1u << (count - i)) - 1);
      ei::pstoreu(dst + i, ei::ploadu<Packet>(src + i, mask), mask);
    }
    return;
  }
#endif
  for (; i < count; ++i) dst[i] = src[i];
}

// patches[p - begin] = the input patch of output position p, for p in [begin, end).
template <typename T>
void Im2Col(const ConvDims& d, const T* input, int64_t begin, int64_t end, T* patches) {
  const int64_t k = d.patch_size();
  ForEachPatchRun(d, begin, end, [&](int64_t row, int64_t at, int64_t offset, int64_t count) {
    T* dst = patches + row * k + at;
    if (offset < 0) {
      std::fill_n(dst, count, T(0));
    } else {
      CopyRun(input + offset, dst, count);
    }
  });
}

// The adjoint of Im2Col: adds each patch back into the input positions it was taken from,
// and zeroes the patches on the way (while they are in cache), so the next block's product
// can accumulate into them instead of needing a separate pass to clear them.
template <typename T>
void Col2ImAddAndClear(const ConvDims& d, T* patches, int64_t begin, int64_t end, T* input) {
  const int64_t k = d.patch_size();
  ForEachPatchRun(d, begin, end, [&](int64_t row, int64_t at, int64_t offset, int64_t count) {
    ArrayMap<T> run(patches + row * k + at, count);
    if (offset >= 0) ArrayMap<T>(input + offset, count) += run;
    run.setZero();
  });
}

#if FLOWTRAIN_HAS_AVX512_CODE
// One-channel convolutions with unit strides (an image model's first layer) computed directly
// instead of through im2col: their patches are a few floats per filter row, so gathering them
// costs as much as the product. Both kernels walk output rows (row = image * out_rows + oh)
// with the window's input rows at hand, and skip taps over padded rows. They need AVX-512
// (other CPUs take im2col) and out_depth % 16 == 0: 32 (or 16) output channels are two (one)
// AVX-512 vectors.
bool DirectSingleChannel(const ConvDims& d) {
  return d.in_depth == 1 && d.stride_rows == 1 && d.stride_cols == 1 && d.out_depth % 16 == 0 &&
         CpuHasAvx512();
}

FLOWTRAIN_BEGIN_AVX512_CODE
namespace avx512 {

// The input rows under the window of one output row, zero-padded on both sides: tap (fr, fc)
// of output column ow reads at(fr)[ow + fc]; has(fr) is false for rows in the padding.
class WindowRows {
 public:
  static constexpr int64_t kPixels = 8;  // output columns a kernel computes at a time

  explicit WindowRows(const ConvDims& d)
      : d_(d),
        width_((d.out_cols + kPixels - 1) / kPixels * kPixels + d.window_cols),
        padded_(d.window_rows * width_, 0.0f),
        inside_(d.window_rows, 0) {}

  void Load(const float* input, int64_t row) {
    const int64_t n = row / d_.out_rows, oh = row % d_.out_rows;
    for (int64_t fr = 0; fr < d_.window_rows; ++fr) {
      // Input column x sits at x + pad_cols; the rest stays zero (cleared on the way).
      if (inside_[fr]) std::fill_n(padded_.data() + fr * width_, width_, 0.0f);
      const int64_t ih = oh - d_.pad_rows + fr;
      inside_[fr] = ih >= 0 && ih < d_.in_rows;
      if (!inside_[fr]) continue;
      const float* src = input + (n * d_.in_rows + ih) * d_.in_cols;
      std::copy(src, src + std::min(d_.in_cols, width_ - d_.pad_cols),
                padded_.data() + fr * width_ + d_.pad_cols);
    }
  }
  bool has(int64_t fr) const { return inside_[fr] != 0; }
  const float* at(int64_t fr) const { return padded_.data() + fr * width_; }

 private:
  const ConvDims& d_;
  const int64_t width_;
  std::vector<float> padded_;
  std::vector<char> inside_;
};

// Conv2D for output rows [first_row, last_row): 8 neighbouring outputs of a row and 32 output
// channels at a time stay in registers while every tap adds its input pixel (broadcast) times
// the tap's filter row.
void SingleChannelConv(const ConvDims& d, const float* input, const float* filter, float* out,
                       int64_t first_row, int64_t last_row) {
  constexpr int64_t kPixels = WindowRows::kPixels;
  WindowRows window(d);
  for (int64_t row = first_row; row < last_row; ++row) {
    window.Load(input, row);
    float* out_row = out + row * d.out_cols * d.out_depth;
    for (int64_t ow0 = 0; ow0 < d.out_cols; ow0 += kPixels) {
      const int64_t pixels = std::min(kPixels, d.out_cols - ow0);
      for (int64_t c0 = 0; c0 < d.out_depth; c0 += 32) {
        const bool two = d.out_depth - c0 >= 32;
        // Loops over the accumulators are fully unrolled, so that they stay in registers.
        __m512 acc[kPixels][2];
#pragma GCC unroll 8
        for (int64_t i = 0; i < kPixels; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
        for (int64_t fr = 0; fr < d.window_rows; ++fr) {
          if (!window.has(fr)) continue;
          const float* pixel = window.at(fr) + ow0;
          for (int64_t fc = 0; fc < d.window_cols; ++fc) {
            const float* w = filter + (fr * d.window_cols + fc) * d.out_depth + c0;
            const __m512 w0 = _mm512_loadu_ps(w), w1 = two ? _mm512_loadu_ps(w + 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
            for (int64_t i = 0; i < kPixels; ++i) {
              const __m512 x = _mm512_set1_ps(pixel[i + fc]);
              acc[i][0] = _mm512_fmadd_ps(x, w0, acc[i][0]);
              acc[i][1] = _mm512_fmadd_ps(x, w1, acc[i][1]);
            }
          }
        }
#pragma GCC unroll 8
        for (int64_t i = 0; i < kPixels; ++i) {
          if (i >= pixels) break;
          float* o = out_row + (ow0 + i) * d.out_depth + c0;
          _mm512_storeu_ps(o, acc[i][0]);
          if (two) _mm512_storeu_ps(o + 16, acc[i][1]);
        }
      }
    }
  }
}

// Conv2DBackpropFilter for output rows [first_row, last_row): dw (the [rows, cols, 1,
// out_depth] filter gradient) = the sum over their outputs of the tap's input pixel times the
// output gradient. For each output row and filter row, one filter row of 32 output channels
// (up to 16 vectors) is accumulated in registers along the row.
void SingleChannelFilterGrad(const ConvDims& d, const float* input, const float* grad, float* dw,
                             int64_t first_row, int64_t last_row) {
  constexpr int64_t kMaxCols = 8;  // filter columns held in registers
  std::fill_n(dw, d.window_rows * d.window_cols * d.out_depth, 0.0f);
  WindowRows window(d);
  for (int64_t row = first_row; row < last_row; ++row) {
    window.Load(input, row);
    const float* grad_row = grad + row * d.out_cols * d.out_depth;
    for (int64_t fr = 0; fr < d.window_rows; ++fr) {
      if (!window.has(fr)) continue;
      const float* pixel = window.at(fr);
      for (int64_t c0 = 0; c0 < d.out_depth; c0 += 32) {
        const bool two = d.out_depth - c0 >= 32;
        for (int64_t fc0 = 0; fc0 < d.window_cols; fc0 += kMaxCols) {
          const int64_t cols = std::min(kMaxCols, d.window_cols - fc0);
          float* w = dw + (fr * d.window_cols + fc0) * d.out_depth + c0;
          __m512 acc[kMaxCols][2];
#pragma GCC unroll 8
          for (int64_t j = 0; j < kMaxCols; ++j) {
            acc[j][0] = acc[j][1] = _mm512_setzero_ps();
          }
          for (int64_t ow = 0; ow < d.out_cols; ++ow) {
            const float* g = grad_row + ow * d.out_depth + c0;
            const __m512 g0 = _mm512_loadu_ps(g), g1 = two ? _mm512_loadu_ps(g + 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
            for (int64_t j = 0; j < kMaxCols; ++j) {
              if (j >= cols) break;
              const __m512 x = _mm512_set1_ps(pixel[ow + fc0 + j]);
              acc[j][0] = _mm512_fmadd_ps(x, g0, acc[j][0]);
              acc[j][1] = _mm512_fmadd_ps(x, g1, acc[j][1]);
            }
          }
#pragma GCC unroll 8
          for (int64_t j = 0; j < kMaxCols; ++j) {
            if (j >= cols) break;
            float* o = w + j * d.out_depth;
            _mm512_storeu_ps(o, _mm512_add_ps(_mm512_loadu_ps(o), acc[j][0]));
            if (two) _mm512_storeu_ps(o + 16, _mm512_add_ps(_mm512_loadu_ps(o + 16), acc[j][1]));
          }
        }
      }
    }
  }
}

}  // namespace avx512
FLOWTRAIN_END_AVX512_CODE
#endif  // FLOWTRAIN_HAS_AVX512_CODE

// The attrs every convolution kernel reads.
class ConvKernelBase : public OpKernel {
 public:
  explicit ConvKernelBase(OpKernelConstruction& c)
      : OpKernel(c),
        strides_(c.GetAttr<std::vector<int64_t>>("strides")),
        padding_(ParsePadding(c.GetAttr<std::string>("padding"))) {
    CheckWindowAttr(strides_, "strides");
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 protected:
  void CheckOutBackprop(const ConvDims& d, const Tensor& out_backprop) const {
    if (out_backprop.shape() != d.output_shape()) {
      InvalidArgument(type_string(), ": out_backprop has shape ", out_backprop.shape().DebugString(),
                      " but the convolution's output has shape ", d.output_shape().DebugString());
    }
  }

  std::vector<int64_t> strides_;
  Padding padding_;
};

class Conv2DOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    const ConvDims d = MakeConvDims(input.shape(), filter.shape(), strides_, padding_);
    Tensor* out = ctx->allocate_output(0, d.output_shape());
    DispatchFloat(input.dtype(), *this, [&]<typename T>() { Run<T>(ctx, d, input, filter, out); });
  }

 private:
  template <typename T>
  void Run(OpKernelContext* ctx, const ConvDims& d, const Tensor& input, const Tensor& filter, Tensor* out) {
    const int64_t k = d.patch_size();
    const int64_t positions = d.positions();
    T* po = out->data<T>();
    if (positions == 0 || d.out_depth == 0) return;
    // Output rows [begin, end) = their patches (`patches`, one row each) * the filter matrix.
    auto product = [&](const T* patches, int64_t begin, int64_t end) {
      return GemmArgs<T>{.m = end - begin,
                         .n = d.out_depth,
                         .k = k,
                         .a = patches,
                         .lda = k,
                         .b = filter.data<T>(),
                         .ldb = d.out_depth,
                         .c = po + begin * d.out_depth,
                         .ldc = d.out_depth};
    };
    if constexpr (std::is_same_v<T, float>) {
      if (UseWinograd(d)) {
        WinogradConv2D(ctx->intra_op_pool(), ToWinogradDims(d), input.data<float>(), filter.data<float>(),
                       po);
        return;
      }
    }
    if (d.pointwise()) {
      Gemm<T>(ctx, product(input.data<T>(), 0, positions));
      return;
    }
#if FLOWTRAIN_HAS_AVX512_CODE
    if constexpr (std::is_same_v<T, float>) {
      if (DirectSingleChannel(d)) {
        const int shards = NumShards(ctx, positions * k * d.out_depth, 1 << 18);
        const int64_t rows = d.batch * d.out_rows;
        ClaimRuns(ctx->intra_op_pool(), shards, rows, RunsFor(shards, rows),
                  [&](int, int64_t first, int64_t last, int64_t) {
                    avx512::SingleChannelConv(d, input.data<float>(), filter.data<float>(), po, first, last);
                  });
        return;
      }
    }
#endif
    const int64_t block = d.block_positions();
    const int64_t blocks = (positions + block - 1) / block;
    const int shards =
        std::min<int>(NumShards(ctx, positions * k * d.out_depth, 1 << 18), static_cast<int>(blocks));
    Tensor scratch(input.dtype(), TensorShape({shards, block * k}));
    ClaimRuns(ctx->intra_op_pool(), shards, blocks, RunsFor(shards, blocks),
              [&](int s, int64_t first, int64_t last, int64_t) {
                T* patches = scratch.data<T>() + s * block * k;
                for (int64_t b = first; b < last; ++b) {
                  const int64_t begin = b * block;
                  const int64_t end = std::min(positions, begin + block);
                  Im2Col(d, input.data<T>(), begin, end, patches);
                  GemmOnThisThread<T>(product(patches, begin, end));
                }
              });
  }
};
FT_REGISTER_KERNEL("Conv2D", Conv2DOp);

class Conv2DBackpropInputOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const TensorShape input_shape = ShapeFromTensor(ctx->input(0), "Conv2DBackpropInput: input_sizes");
    const Tensor& filter = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    const ConvDims d = MakeConvDims(input_shape, filter.shape(), strides_, padding_);
    CheckOutBackprop(d, grad);
    Tensor* out = ctx->allocate_output(0, input_shape);
    DispatchFloat(grad.dtype(), *this, [&]<typename T>() { Run<T>(ctx, d, filter, grad, out); });
  }

 private:
  template <typename T>
  void Run(OpKernelContext* ctx, const ConvDims& d, const Tensor& filter, const Tensor& grad, Tensor* out) {
    const int64_t k = d.patch_size();
    T* pi = out->data<T>();
    if (d.positions() == 0 || k == 0 || d.out_depth == 0) {
      std::fill_n(pi, out->NumElements(), T(0));
      return;
    }
    const T* pg = grad.data<T>();
    // The patches' gradients of positions [begin, end) (+)= their output gradients * filter^T.
    auto product = [&](T* patches, int64_t begin, int64_t end, bool accumulate) {
      return GemmArgs<T>{.m = end - begin,
                         .n = k,
                         .k = d.out_depth,
                         .a = pg + begin * d.out_depth,
                         .lda = d.out_depth,
                         .b = filter.data<T>(),
                         .ldb = d.out_depth,
                         .transpose_b = true,
                         .c = patches,
                         .ldc = k,
                         .accumulate = accumulate};
    };
    if constexpr (std::is_same_v<T, float>) {
      if (UseWinograd(d)) {
        WinogradConv2DBackpropInput(ctx->intra_op_pool(), ToWinogradDims(d), filter.data<float>(), pg, pi);
        return;
      }
    }
    if (d.pointwise()) {  // the patches are the input
      Gemm<T>(ctx, product(pi, 0, d.positions(), false));
      return;
    }
    std::fill_n(pi, out->NumElements(), T(0));
    // Threads claim runs of whole images, so their scatter-adds never overlap.
    const int64_t block = d.block_positions();
    const int shards =
        std::min<int>(NumShards(ctx, d.positions() * k * d.out_depth, 1 << 18), static_cast<int>(d.batch));
    Tensor scratch(grad.dtype(), TensorShape({shards, block * k}));
    std::fill_n(scratch.data<T>(), shards * block * k,
                T(0));  // kept zero between blocks by Col2ImAddAndClear
    ClaimRuns(ctx->intra_op_pool(), shards, d.batch, RunsFor(shards, d.batch),
              [&](int s, int64_t first_image, int64_t last_image, int64_t) {
                T* patches = scratch.data<T>() + s * block * k;
                const int64_t stop = last_image * d.positions_per_image();
                for (int64_t begin = first_image * d.positions_per_image(); begin < stop; begin += block) {
                  const int64_t end = std::min(stop, begin + block);
                  GemmOnThisThread<T>(product(patches, begin, end, /*accumulate=*/true));
                  Col2ImAddAndClear(d, patches, begin, end, pi);
                }
              });
  }
};
FT_REGISTER_KERNEL("Conv2DBackpropInput", Conv2DBackpropInputOp);

class Conv2DBackpropFilterOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const TensorShape filter_shape = ShapeFromTensor(ctx->input(1), "Conv2DBackpropFilter: filter_sizes");
    const Tensor& grad = ctx->input(2);
    const ConvDims d = MakeConvDims(input.shape(), filter_shape, strides_, padding_);
    CheckOutBackprop(d, grad);
    Tensor* out = ctx->allocate_output(0, filter_shape);
    DispatchFloat(input.dtype(), *this, [&]<typename T>() { Run<T>(ctx, d, input, grad, out); });
  }

 private:
  template <typename T>
  void Run(OpKernelContext* ctx, const ConvDims& d, const Tensor& input, const Tensor& grad, Tensor* out) {
    const int64_t k = d.patch_size();
    const int64_t positions = d.positions();
    T* pw = out->data<T>();
    if (positions == 0 || k == 0 || d.out_depth == 0) {
      std::fill_n(pw, out->NumElements(), T(0));
      return;
    }
    const T* pg = grad.data<T>();
    // filter gradient (+)= patches^T * output gradients, over positions [begin, end).
    auto product = [&](const T* patches, int64_t begin, int64_t end, T* acc, bool accumulate) {
      return GemmArgs<T>{.m = k,
                         .n = d.out_depth,
                         .k = end - begin,
                         .a = patches,
                         .lda = k,
                         .transpose_a = true,
                         .b = pg + begin * d.out_depth,
                         .ldb = d.out_depth,
                         .c = acc,
                         .ldc = d.out_depth,
                         .accumulate = accumulate};
    };
    if constexpr (std::is_same_v<T, float>) {
      if (UseWinograd(d)) {
        WinogradConv2DBackpropFilter(ctx->intra_op_pool(), ToWinogradDims(d), input.data<float>(), pg, pw);
        return;
      }
    }
    if (d.pointwise()) {  // the patches are the input; the product splits over the filter
      Gemm<T>(ctx, product(input.data<T>(), 0, positions, pw, false));
      return;
    }
#if FLOWTRAIN_HAS_AVX512_CODE
    if constexpr (std::is_same_v<T, float>) {
      if (DirectSingleChannel(d)) {
        SumOverRuns(ctx, NumShards(ctx, positions * k * d.out_depth, 1 << 18), d.batch * d.out_rows, pw,
                    k * d.out_depth, [&](int, int64_t first, int64_t last, float* acc) {
                      avx512::SingleChannelFilterGrad(d, input.data<float>(), pg, acc, first, last);
                    });
        return;
      }
    }
#endif
    const int64_t block = d.block_positions();
    const int64_t blocks = (positions + block - 1) / block;
    const int shards =
        std::min<int>(NumShards(ctx, positions * k * d.out_depth, 1 << 18), static_cast<int>(blocks));
    Tensor scratch(input.dtype(), TensorShape({shards, block * k}));
    SumOverRuns(ctx, shards, blocks, pw, k * d.out_depth, [&](int s, int64_t first, int64_t last, T* acc) {
      T* patches = scratch.data<T>() + s * block * k;
      for (int64_t b = first; b < last; ++b) {
        const int64_t begin = b * block;
        const int64_t end = std::min(positions, begin + block);
        Im2Col(d, input.data<T>(), begin, end, patches);
        GemmOnThisThread<T>(product(patches, begin, end, acc, b != first));
      }
    });
  }
};
FT_REGISTER_KERNEL("Conv2DBackpropFilter", Conv2DBackpropFilterOp);

}  // namespace
}  // namespace flowtrain
