// Kernels of the nn ops other than convolution and pooling (conv_kernels.cc): activations and
// their gradients, bias add, softmax, the cross-entropy losses, L2 loss and fused batch
// normalization. float32 and float64; rows of the last dimension are Eigen array maps, so
// the inner loops vectorize, and large inputs are split over the intra-op pool.
#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/float_kernel_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/work_sharder.h"

namespace flowtrain {
namespace {

// ---- Activations ----

namespace ei = Eigen::internal;

// The activations, y = Fn::Apply(x, alpha), and their gradients (kGrad), dx = Fn::Apply(dy,
// second, alpha) with `second` the activation's features or outputs: elementwise, a SIMD
// packet at a time (Fn::Apply takes and returns Eigen packets, or scalars for the tail).
template <typename Fn, bool kGrad>
class ActivationOp : public OpKernel {
 public:
  explicit ActivationOp(OpKernelConstruction& c)
      : OpKernel(c), alpha_(c.HasAttr("alpha") ? c.GetAttr<float>("alpha") : 0.0f) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& second = ctx->input(kGrad ? 1 : 0);
    if constexpr (kGrad) CheckSameShape(x, second, *this);
    Tensor* out = ctx->allocate_output(0, x.shape());
    DispatchFloat(x.dtype(), *this, [&]<typename T>() {
      const T* px = x.data<T>();
      const T* ps = second.data<T>();
      T* po = out->data<T>();
      const T alpha = static_cast<T>(alpha_);
      ParallelRange(ctx, x.NumElements(), Fn::kCost, [&](int64_t b, int64_t e) {
        ZipPackets(px + b, ps + b, po + b, e - b, [alpha](auto u, auto v) {
          if constexpr (kGrad) {
            return Fn::Apply(u, v, alpha);
          } else {
            return Fn::Apply(u, alpha);  // v is u: the forward op has one input
          }
        });
      });
    });
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  float alpha_;
};

// A packet (or scalar) of P's type with every lane `value`.
template <typename P, typename T>
P Splat(T value) {
  return ei::pset1<P>(static_cast<typename ei::unpacket_traits<P>::type>(value));
}
// Lanes where a < b, as a select mask.
template <typename P>
P Less(const P& a, const P& b) {
  return ei::pcmp_lt(a, b);
}

struct ReluFn {
  static constexpr int64_t kCost = 1;
  template <typename P, typename T>
  static P Apply(const P& x, T) {
    return ei::pmax(x, Splat<P>(0));
  }
};
struct Relu6Fn {
  static constexpr int64_t kCost = 1;
  template <typename P, typename T>
  static P Apply(const P& x, T) {
    return ei::pmin(ei::pmax(x, Splat<P>(0)), Splat<P>(6));
  }
};
struct EluFn {
  static constexpr int64_t kCost = 20;
  template <typename P, typename T>
  static P Apply(const P& x, T) {
    return ei::pselect(Less(x, Splat<P>(0)), ei::psub(ei::pexp(x), Splat<P>(1)), x);
  }
};
struct LeakyReluFn {
  static constexpr int64_t kCost = 1;
  template <typename P, typename T>
  static P Apply(const P& x, T alpha) {
    return ei::pselect(Less(Splat<P>(0), x), x, ei::pmul(x, Splat<P>(alpha)));
  }
};
struct ReluGradFn {
  static constexpr int64_t kCost = 1;
  template <typename P, typename T>
  static P Apply(const P& g, const P& f, T) {
    return ei::pselect(Less(Splat<P>(0), f), g, Splat<P>(0));
  }
};
struct Relu6GradFn {
  static constexpr int64_t kCost = 1;
  template <typename P, typename T>
  static P Apply(const P& g, const P& f, T) {
    return ei::pselect(Less(Splat<P>(0), f), ei::pselect(Less(f, Splat<P>(6)), g, Splat<P>(0)), Splat<P>(0));
  }
};
struct EluGradFn {
  static constexpr int64_t kCost = 2;
  // With y = Elu(x): dy/dx = 1 where y >= 0, else y + 1 = exp(x).
  template <typename P, typename T>
  static P Apply(const P& g, const P& y, T) {
    return ei::pselect(Less(y, Splat<P>(0)), ei::pmul(g, ei::padd(y, Splat<P>(1))), g);
  }
};
struct LeakyReluGradFn {
  static constexpr int64_t kCost = 1;
  template <typename P, typename T>
  static P Apply(const P& g, const P& f, T alpha) {
    return ei::pselect(Less(Splat<P>(0), f), g, ei::pmul(g, Splat<P>(alpha)));
  }
};

FT_REGISTER_KERNEL("Relu", ActivationOp<ReluFn, false>);
FT_REGISTER_KERNEL("Relu6", ActivationOp<Relu6Fn, false>);
FT_REGISTER_KERNEL("Elu", ActivationOp<EluFn, false>);
FT_REGISTER_KERNEL("LeakyRelu", ActivationOp<LeakyReluFn, false>);
FT_REGISTER_KERNEL("ReluGrad", ActivationOp<ReluGradFn, true>);
FT_REGISTER_KERNEL("Relu6Grad", ActivationOp<Relu6GradFn, true>);
FT_REGISTER_KERNEL("EluGrad", ActivationOp<EluGradFn, true>);
FT_REGISTER_KERNEL("LeakyReluGrad", ActivationOp<LeakyReluGradFn, true>);

// ---- Softmax ----

template <bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    if (logits.dims() < 1) {
      InvalidArgument("logits must have >= 1 dimension, got ", logits.shape().DebugString());
    }
    Tensor* out = ctx->allocate_output(0, logits.shape());
    const int64_t classes = logits.dim_size(logits.dims() - 1);
    if (classes == 0 || logits.NumElements() == 0) return;
    const int64_t rows = logits.NumElements() / classes;
    DispatchFloat(logits.dtype(), *this, [&]<typename T>() {
      const T* in = logits.data<T>();
      T* po = out->data<T>();
      ParallelRange(ctx, rows, classes * 20, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          ConstArrayMap<T> x(in + r * classes, classes);
          ArrayMap<T> y(po + r * classes, classes);
          const T max = x.maxCoeff();
          if constexpr (kLog) {
            // Shift first: max + log_sum would round away log_sum for large logits.
            y = x - max;
            y -= std::log(y.exp().sum());
          } else {
            y = (x - max).exp();
            y *= T(1) / y.sum();
          }
        }
      });
    });
  }
};
FT_REGISTER_KERNEL("Softmax", SoftmaxOp<false>);
FT_REGISTER_KERNEL("LogSoftmax", SoftmaxOp<true>);

