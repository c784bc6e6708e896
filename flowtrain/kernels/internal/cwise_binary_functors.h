// The functors of the binary elementwise kernels (Add, ..., SquaredDifference) for
// cwise_internal::BinaryCwiseOp: each Apply() takes Eigen arrays and/or scalars, and
// kDivides marks the ones whose kernel rejects integer zero divisors first. Their kernels are
// registered in math_kernels.cc, cwise_arithmetic_kernels.cc and cwise_division_kernels.cc.
//
//   FT_REGISTER_KERNEL("Add", cwise_internal::BinaryCwiseOp<cwise_internal::AddFn>);
//
// Include only in kernel translation units: it instantiates Eigen expressions.
#ifndef FLOWTRAIN_KERNELS_INTERNAL_CWISE_BINARY_FUNCTORS_H_
#define FLOWTRAIN_KERNELS_INTERNAL_CWISE_BINARY_FUNCTORS_H_

#include <cmath>
#include <type_traits>

#include "flowtrain/kernels/internal/cwise_binary_op.h"

namespace flowtrain::cwise_internal {

struct AddFn {
  static constexpr bool kDivides = false;
  static constexpr bool kStringInputs = true;  // string concatenation
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return a + b;
  }
};
struct SubFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return a - b;
  }
};
struct MulFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return a * b;
  }
};
// Integer quotient and remainder for y != 0 (the kernel rejects zero divisors first). The one
// other quotient C++ leaves undefined, min / -1, is 2^(n-1), which does not fit; x86's idiv
// traps on it (SIGFPE) for int32 and int64. It wraps to min instead, as -min does in two's
// complement, and min % -1 is 0: the values TF's integer functors give. The y == -1 branch
// exists only in the integer instantiations; floats keep their vectorized a / b.
template <typename T>
T WrappingDivide(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    if (y == T(-1)) return static_cast<T>(U(0) - static_cast<U>(x));
  }
  return static_cast<T>(x / y);
}
template <typename T>
T WrappingRemainder(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return T(0);
  }
  return static_cast<T>(x % y);
}

// The element type of an Apply() operand: an Eigen array's Scalar, or the scalar itself.
template <typename X, bool = kIsArray<X>>
struct ScalarOfImpl {
  using type = X;
};
template <typename X>
struct ScalarOfImpl<X, true> {
  using type = typename X::Scalar;
};
template <typename X>
using ScalarOf = typename ScalarOfImpl<X>::type;

