// The elementwise binary kernel template shared by the arithmetic kernels (their functors in
// cwise_binary_functors.h, registered in math_kernels.cc, cwise_arithmetic_kernels.cc and
// cwise_division_kernels.cc) and the comparison/logical kernels (cwise_compare_kernels.cc),
// split so that the heavy translation units compile in parallel. A functor supplies Apply()
// over Eigen arrays and/or scalars and flags what it accepts and returns:
//
//   struct LessFn {
//     static constexpr bool kDivides = false;     // integer inputs: reject y == 0
//     static constexpr bool kBoolOutput = true;   // output dtype bool instead of T
//     template <typename A, typename B>
//     static auto Apply(const A& a, const B& b) { return ApplyElementwise(a, b, ...); }
//   };
//   FT_REGISTER_KERNEL("Less", cwise_internal::BinaryCwiseOp<LessFn>);
//
// Include only in kernel translation units: it instantiates Eigen expressions.
#ifndef FLOWTRAIN_KERNELS_INTERNAL_CWISE_BINARY_OP_H_
#define FLOWTRAIN_KERNELS_INTERNAL_CWISE_BINARY_OP_H_

#include <string>
#include <type_traits>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/cwise_binary.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/work_sharder.h"

namespace flowtrain::cwise_internal {

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Splits [0, n) elements over the intra-op pool when there are enough of them.
template <typename Fn>
void ForRange(OpKernelContext* ctx, int64_t n, const Fn& fn) {
  ParallelRange(ctx, n, /*cost_per_unit=*/2, fn);
}

// True for Eigen array expressions (as opposed to scalars, including std::string).
template <typename X>
constexpr bool kIsArray = std::is_base_of_v<Eigen::ArrayBase<X>, X>;

// Optional functor flags (absent means false): kBoolOutput — the output is bool rather than
// T (comparisons); kBoolInputs — bool inputs are accepted; kBoolOnly — only bool inputs are
// (logical ops); kStringInputs — string inputs are accepted; kNoNegativeIntegerExponent —
// integer y must be >= 0 (Pow).
template <typename Fn>
constexpr bool kBoolOutput = requires {
  requires Fn::kBoolOutput;
};
template <typename Fn>
constexpr bool kBoolInputs = requires {
  requires Fn::kBoolInputs;
};
template <typename Fn>
constexpr bool kBoolOnly = requires {
  requires Fn::kBoolOnly;
};
template <typename Fn>
constexpr bool kStringInputs = requires {
  requires Fn::kStringInputs;
};
template <typename Fn>
constexpr bool kNoNegativeIntegerExponent = requires {
  requires Fn::kNoNegativeIntegerExponent;
};
template <typename Fn, typename T>
using CwiseOut = std::conditional_t<kBoolOutput<Fn>, bool, T>;

// Applies the scalar function f elementwise to any mix of Eigen arrays and scalars.
template <typename A, typename B, typename F>
auto ApplyElementwise(const A& a, const B& b, F f) {
  if constexpr (kIsArray<A> && kIsArray<B>) {
    return a.binaryExpr(b, f);
  } else if constexpr (kIsArray<A>) {
    using T = typename A::Scalar;
    return a.unaryExpr([f, y = static_cast<T>(b)](T x) { return f(x, y); });
  } else if constexpr (kIsArray<B>) {
    using T = typename B::Scalar;
    return b.unaryExpr([f, x = static_cast<T>(a)](T y) { return f(x, y); });
  } else {
    return f(a, b);
  }
}

template <typename Fn>
class BinaryCwiseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    if (x.dtype() == DT_STRING) {
      ComputeStrings(ctx, x, y);
      return;
    }
    if (x.dtype() == DT_BOOL) {
      if constexpr (kBoolInputs<Fn>) {
        ComputeTyped<bool>(ctx, x, y);
        return;
      }
      InvalidArgument(type_string(), " '", name(), "' does not support bool inputs");
    }
    if constexpr (kBoolOnly<Fn>) {
      InvalidArgument(type_string(), " '", name(), "' needs bool inputs");
    } else {
      DispatchNumericType(x.dtype(), type_string(), [&]<typename T>() { ComputeTyped<T>(ctx, x, y); });
    }
  }

 private:
  template <typename T>
  void ComputeTyped(OpKernelContext* ctx, const Tensor& x, const Tensor& y) {
    if constexpr (Fn::kDivides && std::is_integral_v<T>) {
      for (const T v : y.flat<T>()) {
        if (v == T(0)) InvalidArgument("Integer division by zero in ", name());
      }
    }
    if constexpr (kNoNegativeIntegerExponent<Fn> && std::is_integral_v<T>) {
      for (const T v : y.flat<T>()) {
        if (v < T(0)) InvalidArgument("Integers to negative integer powers are not allowed in ", name());
      }
    }
    using Out = CwiseOut<Fn, T>;
    const int64_t nx = x.NumElements();
    const int64_t ny = y.NumElements();
    if (x.shape() == y.shape()) {
      Tensor* out = ctx->allocate_output(0, x.shape());
      const T* px = x.data<T>();
      const T* py = y.data<T>();
      Out* po = out->data<Out>();
      if (nx == 1) {
        po[0] = static_cast<Out>(Fn::Apply(px[0], py[0]));
        return;
      }
      ForRange(ctx, nx, [&](int64_t b, int64_t e) {
        ArrayMap<Out>(po + b, e - b) =
            Fn::Apply(ConstArrayMap<T>(px + b, e - b), ConstArrayMap<T>(py + b, e - b));
      });
      return;
    }
    if (ny == 1 && y.dims() <= x.dims()) {
      Tensor* out = ctx->allocate_output(0, x.shape());
      const T s = y.data<T>()[0];
      const T* px = x.data<T>();
      Out* po = out->data<Out>();
      ForRange(ctx, nx, [&](int64_t b, int64_t e) {
        ArrayMap<Out>(po + b, e - b) = Fn::Apply(ConstArrayMap<T>(px + b, e - b), s);
      });
      return;
    }
    if (nx == 1 && x.dims() <= y.dims()) {
      Tensor* out = ctx->allocate_output(0, y.shape());
      const T s = x.data<T>()[0];
      const T* py = y.data<T>();
      Out* po = out->data<Out>();
      ForRange(ctx, ny, [&](int64_t b, int64_t e) {
        ArrayMap<Out>(po + b, e - b) = Fn::Apply(s, ConstArrayMap<T>(py + b, e - b));
      });
      return;
    }
    const TensorShape out_shape = BroadcastOutputShape(x.shape(), y.shape(), name());
    Tensor* out = ctx->allocate_output(0, out_shape);
    Out* po = out->data<Out>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    const int64_t n = out_shape.num_elements();
    if (n == 0) return;
    // Rows of the innermost dimension: a row of y repeated over x (bias-add shape) is common.
    const int rank = out_shape.dims();
    const int64_t inner = out_shape.dim_size(rank - 1);
    const DimVector sx = BroadcastStrides(x.shape(), out_shape);
    const DimVector sy = BroadcastStrides(y.shape(), out_shape);
    const int64_t rows = n / inner;
    ForRange(ctx, rows, [&](int64_t row_begin, int64_t row_end) {
      for (int64_t row = row_begin; row < row_end; ++row) {
        int64_t ox = 0, oy = 0, rest = row;
        for (int d = rank - 2; d >= 0; --d) {
          const int64_t coord = rest % out_shape.dim_size(d);
          rest /= out_shape.dim_size(d);
          ox += coord * sx[d];
          oy += coord * sy[d];
        }
        Out* o = po + row * inner;
        const int64_t step_x = sx[rank - 1];
        const int64_t step_y = sy[rank - 1];
        if (step_x == 1 && step_y == 1) {
          ArrayMap<Out>(o, inner) =
              Fn::Apply(ConstArrayMap<T>(px + ox, inner), ConstArrayMap<T>(py + oy, inner));
        } else if (step_x == 1 && step_y == 0) {
          ArrayMap<Out>(o, inner) = Fn::Apply(ConstArrayMap<T>(px + ox, inner), py[oy]);
        } else if (step_x == 0 && step_y == 1) {
          ArrayMap<Out>(o, inner) = Fn::Apply(px[ox], ConstArrayMap<T>(py + oy, inner));
        } else {
          for (int64_t i = 0; i < inner; ++i) {
            o[i] = static_cast<Out>(Fn::Apply(px[ox + i * step_x], py[oy + i * step_y]));
          }
        }
      }
    });
  }

  void ComputeStrings(OpKernelContext* ctx, const Tensor& x, const Tensor& y) {
    if constexpr (!kStringInputs<Fn>) {
      InvalidArgument(type_string(), " does not support strings");
    } else {
      using Out = std::conditional_t<kBoolOutput<Fn>, bool, std::string>;
      const TensorShape out_shape = BroadcastOutputShape(x.shape(), y.shape(), name());
      Tensor* out = ctx->allocate_output(0, out_shape);
      const DimVector sx = BroadcastStrides(x.shape(), out_shape);
      const DimVector sy = BroadcastStrides(y.shape(), out_shape);
      auto o = out->flat<Out>();
      for (int64_t i = 0; i < out_shape.num_elements(); ++i) {
        int64_t ox = 0, oy = 0, rest = i;
        for (int d = out_shape.dims() - 1; d >= 0; --d) {
          const int64_t coord = rest % out_shape.dim_size(d);
          rest /= out_shape.dim_size(d);
          ox += coord * sx[d];
          oy += coord * sy[d];
        }
        o[i] = Fn::Apply(x.flat<std::string>()[ox], y.flat<std::string>()[oy]);
      }
    }
  }
};

}  // namespace flowtrain::cwise_internal

#endif  // FLOWTRAIN_KERNELS_INTERNAL_CWISE_BINARY_OP_H_