// One pass per row over the logits: shifted exponentials go straight into `backprop`, then
// loss = log(sum) - (logit - max) at the labels and backprop = softmax - labels.
class SoftmaxCrossEntropyOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    if (logits.dims() != 2) {
      InvalidArgument("logits must be 2-dimensional, got ", logits.shape().DebugString());
    }
    if (logits.shape() != labels.shape()) {
      InvalidArgument("logits and labels must be same size: logits_size=", logits.shape().DebugString(),
                      " labels_size=", labels.shape().DebugString());
    }
    const int64_t batch = logits.dim_size(0);
    const int64_t classes = logits.dim_size(1);
    Tensor* loss = ctx->allocate_output(0, TensorShape({batch}));
    Tensor* backprop = ctx->allocate_output(1, logits.shape());
    if (batch == 0) return;
    if (classes == 0) {
      InvalidArgument("Must have at least one class, but got logits shape ", logits.shape().DebugString());
    }
    DispatchFloat(logits.dtype(), *this, [&]<typename T>() {
      const T* pl = logits.data<T>();
      const T* py = labels.data<T>();
      T* pbp = backprop->data<T>();
      T* ploss = loss->data<T>();
      ParallelRange(ctx, batch, classes * 25, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          ConstArrayMap<T> x(pl + r * classes, classes);
          ConstArrayMap<T> y(py + r * classes, classes);
          ArrayMap<T> bp(pbp + r * classes, classes);
          const T max = x.maxCoeff();
          bp = (x - max).exp();
          const T sum = bp.sum();
          const T log_sum = std::log(sum);
          ploss[r] = (y * (log_sum - (x - max))).sum();
          bp = bp * (T(1) / sum) - y;
        }
      });
    });
  }
  KernelCost cost() const override { return KernelCost::kNormal; }
};
FT_REGISTER_KERNEL("SoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropyOp);

class SparseSoftmaxCrossEntropyOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    if (logits.dims() != 2) {
      InvalidArgument("logits must be 2-D, but got shape ", logits.shape().DebugString());
    }
    if (labels.dims() != 1) {
      InvalidArgument("labels must be 1-D, but got shape ", labels.shape().DebugString());
    }
    if (logits.dim_size(0) != labels.dim_size(0)) {
      InvalidArgument("logits and labels must have the same first dimension, got logits shape ",
                      logits.shape().DebugString(), " and labels shape ", labels.shape().DebugString());
    }
    const int64_t batch = logits.dim_size(0);
    const int64_t classes = logits.dim_size(1);
    if (batch > 0 && classes == 0) {
      InvalidArgument("Must have at least one class, but got logits shape ", logits.shape().DebugString());
    }
    // Labels as int64, checked before any work is split over threads.
    std::vector<int64_t> label_values(batch);
    for (int64_t i = 0; i < batch; ++i) {
      label_values[i] = labels.dtype() == DT_INT32 ? labels.flat<int32_t>()[i] : labels.flat<int64_t>()[i];
    }
    for (int64_t i = 0; i < batch; ++i) {
      if (label_values[i] < 0 || label_values[i] >= classes) {
        InvalidArgument("Received a label value of ", label_values[i],
                        " which is outside the valid range of [0, ", classes,
                        ").  Label values: ", StrJoin(label_values, " "));
      }
    }
    Tensor* loss = ctx->allocate_output(0, TensorShape({batch}));
    Tensor* backprop = ctx->allocate_output(1, logits.shape());
    DispatchFloat(logits.dtype(), *this, [&]<typename T>() {
      const T* pl = logits.data<T>();
      T* pbp = backprop->data<T>();
      T* ploss = loss->data<T>();
      ParallelRange(ctx, batch, classes * 20, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          ConstArrayMap<T> x(pl + r * classes, classes);
          ArrayMap<T> bp(pbp + r * classes, classes);
          const T max = x.maxCoeff();
          bp = (x - max).exp();
          const T sum = bp.sum();
          const int64_t label = label_values[r];
          ploss[r] = std::log(sum) - (x[label] - max);
          bp *= T(1) / sum;
          bp[label] -= T(1);
        }
      });
    });
  }
};
FT_REGISTER_KERNEL("SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxCrossEntropyOp);

class L2LossOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, TensorShape({}));
    DispatchFloat(t.dtype(), *this, [&]<typename T>() {
      out->data<T>()[0] = ConstArrayMap<T>(t.data<T>(), t.NumElements()).square().sum() / T(2);
    });
  }
};
FT_REGISTER_KERNEL("L2Loss", L2LossOp);