struct RealDivFn {
  static constexpr bool kDivides = true;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    using T = ScalarOf<A>;  // both operands have the same element type
    if constexpr (std::is_integral_v<T>) {
      return ApplyElementwise(a, b, [](T x, T y) { return WrappingDivide<T>(x, y); });
    } else {
      return a / b;
    }
  }
};
// A dividing functor (its kernel rejects integer zero divisors first) applying `Op()(x, y)`
// element by element.
template <typename Op>
struct ElementwiseDivisionFn {
  static constexpr bool kDivides = true;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto x, auto y) { return Op()(x, y); });
  }
};
// The float type an element computes in (half and bfloat16 in float).
template <typename T>
using ComputeFloat = std::conditional_t<std::is_same_v<T, double>, double, float>;
// Rounds toward zero: integers as C does (min / -1 wraps), floats through trunc(x / y).
struct TruncateDivide {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      return WrappingDivide<T>(x, y);
    } else {
      return static_cast<T>(std::trunc(static_cast<ComputeFloat<T>>(x) / static_cast<ComputeFloat<T>>(y)));
    }
  }
};
// The remainder of TruncateDiv: its sign is x's (C's % and fmod).
struct TruncateModulo {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      return WrappingRemainder<T>(x, y);
    } else {
      return static_cast<T>(std::fmod(static_cast<ComputeFloat<T>>(x), static_cast<ComputeFloat<T>>(y)));
    }
  }
};
struct MaximumFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    if constexpr (kIsArray<A>) {
      return a.max(b);
    } else if constexpr (kIsArray<B>) {
      return b.max(a);
    } else {
      return a < b ? b : a;
    }
  }
};
struct MinimumFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    if constexpr (kIsArray<A>) {
      return a.min(b);
    } else if constexpr (kIsArray<B>) {
      return b.min(a);
    } else {
      return b < a ? b : a;
    }
  }
};
template <typename T>
T FloorDivide(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    const T q = WrappingDivide(x, y);
    // Round toward negative infinity when the signs differ and there is a remainder.
    if constexpr (std::is_signed_v<T>) {
      if ((WrappingRemainder(x, y) != 0) && ((x < 0) != (y < 0))) return q - 1;
    }
    return q;
  } else {
    return static_cast<T>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
  }
}
struct FloorDivFn {
  static constexpr bool kDivides = true;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    if constexpr (kIsArray<A> && kIsArray<B>) {
      using T = typename A::Scalar;
      return a.binaryExpr(b, [](T x, T y) { return FloorDivide<T>(x, y); });
    } else if constexpr (kIsArray<A>) {
      using T = typename A::Scalar;
      const T y = b;
      return a.unaryExpr([y](T x) { return FloorDivide<T>(x, y); });
    } else if constexpr (kIsArray<B>) {
      using T = typename B::Scalar;
      const T x = a;
      return b.unaryExpr([x](T y) { return FloorDivide<T>(x, y); });
    } else {
      return FloorDivide<A>(a, b);
    }
  }
};
// x - floor(x / y) * y: the remainder takes y's sign, as TF's FloorMod (and Python's %).
struct FloorModulo {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      T r = WrappingRemainder(x, y);
      if constexpr (std::is_signed_v<T>) {
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
      }
      return r;
    } else {
      using F = ComputeFloat<T>;
      const F fx = static_cast<F>(x), fy = static_cast<F>(y);
      F r = std::fmod(fx, fy);
      if (r != 0 && ((r < 0) != (fy < 0))) r += fy;
      return static_cast<T>(r);
    }
  }
};
using TruncateDivFn = ElementwiseDivisionFn<TruncateDivide>;
using TruncateModFn = ElementwiseDivisionFn<TruncateModulo>;
using FloorModFn = ElementwiseDivisionFn<FloorModulo>;
struct DivNoNanFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto x, auto y) {
      using T = decltype(x);
      return y == T(0) ? T(0) : static_cast<T>(x / y);
    });
  }
};
// TanhGrad(y, dy) = dy * (1 - y^2); SigmoidGrad(y, dy) = dy * y * (1 - y).
struct TanhGradFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto y, auto dy) {
      using T = decltype(y);
      return static_cast<T>(dy * (T(1) - y * y));
    });
  }
};
struct SigmoidGradFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto y, auto dy) {
      using T = decltype(y);
      return static_cast<T>(dy * (y * (T(1) - y)));
    });
  }
};

template <typename T>
T PowScalar(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    // Exponentiation by squaring; negative exponents are rejected before.
    T result = 1;
    for (T base = x, e = y; e > 0; e >>= 1, base *= base) {
      if (e & 1) result *= base;
    }
    return result;
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return std::pow(x, y);
  } else {
    return static_cast<T>(std::pow(static_cast<float>(x), static_cast<float>(y)));
  }
}
struct PowFn {
  static constexpr bool kDivides = false;
  static constexpr bool kNoNegativeIntegerExponent = true;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto x, auto y) { return PowScalar<decltype(x)>(x, y); });
  }
};
struct SquaredDifferenceFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    if constexpr (kIsArray<A> || kIsArray<B>) {
      return (a - b).square();
    } else {
      return (a - b) * (a - b);
    }
  }
};

}  // namespace flowtrain::cwise_internal

#endif  // FLOWTRAIN_KERNELS_INTERNAL_CWISE_BINARY_FUNCTORS_H_
