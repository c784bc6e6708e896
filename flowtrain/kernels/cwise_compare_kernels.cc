// Kernels of the comparisons (Less, LessEqual, Greater, GreaterEqual, Equal, NotEqual) and
// the binary logical ops (LogicalAnd, LogicalOr): broadcasting elementwise ops with bool
// outputs, on the shared BinaryCwiseOp template. Equality also compares bools and strings.
#include "flowtrain/kernels/internal/cwise_binary_op.h"

namespace flowtrain {
namespace {

using namespace cwise_internal;  // NOLINT: the shared elementwise machinery

#define FT_COMPARISON_FN(Name, Expr)                                              \
  struct Name {                                                                   \
    static constexpr bool kDivides = false;                                       \
    static constexpr bool kBoolOutput = true;                                     \
    template <typename A, typename B>                                             \
    static auto Apply(const A& a, const B& b) {                                   \
      return ApplyElementwise(a, b, [](auto x, auto y) -> bool { return Expr; }); \
    }                                                                             \
  }
FT_COMPARISON_FN(LessFn, x < y);
FT_COMPARISON_FN(LessEqualFn, x <= y);
FT_COMPARISON_FN(GreaterFn, x > y);
FT_COMPARISON_FN(GreaterEqualFn, x >= y);
#undef FT_COMPARISON_FN

// Equality also compares bools and strings.
#define FT_EQUALITY_FN(Name, Expr)                                                \
  struct Name {                                                                   \
    static constexpr bool kDivides = false;                                       \
    static constexpr bool kBoolOutput = true;                                     \
    static constexpr bool kBoolInputs = true;                                     \
    static constexpr bool kStringInputs = true;                                   \
    template <typename A, typename B>                                             \
    static auto Apply(const A& a, const B& b) {                                   \
      return ApplyElementwise(a, b, [](auto x, auto y) -> bool { return Expr; }); \
    }                                                                             \
  }
FT_EQUALITY_FN(EqualFn, x == y);
FT_EQUALITY_FN(NotEqualFn, x != y);
#undef FT_EQUALITY_FN

#define FT_LOGICAL_FN(Name, Expr)                                                 \
  struct Name {                                                                   \
    static constexpr bool kDivides = false;                                       \
    static constexpr bool kBoolOutput = true;                                     \
    static constexpr bool kBoolInputs = true;                                     \
    static constexpr bool kBoolOnly = true;                                       \
    template <typename A, typename B>                                             \
    static auto Apply(const A& a, const B& b) {                                   \
      return ApplyElementwise(a, b, [](bool x, bool y) -> bool { return Expr; }); \
    }                                                                             \
  }
FT_LOGICAL_FN(LogicalAndFn, x&& y);
FT_LOGICAL_FN(LogicalOrFn, x || y);
#undef FT_LOGICAL_FN

FT_REGISTER_KERNEL("Less", BinaryCwiseOp<LessFn>);
FT_REGISTER_KERNEL("LessEqual", BinaryCwiseOp<LessEqualFn>);
FT_REGISTER_KERNEL("Greater", BinaryCwiseOp<GreaterFn>);
FT_REGISTER_KERNEL("GreaterEqual", BinaryCwiseOp<GreaterEqualFn>);
FT_REGISTER_KERNEL("Equal", BinaryCwiseOp<EqualFn>);
FT_REGISTER_KERNEL("NotEqual", BinaryCwiseOp<NotEqualFn>);
FT_REGISTER_KERNEL("LogicalAnd", BinaryCwiseOp<LogicalAndFn>);
FT_REGISTER_KERNEL("LogicalOr", BinaryCwiseOp<LogicalOrFn>);

}  // namespace
}  // namespace flowtrain