// ---- Bias ----

class BiasAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    if (value.dims() < 2) {
      InvalidArgument("Input tensor must be at least 2D: ", value.shape().DebugString());
    }
    if (bias.dims() != 1) {
      InvalidArgument("Biases must be 1D: ", bias.shape().DebugString());
    }
    const int64_t channels = value.dim_size(value.dims() - 1);
    if (bias.dim_size(0) != channels) {
      InvalidArgument("Must provide as many biases as the last dimension of the input tensor: ",
                      bias.shape().DebugString(), " vs. ", value.shape().DebugString());
    }
    Tensor* out = ctx->allocate_output(0, value.shape());
    if (value.NumElements() == 0) return;
    const int64_t rows = value.NumElements() / channels;
    DispatchFloat(value.dtype(), *this, [&]<typename T>() {
      const T* in = value.data<T>();
      T* po = out->data<T>();
      ConstArrayMap<T> b(bias.data<T>(), channels);
      ParallelRange(ctx, rows, channels, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          ArrayMap<T>(po + r * channels, channels) = ConstArrayMap<T>(in + r * channels, channels) + b;
        }
      });
    });
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("BiasAdd", BiasAddOp);

// Sums over the rows of row-major data into out[0, width): add_rows(begin, end, acc) adds
// rows [begin, end) into acc, in plain loops the compiler vectorises (an Eigen map per row of
// a few dozen channels cost more than the adds). Split by rows over the pool with one partial
// sum per shard.
template <typename T, typename RowsFn>
void SumRows(OpKernelContext* ctx, int64_t rows, int64_t width, T* out, const RowsFn& add_rows) {
  const int shards = NumShards(ctx, rows * width, 1 << 15);
  std::vector<T> partial(static_cast<size_t>(shards) * width, T(0));
  ParallelShards(ctx, shards, [&](int s) {
    auto [begin, end] = ShardRange(rows, shards, s);
    add_rows(begin, end, partial.data() + s * width);
  });
  std::copy(partial.begin(), partial.begin() + width, out);
  for (int s = 1; s < shards; ++s) {
    const T* p = partial.data() + s * width;
    for (int64_t c = 0; c < width; ++c) out[c] += p[c];
  }
}

class BiasAddGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    if (grad.dims() < 2) {
      InvalidArgument("Input tensor must be at least 2D: ", grad.shape().DebugString());
    }
    const int64_t channels = grad.dim_size(grad.dims() - 1);
    Tensor* out = ctx->allocate_output(0, TensorShape({channels}));
    DispatchFloat(grad.dtype(), *this, [&]<typename T>() {
      if (channels == 0) return;
      const T* pg = grad.data<T>();
      SumRows<T>(ctx, grad.NumElements() / channels, channels, out->data<T>(),
                 [&](int64_t begin, int64_t end, T* acc) {
                   for (int64_t r = begin; r < end; ++r) {
                     const T* g = pg + r * channels;
                     for (int64_t c = 0; c < channels; ++c) acc[c] += g[c];
                   }
                 });
    });
  }
};
FT_REGISTER_KERNEL("BiasAddGrad", BiasAddGradOp);

// ---- Fused batch normalization (NHWC: channels are the last dimension) ----

void CheckVector(const Tensor& t, int64_t size, std::string_view what, bool allow_empty) {
  if (t.dims() != 1 || (t.dim_size(0) != size && !(allow_empty && t.dim_size(0) == 0))) {
    InvalidArgument(what, " must be 1-dimensional with ", size, " elements, got shape ",
                    t.shape().DebugString());
  }
}

// The attrs and checks both fused batch-normalization kernels share.
class FusedBatchNormKernelBase : public OpKernel {
 public:
  explicit FusedBatchNormKernelBase(OpKernelConstruction& c)
      : OpKernel(c), epsilon_(c.GetAttr<float>("epsilon")), is_training_(c.GetAttr<bool>("is_training")) {}
  KernelCost cost() const override { return KernelCost::kExpensive; }

 protected:
  static void CheckInput(const Tensor& x) {
    if (x.dims() != 4) InvalidArgument("input must be 4-dimensional", x.shape().DebugString());
  }

  float epsilon_;
  bool is_training_;
};

