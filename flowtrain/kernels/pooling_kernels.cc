// Kernels of the 2-D pooling ops (NHWC), float32 and float64: MaxPool, AvgPool and their
// gradients. Each output row of the batch is one unit of the intra-op pool's work.
#include <algorithm>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/work_sharder.h"
#include "flowtrain/kernels/internal/float_kernel_util.h"
#include "flowtrain/kernels/internal/window_geometry.h"
#include "flowtrain/ops/internal/nn_window.h"

namespace flowtrain {
namespace {

// Pooling: the output keeps the input's channels.
struct PoolDims : WindowGeometry {
  TensorShape input_shape() const { return TensorShape({batch, in_rows, in_cols, in_depth}); }
  TensorShape output_shape() const { return TensorShape({batch, out_rows, out_cols, in_depth}); }
  // The window of output (oh, ow), clipped to the input: rows [r0, r1), cols [c0, c1).
  void Window(int64_t oh, int64_t ow, int64_t* r0, int64_t* r1, int64_t* c0, int64_t* c1) const {
    *r0 = oh * stride_rows - pad_rows;
    *c0 = ow * stride_cols - pad_cols;
    *r1 = std::min(*r0 + window_rows, in_rows);
    *c1 = std::min(*c0 + window_cols, in_cols);
    *r0 = std::max<int64_t>(*r0, 0);
    *c0 = std::max<int64_t>(*c0, 0);
  }
  // Every input pixel lies in exactly one window: windows as far apart as they are wide,
  // reaching the far edge.
  bool WindowsTileInput() const {
    return stride_rows == window_rows && stride_cols == window_cols &&
           out_rows * stride_rows - pad_rows >= in_rows && out_cols * stride_cols - pad_cols >= in_cols;
  }
};

class PoolKernelBase : public OpKernel {
 public:
  explicit PoolKernelBase(OpKernelConstruction& c)
      : OpKernel(c),
        ksize_(c.GetAttr<std::vector<int64_t>>("ksize")),
        strides_(c.GetAttr<std::vector<int64_t>>("strides")),
        padding_(ParsePadding(c.GetAttr<std::string>("padding"))) {
    CheckWindowAttr(ksize_, "ksize");
    CheckWindowAttr(strides_, "strides");
  }

 protected:
  PoolDims MakeDims(const TensorShape& input) const {
    PoolDims d;
    static_cast<WindowGeometry&>(d) = MakeWindowGeometry(input, ksize_[1], ksize_[2], strides_, padding_);
    return d;
  }

  void CheckGradShape(const PoolDims& d, const Tensor& grad) const {
    if (grad.shape() != d.output_shape()) {
      InvalidArgument(type_string(), ": grad has shape ", grad.shape().DebugString(),
                      " but the pooling output has shape ", d.output_shape().DebugString());
    }
  }

  std::vector<int64_t> ksize_;
  std::vector<int64_t> strides_;
  Padding padding_;
};

// MaxPool (kMax) and AvgPool: one output row (n, oh) at a time, channels vectorized.
template <bool kMax>
class PoolOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const PoolDims d = MakeDims(input.shape());
    Tensor* out = ctx->allocate_output(0, d.output_shape());
    DispatchFloat(input.dtype(), *this, [&]<typename T>() {
      const T* in = input.data<T>();
      T* po = out->data<T>();
      const int64_t c = d.in_depth;
      ParallelRange(ctx, d.batch * d.out_rows, d.out_cols * c * d.window_rows * d.window_cols,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t row = begin; row < end; ++row) {
                        const int64_t n = row / d.out_rows;
                        const int64_t oh = row % d.out_rows;
                        for (int64_t ow = 0; ow < d.out_cols; ++ow) {
                          int64_t r0, r1, c0, c1;
                          d.Window(oh, ow, &r0, &r1, &c0, &c1);
                          ArrayMap<T> o(po + (row * d.out_cols + ow) * c, c);
                          o.setConstant(kMax ? std::numeric_limits<T>::lowest() : T(0));
                          for (int64_t r = r0; r < r1; ++r) {
                            for (int64_t col = c0; col < c1; ++col) {
                              ConstArrayMap<T> x(in + ((n * d.in_rows + r) * d.in_cols + col) * c, c);
                              if constexpr (kMax) {
                                o = o.max(x);
                              } else {
                                o += x;
                              }
                            }
                          }
                          if constexpr (!kMax)
                            o *= T(1) / static_cast<T>(std::max<int64_t>((r1 - r0) * (c1 - c0), 1));
                        }
                      }
                    });
    });
  }
};
FT_REGISTER_KERNEL("MaxPool", PoolOp<true>);
FT_REGISTER_KERNEL("AvgPool", PoolOp<false>);

