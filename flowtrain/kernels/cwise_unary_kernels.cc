// Kernels of the elementwise unary math ops (Abs, Square, Sign, Sqrt, Rsqrt, Exp, Log, Log1p,
// Tanh, Cos, Sin, Sigmoid, Softplus, Reciprocal). One template, UnaryCwiseOp<Fn>, applies an Eigen
// array expression to contiguous blocks, splitting large tensors across the intra-op pool;
// 16-bit floats are computed in float. This translation unit holds Eigen-heavy template code.
#include <cmath>
#include <limits>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/float_kernel_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/work_sharder.h"

namespace flowtrain {
namespace {

template <typename Fn>
void ForBlocks(OpKernelContext* ctx, int64_t n, int64_t cost, const Fn& fn) {
  ParallelRange(ctx, n, cost, fn);
}

// Each functor maps an Eigen array expression to the result expression; kIntegers says
// whether TF defines the op for integer types, kCost roughly how many cycles an element takes
// (what the pool uses to decide whether splitting pays).
struct AbsFn {
  static constexpr int64_t kCost = 2;
  static constexpr bool kIntegers = true;
  template <typename A>
  static auto Apply(const A& a) {
    return a.abs();
  }
};
struct SquareFn {
  static constexpr int64_t kCost = 2;
  static constexpr bool kIntegers = true;
  template <typename A>
  static auto Apply(const A& a) {
    return a.square();
  }
};
struct SignFn {
  static constexpr int64_t kCost = 2;
  static constexpr bool kIntegers = true;
  template <typename A>
  static auto Apply(const A& a) {
    return a.sign();
  }
};
struct FloorFn {
  static constexpr int64_t kCost = 2;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.floor();
  }
};
struct CeilFn {
  static constexpr int64_t kCost = 2;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.ceil();
  }
};
struct SqrtFn {
  static constexpr int64_t kCost = 2;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.sqrt();
  }
};
struct RsqrtFn {
  static constexpr int64_t kCost = 2;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.rsqrt();
  }
};
struct ExpFn {
  static constexpr int64_t kCost = 20;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.exp();
  }
};
struct LogFn {
  static constexpr int64_t kCost = 20;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.log();
  }
};
struct Log1pFn {
  static constexpr int64_t kCost = 20;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.log1p();
  }
};
struct TanhFn {
  static constexpr int64_t kCost = 20;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.tanh();
  }
};
struct CosFn {
  static constexpr int64_t kCost = 20;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.cos();
  }
};
struct SinFn {
  static constexpr int64_t kCost = 20;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.sin();
  }
};
struct SigmoidFn {
  static constexpr int64_t kCost = 20;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.logistic();
  }
};
struct ReciprocalFn {
  static constexpr int64_t kCost = 2;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    return a.inverse();
  }
};
// log(1 + e^x), computed as TF does so that large |x| neither overflows nor loses precision.
struct SoftplusFn {
  static constexpr int64_t kCost = 20;
  static constexpr bool kIntegers = false;
  template <typename A>
  static auto Apply(const A& a) {
    using T = typename A::Scalar;
    return a.unaryExpr([](T x) -> T {
      const T threshold = std::log(std::numeric_limits<T>::epsilon()) + T(2);
      if (x > -threshold) return x;
      if (x < threshold) return std::exp(x);
      return std::log1p(std::exp(x));
    });
  }
};

template <typename Fn>
class UnaryCwiseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, x.shape());
    const int64_t n = x.NumElements();
    switch (x.dtype()) {
      case DT_FLOAT:
        return Run<float>(ctx, x, out, n);
      case DT_DOUBLE:
        return Run<double>(ctx, x, out, n);
      case DT_HALF:
        return RunInFloat<half>(ctx, x, out, n);
      case DT_BFLOAT16:
        return RunInFloat<bfloat16>(ctx, x, out, n);
      default:
        break;
    }
    if constexpr (Fn::kIntegers) {
      switch (x.dtype()) {
        case DT_INT32:
          return Run<int32_t>(ctx, x, out, n);
        case DT_INT64:
          return Run<int64_t>(ctx, x, out, n);
        case DT_INT16:
          return Run<int16_t>(ctx, x, out, n);
        case DT_INT8:
          return Run<int8_t>(ctx, x, out, n);
        default:
          break;
      }
    }
    InvalidArgument(type_string(), " '", name(), "' has no kernel for dtype ", DataTypeString(x.dtype()));
  }

 private:
  template <typename T>
  static void Run(OpKernelContext* ctx, const Tensor& x, Tensor* out, int64_t n) {
    const T* in = x.data<T>();
    T* o = out->data<T>();
    ForBlocks(ctx, n, Fn::kCost, [&](int64_t b, int64_t e) {
      ArrayMap<T>(o + b, e - b) = Fn::Apply(ConstArrayMap<T>(in + b, e - b));
    });
  }

  // 16-bit floats: convert blocks to float, apply the float expression, convert back.
  template <typename H>
  static void RunInFloat(OpKernelContext* ctx, const Tensor& x, Tensor* out, int64_t n) {
    const H* in = x.data<H>();
    H* o = out->data<H>();
    ForBlocks(ctx, n, Fn::kCost, [&](int64_t b, int64_t e) {
      constexpr int64_t kBlock = 1024;
      float buffer[kBlock];
      for (int64_t start = b; start < e; start += kBlock) {
        const int64_t len = std::min(kBlock, e - start);
        ArrayMap<float> block(buffer, len);
        block = Eigen::Map<const Eigen::Array<H, Eigen::Dynamic, 1>>(in + start, len).template cast<float>();
        block = Fn::Apply(block).eval();
        Eigen::Map<Eigen::Array<H, Eigen::Dynamic, 1>>(o + start, len) = block.template cast<H>();
      }
    });
  }
};

FT_REGISTER_KERNEL("Abs", UnaryCwiseOp<AbsFn>);
FT_REGISTER_KERNEL("Square", UnaryCwiseOp<SquareFn>);
FT_REGISTER_KERNEL("Sign", UnaryCwiseOp<SignFn>);
FT_REGISTER_KERNEL("Sqrt", UnaryCwiseOp<SqrtFn>);
FT_REGISTER_KERNEL("Floor", UnaryCwiseOp<FloorFn>);
FT_REGISTER_KERNEL("Ceil", UnaryCwiseOp<CeilFn>);
FT_REGISTER_KERNEL("Rsqrt", UnaryCwiseOp<RsqrtFn>);
FT_REGISTER_KERNEL("Exp", UnaryCwiseOp<ExpFn>);
FT_REGISTER_KERNEL("Log", UnaryCwiseOp<LogFn>);
FT_REGISTER_KERNEL("Log1p", UnaryCwiseOp<Log1pFn>);
FT_REGISTER_KERNEL("Tanh", UnaryCwiseOp<TanhFn>);
FT_REGISTER_KERNEL("Cos", UnaryCwiseOp<CosFn>);
FT_REGISTER_KERNEL("Sin", UnaryCwiseOp<SinFn>);
FT_REGISTER_KERNEL("Sigmoid", UnaryCwiseOp<SigmoidFn>);
FT_REGISTER_KERNEL("Softplus", UnaryCwiseOp<SoftplusFn>);
FT_REGISTER_KERNEL("Reciprocal", UnaryCwiseOp<ReciprocalFn>);

}  // namespace
}  // namespace flowtrain