class FusedBatchNormOp : public FusedBatchNormKernelBase {
 public:
  explicit FusedBatchNormOp(OpKernelConstruction& c)
      : FusedBatchNormKernelBase(c), exponential_avg_factor_(c.GetAttr<float>("exponential_avg_factor")) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    CheckInput(x);
    const int64_t channels = x.dim_size(3);
    CheckVector(ctx->input(1), channels, "scale", false);
    CheckVector(ctx->input(2), channels, "offset", false);
    CheckVector(ctx->input(3), channels, "mean", is_training_);
    CheckVector(ctx->input(4), channels, "variance", is_training_);
    if (x.dtype() != ctx->input(1).dtype()) {
      InvalidArgument(type_string(), " '", name(), "' needs x and scale of one dtype on CPU, got ",
                      DataTypeString(x.dtype()), " and ", DataTypeString(ctx->input(1).dtype()));
    }
    const int64_t rows = channels == 0 ? 0 : x.NumElements() / channels;
    Tensor* y = ctx->allocate_output(0, x.shape());
    Tensor* batch_mean = ctx->allocate_output(1, TensorShape({channels}));
    Tensor* batch_var = ctx->allocate_output(2, TensorShape({channels}));
    Tensor* saved_mean = ctx->allocate_output(3, TensorShape({channels}));
    Tensor* saved_var = ctx->allocate_output(4, TensorShape({channels}));
    ctx->allocate_output(5, TensorShape({0}));
    DispatchFloat(x.dtype(), *this, [&]<typename T>() {
      using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
      const T* px = x.data<T>();
      Vec mean(channels), var(channels);
      if (is_training_) {
        Vec sum(channels);
        SumRows<T>(ctx, rows, channels, sum.data(), [&](int64_t begin, int64_t end, T* acc) {
          for (int64_t r = begin; r < end; ++r) {
            const T* xr = px + r * channels;
            for (int64_t c = 0; c < channels; ++c) acc[c] += xr[c];
          }
        });
        mean = sum / static_cast<T>(std::max<int64_t>(rows, 1));
        Vec sq(channels);
        const T* pm = mean.data();
        SumRows<T>(ctx, rows, channels, sq.data(), [&](int64_t begin, int64_t end, T* acc) {
          for (int64_t r = begin; r < end; ++r) {
            const T* xr = px + r * channels;
            for (int64_t c = 0; c < channels; ++c) {
              const T d = xr[c] - pm[c];
              acc[c] += d * d;
            }
          }
        });
        var = sq / static_cast<T>(std::max<int64_t>(rows, 1));
      } else {
        mean = ConstArrayMap<T>(ctx->input(3).data<T>(), channels);
        var = ConstArrayMap<T>(ctx->input(4).data<T>(), channels);
      }
      const Vec inv_std = (var + static_cast<T>(epsilon_)).rsqrt();
      const Vec scale = ConstArrayMap<T>(ctx->input(1).data<T>(), channels) * inv_std;
      const Vec shift = ConstArrayMap<T>(ctx->input(2).data<T>(), channels) - mean * scale;
      T* py = y->data<T>();
      const T* ps = scale.data();
      const T* pt = shift.data();
      ParallelRange(ctx, rows, channels * 2, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const T* xr = px + r * channels;
          T* yr = py + r * channels;
          for (int64_t c = 0; c < channels; ++c) yr[c] = xr[c] * ps[c] + pt[c];
        }
      });
      ArrayMap<T>(batch_mean->data<T>(), channels) = mean;
      ArrayMap<T>(saved_mean->data<T>(), channels) = mean;
      ArrayMap<T>(saved_var->data<T>(), channels) = var;
      // The batch variance output is unbiased (Bessel's correction), for moving averages.
      const T correction = is_training_ && rows > 1 ? static_cast<T>(rows) / static_cast<T>(rows - 1) : T(1);
      ArrayMap<T>(batch_var->data<T>(), channels) = var * correction;
      // TF >= 2.1: with exponential_avg_factor f != 1 the training outputs are the running
      // averages (1 - f) * mean_in + f * batch statistic (Keras's fused moving averages).
      if (is_training_ && exponential_avg_factor_ != 1.0f) {
        CheckVector(ctx->input(3), channels, "mean", false);
        CheckVector(ctx->input(4), channels, "variance", false);
        const T f = static_cast<T>(exponential_avg_factor_);
        ArrayMap<T>(batch_mean->data<T>(), channels) =
            (T(1) - f) * ConstArrayMap<T>(ctx->input(3).data<T>(), channels) + f * mean;
        ArrayMap<T>(batch_var->data<T>(), channels) =
            (T(1) - f) * ConstArrayMap<T>(ctx->input(4).data<T>(), channels) + f * (var * correction);
      }
    });
  }

 private:
  float exponential_avg_factor_;
};
FT_REGISTER_KERNEL("FusedBatchNormV3", FusedBatchNormOp);