// Routes each output's gradient to the first maximum of its window (row-major scan), as
// TF's CPU kernel does; images are independent, so they are split over the pool. Channels
// are SIMD lanes: a packet of channels keeps its running maximum and the window pixel it
// came from, then adds the gradient to the pixel that won in each lane.
class MaxPoolGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& grad = ctx->input(2);
    const PoolDims d = MakeDims(input.shape());
    if (ctx->input(1).shape() != d.output_shape()) {
      InvalidArgument("MaxPoolGrad: orig_output has shape ", ctx->input(1).shape().DebugString(),
                      " but the pooling output has shape ", d.output_shape().DebugString());
    }
    CheckGradShape(d, grad);
    Tensor* out = ctx->allocate_output(0, input.shape());
    DispatchFloat(input.dtype(), *this, [&]<typename T>() {
      using Packet = typename Eigen::internal::packet_traits<T>::type;
      constexpr int64_t kLanes = Eigen::internal::packet_traits<T>::size;
      const T* in = input.data<T>();
      const T* pg = grad.data<T>();
      T* po = out->data<T>();
      // Windows that tile the input (2x2 stride 2, ...) give every pixel exactly one
      // gradient, so they store it; otherwise gradients add up from a zeroed output.
      const bool tiles = d.WindowsTileInput();
      if (!tiles) std::fill_n(po, out->NumElements(), T(0));
      const int64_t c = d.in_depth;
      ParallelRange(
          ctx, d.batch, d.out_rows * d.out_cols * c * d.window_rows * d.window_cols,
          [&](int64_t begin, int64_t end) {
            std::vector<int64_t> pixels(d.window_rows * d.window_cols);  // offsets of a window's pixels
            for (int64_t n = begin; n < end; ++n) {
              for (int64_t oh = 0; oh < d.out_rows; ++oh) {
                for (int64_t ow = 0; ow < d.out_cols; ++ow) {
                  int64_t r0, r1, c0, c1;
                  d.Window(oh, ow, &r0, &r1, &c0, &c1);
                  int64_t count = 0;
                  for (int64_t r = r0; r < r1; ++r) {
                    for (int64_t col = c0; col < c1; ++col)
                      pixels[count++] = ((n * d.in_rows + r) * d.in_cols + col) * c;
                  }
                  if (count == 0) continue;
                  const T* g = pg + ((n * d.out_rows + oh) * d.out_cols + ow) * c;
                  int64_t ch = 0;
                  for (; ch + kLanes <= c; ch += kLanes) {
                    RouteToMaximum<Packet>(in + ch, g + ch, po + ch, pixels.data(), count, tiles);
                  }
                  for (; ch < c; ++ch)
                    RouteToMaximum<T>(in + ch, g + ch, po + ch, pixels.data(), count, tiles);
                }
              }
            }
          });
    });
  }

 private:
  // For the lanes (channels) of packet type P at in/out + pixels[i]: out at the window pixel
  // holding each lane's first maximum += g (or = g, and = 0 at the others, when `store`).
  // P may be a scalar (Eigen's scalar fallbacks).
  template <typename P, typename T>
  static void RouteToMaximum(const T* in, const T* g, T* out, const int64_t* pixels, int64_t count,
                             bool store) {
    namespace ei = Eigen::internal;
    P best = ei::ploadu<P>(in + pixels[0]);
    P where = ei::pset1<P>(T(0));  // window pixel index, exact in floating point
    for (int64_t i = 1; i < count; ++i) {
      const P x = ei::ploadu<P>(in + pixels[i]);
      const P greater = ei::pcmp_lt(best, x);  // strictly: ties keep the first maximum
      best = ei::pselect(greater, x, best);
      where = ei::pselect(greater, ei::pset1<P>(static_cast<T>(i)), where);
    }
    const P grad = ei::ploadu<P>(g);
    const P zero = ei::pset1<P>(T(0));
    for (int64_t i = 0; i < count; ++i) {
      T* o = out + pixels[i];
      const P share = ei::pselect(ei::pcmp_eq(where, ei::pset1<P>(static_cast<T>(i))), grad, zero);
      ei::pstoreu(o, store ? share : ei::padd(ei::ploadu<P>(o), share));
    }
  }
};
FT_REGISTER_KERNEL("MaxPoolGrad", MaxPoolGradOp);

class AvgPoolGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const TensorShape input_shape = ShapeFromTensor(ctx->input(0), "AvgPoolGrad: orig_input_shape");
    const Tensor& grad = ctx->input(1);
    const PoolDims d = MakeDims(input_shape);
    CheckGradShape(d, grad);
    Tensor* out = ctx->allocate_output(0, input_shape);
    DispatchFloat(grad.dtype(), *this, [&]<typename T>() {
      const T* pg = grad.data<T>();
      T* po = out->data<T>();
      std::fill_n(po, out->NumElements(), T(0));
      const int64_t c = d.in_depth;
      ParallelRange(ctx, d.batch, d.out_rows * d.out_cols * c * d.window_rows * d.window_cols,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t n = begin; n < end; ++n) {
                        for (int64_t oh = 0; oh < d.out_rows; ++oh) {
                          for (int64_t ow = 0; ow < d.out_cols; ++ow) {
                            int64_t r0, r1, c0, c1;
                            d.Window(oh, ow, &r0, &r1, &c0, &c1);
                            const T share =
                                T(1) / static_cast<T>(std::max<int64_t>((r1 - r0) * (c1 - c0), 1));
                            ConstArrayMap<T> g(pg + ((n * d.out_rows + oh) * d.out_cols + ow) * c, c);
                            for (int64_t r = r0; r < r1; ++r) {
                              for (int64_t col = c0; col < c1; ++col) {
                                ArrayMap<T>(po + ((n * d.in_rows + r) * d.in_cols + col) * c, c) += g * share;
                              }
                            }
                          }
                        }
                      }
                    });
    });
  }
};
FT_REGISTER_KERNEL("AvgPoolGrad", AvgPoolGradOp);

}  // namespace
}  // namespace flowtrain