class FusedBatchNormGradOp : public FusedBatchNormKernelBase {
 public:
  using FusedBatchNormKernelBase::FusedBatchNormKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    CheckInput(x);
    CheckSameShape(dy, x, *this);
    const int64_t channels = x.dim_size(3);
    CheckVector(ctx->input(2), channels, "scale", false);
    CheckVector(ctx->input(3), channels, "reserve_space_1 (mean)", false);
    CheckVector(ctx->input(4), channels, "reserve_space_2 (variance)", false);
    if (x.dtype() != ctx->input(2).dtype()) {
      InvalidArgument(type_string(), " '", name(), "' needs x and scale of one dtype on CPU");
    }
    const int64_t rows = channels == 0 ? 0 : x.NumElements() / channels;
    Tensor* dx = ctx->allocate_output(0, x.shape());
    Tensor* dscale = ctx->allocate_output(1, TensorShape({channels}));
    Tensor* doffset = ctx->allocate_output(2, TensorShape({channels}));
    ctx->allocate_output(3, TensorShape({0}));
    ctx->allocate_output(4, TensorShape({0}));
    DispatchFloat(x.dtype(), *this, [&]<typename T>() {
      using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
      const T* px = x.data<T>();
      const T* pdy = dy.data<T>();
      const Vec mean = ConstArrayMap<T>(ctx->input(3).data<T>(), channels);
      const Vec inv_std =
          (ConstArrayMap<T>(ctx->input(4).data<T>(), channels) + static_cast<T>(epsilon_)).rsqrt();
      const Vec scale = ConstArrayMap<T>(ctx->input(2).data<T>(), channels);
      // offset_backprop = sum(dy); scale_backprop = sum(dy * x_hat), x_hat = (x - mean) * inv_std.
      // Both sums in one pass: [sum_dy, sum_dy_xc].
      Vec sums(2 * channels);
      const T* pm = mean.data();
      SumRows<T>(ctx, rows, 2 * channels, sums.data(), [&](int64_t begin, int64_t end, T* acc) {
        T* acc_xc = acc + channels;
        for (int64_t r = begin; r < end; ++r) {
          const T* dyr = pdy + r * channels;
          const T* xr = px + r * channels;
          for (int64_t c = 0; c < channels; ++c) {
            acc[c] += dyr[c];
            acc_xc[c] += dyr[c] * (xr[c] - pm[c]);
          }
        }
      });
      const Vec sum_dy = sums.head(channels);
      const Vec sum_dy_xc = sums.tail(channels);
      ArrayMap<T>(doffset->data<T>(), channels) = sum_dy;
      ArrayMap<T>(dscale->data<T>(), channels) = sum_dy_xc * inv_std;
      T* pdx = dx->data<T>();
      const Vec k = scale * inv_std;
      if (is_training_) {
        // dx = scale * inv_std * (dy - mean(dy) - (x - mean) * inv_std² * mean(dy * (x - mean))).
        const T n = static_cast<T>(std::max<int64_t>(rows, 1));
        const Vec mean_dy = sum_dy / n;
        const Vec coef = inv_std.square() * sum_dy_xc / n;
        const T *pk = k.data(), *pmdy = mean_dy.data(), *pcoef = coef.data();
        ParallelRange(ctx, rows, channels * 4, [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            const T* dyr = pdy + r * channels;
            const T* xr = px + r * channels;
            T* dxr = pdx + r * channels;
            for (int64_t c = 0; c < channels; ++c)
              dxr[c] = pk[c] * (dyr[c] - pmdy[c] - (xr[c] - pm[c]) * pcoef[c]);
          }
        });
      } else {
        ParallelRange(ctx, rows, channels, [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            ArrayMap<T>(pdx + r * channels, channels) = ConstArrayMap<T>(pdy + r * channels, channels) * k;
          }
        });
      }
    });
  }
};
FT_REGISTER_KERNEL("FusedBatchNormGradV3", FusedBatchNormGradOp);

}  // namespace
}  // namespace flowtrain
