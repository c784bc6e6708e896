// Math ops: unary functions, Pow/SquaredDifference, comparisons and logical ops, ArgMax/ArgMin,
// BatchMatMul, Cumsum/Cumprod and the Max/Min/Prod reduction gradients — kernel values,
// broadcasting, build-time shape inference and errors, and float64 finite-difference checks
// of every gradient.
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;
using testing::Values;

class MathOpsTest : public ::testing::Test {
 protected:
  Graph g_;
  ScopeGuard as_default_ = g_.AsDefault();
  Output In(const TensorShape& shape, std::string_view name = "x") {
    return ops::Placeholder(DT_DOUBLE, shape, name);
  }
  Tensor Run(Output y, const FeedList& feeds = {}) {
    Session sess(g_);
    return sess.Run(feeds, {y})[0];
  }
};

// ---- Unary ops ----

TEST_F(MathOpsTest, UnaryKernelsMatchTheStandardLibrary) {
  const std::vector<float> in = {0.25f, 0.5f, 1.5f, 3.0f};
  Output x = ops::Const<float>(in, TensorShape({2, 2}));
  struct Case {
    Output y;
    float (*expected)(float);
  };
  std::vector<Case> cases = {
      {ops::Abs(ops::Neg(x)), [](float v) { return v; }},
      {ops::Square(x), [](float v) { return v * v; }},
      {ops::Sqrt(x), [](float v) { return std::sqrt(v); }},
      {ops::Rsqrt(x), [](float v) { return 1 / std::sqrt(v); }},
      {ops::Exp(x), [](float v) { return std::exp(v); }},
      {ops::Log(x), [](float v) { return std::log(v); }},
      {ops::Log1p(x), [](float v) { return std::log1p(v); }},
      {ops::Tanh(x), [](float v) { return std::tanh(v); }},
      {ops::Cos(x), [](float v) { return std::cos(v); }},
      {ops::Sin(x), [](float v) { return std::sin(v); }},
      {ops::Sigmoid(x), [](float v) { return 1 / (1 + std::exp(-v)); }},
      {ops::Softplus(x), [](float v) { return std::log1p(std::exp(v)); }},
      {ops::Reciprocal(x), [](float v) { return 1 / v; }},
      {ops::Sign(ops::Neg(x)), [](float) { return -1.0f; }},
  };
  Session sess(g_);
  for (const Case& c : cases) {
    const Tensor out = c.y.Eval(sess);
    ASSERT_EQ(out.shape(), TensorShape({2, 2})) << c.y.op().type();
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(out.flat<float>()[i], c.expected(in[i]), 1e-5 * std::max(1.0f, std::abs(c.expected(in[i]))))
          << c.y.op().type() << " at " << in[i];
    }
  }
}

TEST_F(MathOpsTest, SoftplusIsStableForLargeMagnitudes) {
  Output y = ops::Softplus(ops::Const<float>({-100.0f, 0.0f, 100.0f}));
  const Tensor out = Run(y);
  EXPECT_NEAR(out.flat<float>()[0], std::exp(-100.0f), 1e-40f);
  EXPECT_NEAR(out.flat<float>()[1], std::log(2.0f), 1e-6f);
  EXPECT_EQ(out.flat<float>()[2], 100.0f);
}

TEST_F(MathOpsTest, UnaryIntegerAndHalfKernels) {
  Output i = ops::Const<int32_t>({-3, 0, 4});
  Session sess(g_);
  EXPECT_EQ(Values<int32_t>(ops::Abs(i).Eval(sess)), (std::vector<int32_t>{3, 0, 4}));
  EXPECT_EQ(Values<int32_t>(ops::Square(i).Eval(sess)), (std::vector<int32_t>{9, 0, 16}));
  EXPECT_EQ(Values<int32_t>(ops::Sign(i).Eval(sess)), (std::vector<int32_t>{-1, 0, 1}));
  Output h = ops::Cast(ops::Const<float>({0.0f, 1.0f}), DT_HALF);
  const Tensor e = ops::Cast(ops::Exp(h), DT_FLOAT).Eval(sess);
  EXPECT_NEAR(e.flat<float>()[1], std::exp(1.0f), 3e-3f);
  // Sqrt is not defined for integers: a build-time dtype error naming the op.
  ExpectInvalidArgument([&] { ops::Sqrt(i); }, "Sqrt");
  ExpectInvalidArgument([&] { ops::Cos(i); }, "Cos");
}

TEST_F(MathOpsTest, LargeUnaryInputsAreSplitAcrossThePool) {
  const int64_t n = 1 << 18;
  Output x = ops::Placeholder(DT_FLOAT, {n});
  Tensor v(DT_FLOAT, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) v.flat<float>()[i] = static_cast<float>(i % 100) / 10.0f;
  const Tensor out = Run(ops::Tanh(x), {{x, v}});
  for (int64_t i = 0; i < n; i += 997) {
    ASSERT_NEAR(out.flat<float>()[i], std::tanh(v.flat<float>()[i]), 1e-6f) << i;
  }
}

TEST_F(MathOpsTest, UnaryGradients) {
  Output x = In({2, 3});
  const Tensor any = RandomDoubles({2, 3}, 3);
  const Tensor positive = RandomDoubles({2, 3}, 4, 0.5, 2.0);
  EXPECT_LT(ComputeGradientError({x}, {positive}, ops::Abs(x)), 1e-8);
  Tensor negative = positive.DeepCopy();
  for (double& v : negative.flat<double>()) v = -v;
  EXPECT_LT(ComputeGradientError({x}, {negative}, ops::Abs(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Square(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {positive}, ops::Sqrt(x)), 1e-7);
  EXPECT_LT(ComputeGradientError({x}, {positive}, ops::Rsqrt(x)), 1e-7);
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Exp(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {positive}, ops::Log(x)), 1e-7);
  EXPECT_LT(ComputeGradientError({x}, {positive}, ops::Log1p(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Tanh(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Cos(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Sin(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Sin(ops::Cos(x) * x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Sigmoid(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Softplus(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {positive}, ops::Reciprocal(x)), 1e-7);
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Sign(x) * x), 1e-8);
  // A chain: d/dx log(sigmoid(x)^2).
  EXPECT_LT(ComputeGradientError({x}, {any}, ops::Log(ops::Square(ops::Sigmoid(x)))), 1e-7);
}

// ---- Binary math ----

TEST_F(MathOpsTest, PowAndSquaredDifferenceWithBroadcasting) {
  Output x = ops::Const<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Output e = ops::Const<float>({2, 0.5f, 1});
  Session sess(g_);
  const Tensor p = ops::Pow(x, e).Eval(sess);
  EXPECT_EQ(p.shape(), TensorShape({2, 3}));
  EXPECT_FLOAT_EQ(p.flat<float>()[0], 1.0f);
  EXPECT_FLOAT_EQ(p.flat<float>()[1], std::sqrt(2.0f));
  EXPECT_FLOAT_EQ(p.flat<float>()[3], 16.0f);
  const Tensor d = ops::SquaredDifference(x, ops::Const(2.0f)).Eval(sess);
  EXPECT_EQ(Values<float>(d), (std::vector<float>{1, 0, 1, 4, 9, 16}));
  EXPECT_EQ(Values<int32_t>(ops::Pow(ops::Const<int32_t>({2, 3, -2}), ops::Const(int32_t{3})).Eval(sess)),
            (std::vector<int32_t>{8, 27, -8}));
  Output bad = ops::Pow(ops::Const<int32_t>({2}), ops::Const<int32_t>({-1}));
  ExpectInvalidArgument([&] { bad.Eval(sess); }, "Integers to negative integer powers are not allowed");
}

TEST_F(MathOpsTest, BinaryGradientsWithBroadcasting) {
  Output x = In({2, 3}, "x");
  Output y = In({3}, "y");
  const Tensor xv = RandomDoubles({2, 3}, 5, 0.5, 2.0);
  const Tensor yv = RandomDoubles({3}, 6, -1.5, 1.5);
  EXPECT_LT(ComputeGradientError({x, y}, {xv, yv}, ops::Pow(x, y)), 1e-7);
  EXPECT_LT(ComputeGradientError({x, y}, {xv, yv}, ops::SquaredDifference(x, y)), 1e-8);
  // Distinct values so no element ties (where the gradient is not defined).
  const Tensor xm = RandomDoubles({2, 3}, 7);
  const Tensor ym = RandomDoubles({3}, 8);
  EXPECT_LT(ComputeGradientError({x, y}, {xm, ym}, ops::Maximum(x, y)), 1e-8);
  EXPECT_LT(ComputeGradientError({x, y}, {xm, ym}, ops::Minimum(x, y)), 1e-8);
  Output s = In({}, "s");
  EXPECT_LT(ComputeGradientError({s, y}, {RandomDoubles({}, 9, 0.5, 2.0), yv}, ops::Pow(s, y)), 1e-7);
}

// FloorMod and Floor follow Python's floor semantics (TF's values: the remainder has y's sign);
// DivNoNan is 0 where y is 0; TanhGrad/SigmoidGrad are the gradients TF's graphs use.
TEST_F(MathOpsTest, FloorModFloorDivNoNanAndActivationGrads) {
  Session sess(g_);
  EXPECT_EQ(Values<int32_t>(
                ops::FloorMod(ops::Const<int32_t>({7, -7, 7, -7, 0}), ops::Const<int32_t>({3, 3, -3, -3, 5}))
                    .Eval(sess)),
            (std::vector<int32_t>{1, 2, -2, -1, 0}));
  EXPECT_EQ(Values<int64_t>(ops::FloorMod(ops::Const<int64_t>({10, -1}), ops::Const(int64_t{4})).Eval(sess)),
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(
      Values<float>(
          ops::FloorMod(ops::Const<float>({5.5f, -5.5f, 5.5f}), ops::Const<float>({2, 2, -2})).Eval(sess)),
      (std::vector<float>{1.5f, 0.5f, -0.5f}));
  ExpectInvalidArgument([&] { ops::FloorMod(ops::Const<int32_t>({1}), ops::Const<int32_t>({0})).Eval(sess); },
                        {"zero"});
  EXPECT_EQ(Values<float>(ops::Floor(ops::Const<float>({1.5f, -1.5f, 2.0f, -0.0f})).Eval(sess)),
            (std::vector<float>{1, -2, 2, -0.0f}));
  EXPECT_EQ(Values<float>(ops::Ceil(ops::Const<float>({1.5f, -1.5f, 2.0f, -0.25f})).Eval(sess)),
            (std::vector<float>{2, -1, 2, -0.0f}));
  EXPECT_EQ(Values<float>(
                ops::DivNoNan(ops::Const<float>({1, 0, -3, 6}), ops::Const<float>({0, 0, 2, 3})).Eval(sess)),
            (std::vector<float>{0, 0, -1.5f, 2}));
  EXPECT_EQ(Values<float>(ops::TanhGrad(ops::Const<float>({0.5f, -1}), ops::Const<float>({2, 3})).Eval(sess)),
            (std::vector<float>{1.5f, 0}));
  EXPECT_EQ(
      Values<float>(ops::SigmoidGrad(ops::Const<float>({0.5f, 0.25f}), ops::Const<float>({4, 2})).Eval(sess)),
      (std::vector<float>{1, 0.375f}));
}

// Integer division never traps: a zero divisor is TF's InvalidArgument on every path (same
// shape, scalar divisor or dividend, broadcast), and min / -1, whose quotient 2^(n-1) does not
// fit (x86's idiv raises SIGFPE), wraps to min with remainder 0.
template <typename T>
void ExpectSafeIntegerDivision(Session& sess) {
  constexpr T kMin = std::numeric_limits<T>::min();
  using Binary = Output (*)(Output, Output, std::string_view);
  std::vector<std::pair<Binary, std::string>> divisions = {{ops::RealDiv, "RealDiv"},
                                                           {ops::FloorDiv, "FloorDiv"},
                                                           {ops::FloorMod, "FloorMod"},
                                                           {ops::Div, "Div"},
                                                           {ops::TruncateDiv, "TruncateDiv"}};
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
    divisions.push_back({ops::TruncateMod, "TruncateMod"});
    divisions.push_back({ops::Mod, "Mod"});
  }
  for (const auto& [op, name] : divisions) {
    SCOPED_TRACE(name);
    ExpectInvalidArgument(
        [&] {
          op(ops::Const<T>({1, 2}), ops::Const<T>({1, 0}), name).Eval(sess);
        },
        {"Integer division by zero", name});
    ExpectInvalidArgument(
        [&] {
          op(ops::Const<T>({1, 2}), ops::Const<T>(T(0)), name).Eval(sess);
        },
        {"Integer division by zero"});
    ExpectInvalidArgument(
        [&] {
          op(ops::Const<T>(T(1)), ops::Const<T>({3, 0}), name).Eval(sess);
        },
        {"Integer division by zero"});
    ExpectInvalidArgument(
        [&] {
          op(ops::Const<T>({1, 2, 3, 4}, TensorShape({2, 2})), ops::Const<T>({0, 1}, TensorShape({2, 1})),
             name)
              .Eval(sess);
        },
        {"Integer division by zero"});
  }
  if constexpr (std::is_signed_v<T>) {
    // Same shape, scalar divisor, scalar dividend and a broadcast (including its strided loop).
    const std::vector<T> x = {kMin, kMin, 7, -7};
    const std::vector<T> y = {-1, 2, -1, 2};
    EXPECT_EQ(
        Values<T>(
            ops::RealDiv(ops::Const<T>(x, TensorShape({4})), ops::Const<T>(y, TensorShape({4}))).Eval(sess)),
        (std::vector<T>{kMin, static_cast<T>(kMin / 2), -7, -3}));
    EXPECT_EQ(
        Values<T>(
            ops::FloorDiv(ops::Const<T>(x, TensorShape({4})), ops::Const<T>(y, TensorShape({4}))).Eval(sess)),
        (std::vector<T>{kMin, static_cast<T>(kMin / 2), -7, -4}));
    EXPECT_EQ(
        Values<T>(
            ops::FloorMod(ops::Const<T>(x, TensorShape({4})), ops::Const<T>(y, TensorShape({4}))).Eval(sess)),
        (std::vector<T>{0, 0, 0, 1}));
    // Rounding toward zero, as TF computes: Div(-7, 2) = TruncateDiv(-7, 2) = -3, and the
    // remainder takes x's sign.
    for (auto truncating : {ops::Div, ops::TruncateDiv}) {
      EXPECT_EQ(
          Values<T>(truncating(ops::Const<T>(x, TensorShape({4})), ops::Const<T>(y, TensorShape({4})), "t")
                        .Eval(sess)),
          (std::vector<T>{kMin, static_cast<T>(kMin / 2), -7, -3}));
    }
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      for (auto remainder : {ops::TruncateMod, ops::Mod}) {
        EXPECT_EQ(
            Values<T>(
                remainder(ops::Const<T>({kMin, -7, 7, -7}), ops::Const<T>({-1, 2, -2, -2}), "r").Eval(sess)),
            (std::vector<T>{0, -1, 1, -1}));
      }
    }
    EXPECT_EQ(Values<T>(ops::FloorDiv(ops::Const<T>({kMin, 6}), ops::Const<T>(T(-1))).Eval(sess)),
              (std::vector<T>{kMin, -6}));
    EXPECT_EQ(Values<T>(ops::FloorMod(ops::Const<T>({kMin, 6}), ops::Const<T>(T(-1))).Eval(sess)),
              (std::vector<T>{0, 0}));
    EXPECT_EQ(Values<T>(ops::RealDiv(ops::Const<T>(kMin), ops::Const<T>({-1, 1})).Eval(sess)),
              (std::vector<T>{kMin, kMin}));
    EXPECT_EQ(Values<T>(ops::FloorDiv(ops::Const<T>({kMin, 5, kMin, 5}, TensorShape({2, 2})),
                                      ops::Const<T>({-1, 2}, TensorShape({1, 2})))
                            .Eval(sess)),
              (std::vector<T>{kMin, 2, kMin, 2}));
    EXPECT_EQ(Values<T>(ops::FloorMod(ops::Const<T>({kMin, kMin, 5, 5}, TensorShape({2, 2})),
                                      ops::Const<T>({-1, 3}, TensorShape({2, 1})))
                            .Eval(sess)),
              (std::vector<T>{0, 0, 2, 2}));
    EXPECT_EQ(Values<T>(ops::FloorDiv(ops::Const<T>({kMin, 5}, TensorShape({2, 1, 1})),
                                      ops::Const<T>({-1, -1}, TensorShape({1, 2, 1})))
                            .Eval(sess)),
              (std::vector<T>{kMin, kMin, -5, -5}));
  }
}

TEST_F(MathOpsTest, IntegerDivisionByZeroAndMinByMinusOneDoNotCrash) {
  Session sess(g_);
  ExpectSafeIntegerDivision<int32_t>(sess);
  ExpectSafeIntegerDivision<int64_t>(sess);
  ExpectSafeIntegerDivision<int16_t>(sess);
  ExpectSafeIntegerDivision<int8_t>(sess);
  ExpectSafeIntegerDivision<uint8_t>(sess);
  // Floats still divide by zero IEEE's way.
  const Tensor inf = ops::RealDiv(ops::Const<float>({1, -1}), ops::Const<float>(0.0f)).Eval(sess);
  EXPECT_EQ(Values<float>(inf), (std::vector<float>{std::numeric_limits<float>::infinity(),
                                                    -std::numeric_limits<float>::infinity()}));
}

TEST_F(MathOpsTest, FloorModDivNoNanAndActivationGradGradients) {
  Output x = In({2, 3}, "x");
  Output y = In({3}, "y");
  // Away from the jumps of floor(x / y).
  const Tensor xv = Tensor::FromVector<double>({0.3, 2.7, -1.5, 5.2, -3.3, 0.9}, TensorShape({2, 3}));
  const Tensor yv = Tensor::FromVector<double>({1.1, -0.8, 0.7});
  EXPECT_LT(ComputeGradientError({x, y}, {xv, yv}, ops::FloorMod(x, y)), 1e-8);
  EXPECT_LT(ComputeGradientError({x, y}, {xv, yv}, ops::DivNoNan(x, y)), 1e-7);
  Output a = In({2, 3}, "a");
  Output b = In({2, 3}, "b");
  const Tensor av = RandomDoubles({2, 3}, 11, -0.9, 0.9);
  const Tensor bv = RandomDoubles({2, 3}, 12);
  EXPECT_LT(ComputeGradientError({a, b}, {av, bv}, ops::TanhGrad(a, b)), 1e-8);
  EXPECT_LT(ComputeGradientError({a, b}, {av, bv}, ops::SigmoidGrad(a, b)), 1e-8);
  // DivNoNan's gradient is 0 (not NaN) where y == 0.
  Session sess(g_);
  Output z = ops::Placeholder(DT_DOUBLE, {2}, "z");
  const auto grads = ops::Gradients({ops::DivNoNan(ops::Const<double>({1, 2}), z)}, {z});
  const Tensor g = sess.Run({{z, Tensor::FromVector<double>({0, 2})}}, {grads[0]})[0];
  EXPECT_EQ(Values<double>(g), (std::vector<double>{0, -0.5}));
}

// TF's losses reduce over Range(0, Rank(x)): axes known only when the graph runs.
TEST_F(MathOpsTest, SumAndMeanGradientsWithAxesKnownOnlyAtRunTime) {
  Output x = In({2, 3, 2}, "x");
  Output axes = ops::Placeholder(DT_INT32, {-1}, "axes");
  const Tensor xv = RandomDoubles({2, 3, 2}, 21);
  for (const std::vector<int32_t>& a : {std::vector<int32_t>{1}, {-1, 0}, {0, 1, 2}, {}}) {
    GradientCheckOptions options;
    options.extra_feeds = {{axes, Tensor::FromVector<int32_t>(a)}};
    EXPECT_LT(ComputeGradientError({x}, {xv}, ops::Sum(x, axes), options), 1e-8) << a.size();
    EXPECT_LT(ComputeGradientError({x}, {xv}, ops::Mean(x, axes), options), 1e-8) << a.size();
    EXPECT_LT(ComputeGradientError({x}, {xv}, ops::Sum(x, axes, /*keep_dims=*/true), options), 1e-8);
  }
  // As tf.losses builds it: Sum over Range(0, Rank(x)).
  Output all = ops::Sum(x * x, ops::Range(ops::Const(int32_t{0}), ops::Rank(x), ops::Const(int32_t{1})));
  EXPECT_LT(ComputeGradientError({x}, {xv}, all), 1e-8);
  // A scalar reduced over Range(0, 0): no axes at all.
  Output s = In({}, "s");
  Output none = ops::Sum(s * s, ops::Range(ops::Const(int32_t{0}), ops::Rank(s), ops::Const(int32_t{1})));
  EXPECT_LT(ComputeGradientError({s}, {RandomDoubles({}, 22)}, none), 1e-8);
}

TEST_F(MathOpsTest, PowGradientWithRespectToExponentIsZeroForNonPositiveBase) {
  Output x = ops::Const<double>({0.0, -2.0, 2.0});
  Output y = In({3}, "y");
  std::vector<Output> g = ops::Gradients({ops::Pow(x, y)}, {y});
  const Tensor gv = Run(g[0], {{y, Tensor::FromVector<double>({2.0, 2.0, 2.0})}});
  EXPECT_EQ(gv.flat<double>()[0], 0.0);
  EXPECT_EQ(gv.flat<double>()[1], 0.0);
  EXPECT_NEAR(gv.flat<double>()[2], 4.0 * std::log(2.0), 1e-12);
}

// ---- Comparisons and logical ops ----

TEST_F(MathOpsTest, ComparisonsBroadcastToBool) {
  Output x = ops::Const<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Output row = ops::Const<float>({2, 2, 6});
  Output col = ops::Const<float>({3, 4}, TensorShape({2, 1}));
  Session sess(g_);
  auto check = [&](Output y, std::vector<bool> expected) {
    EXPECT_EQ(y.dtype(), DT_BOOL);
    const Tensor t = y.Eval(sess);
    ASSERT_EQ(t.NumElements(), static_cast<int64_t>(expected.size())) << y.op().type();
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(t.flat<bool>()[i], expected[i]) << y.op().type() << " " << i;
  };
  check(ops::Less(x, row), {true, false, true, false, false, false});
  check(ops::LessEqual(x, row), {true, true, true, false, false, true});
  check(ops::Greater(x, col), {false, false, false, false, true, true});
  check(ops::GreaterEqual(x, ops::Const(3.0f)), {false, false, true, true, true, true});
  check(ops::Equal(ops::Const(2.0f), x), {false, true, false, false, false, false});
  check(ops::NotEqual(x, col), {true, true, false, false, true, true});
  check(ops::Equal(ops::Const<int64_t>({7, 8}), ops::Const<int64_t>({7, 9})), {true, false});
  check(ops::Equal(ops::Const<std::string>({"a", "b"}), ops::Const("b")), {false, true});
  check(ops::NotEqual(ops::Const<bool>({true, false}), ops::Const(true)), {false, true});
  Output a = ops::Const<bool>({true, true, false, false});
  Output b = ops::Const<bool>({true, false, true, false});
  check(ops::LogicalAnd(a, b), {true, false, false, false});
  check(ops::LogicalOr(a, b), {true, true, true, false});
  check(ops::LogicalAnd(a, ops::Const(true)), {true, true, false, false});
  EXPECT_EQ(ops::Less(x, row).shape().DebugString(), "[2,3]");
  EXPECT_EQ(ops::Less(x, col).shape().DebugString(), "[2,3]");
}

TEST_F(MathOpsTest, OperatorsFollowTheTfPythonOverloads) {
  Output x = ops::Const<float>({1, 2, 3});
  Output y = ops::Const<float>({2, 2, 2});
  Output lt = x<y, le = x <= y, gt = x> y, ge = x >= y;
  EXPECT_EQ(lt.op().type(), "Less");
  EXPECT_EQ(le.op().type(), "LessEqual");
  EXPECT_EQ(gt.op().type(), "Greater");
  EXPECT_EQ(ge.op().type(), "GreaterEqual");
  Output both = lt & ~ge;
  Output either = lt | gt;
  EXPECT_EQ(both.op().type(), "LogicalAnd");
  EXPECT_EQ(either.op().type(), "LogicalOr");
  EXPECT_EQ(both.op().input(1).op().type(), "LogicalNot");
  EXPECT_EQ(lt.op().name(), "Less");
  EXPECT_EQ((x < y).op().name(), "Less_1");
  Session sess(g_);
  const Tensor t = either.Eval(sess);
  EXPECT_EQ(t.flat<bool>()[0], true);
  EXPECT_EQ(t.flat<bool>()[1], false);
  EXPECT_EQ(t.flat<bool>()[2], true);
  // The handles still compare as handles.
  EXPECT_TRUE(x == x);
  EXPECT_FALSE(x == y);
}

TEST_F(MathOpsTest, ComparisonsAndLogicalOpsRejectBadInputs) {
  Output f = ops::Const<float>({1, 2, 3});
  ExpectInvalidArgument(
      [&] {
        ops::Less(f, ops::Const<float>({1, 2}));
      },
      "Dimensions must be equal, but are 3 and 2 for 'Less' (op: 'Less')");
  ExpectInvalidArgument([&] { ops::Less(f, ops::Const<int32_t>({1, 2, 3})); }, "Less");
  ExpectInvalidArgument([&] { ops::LogicalAnd(f, f); }, "LogicalAnd");
  ExpectInvalidArgument([&] { ops::Less(ops::Const<bool>({true}), ops::Const<bool>({false})); },
                        "is not in the list of allowed values");
  // Shapes only known at run time.
  Output p = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "p");
  Output q = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "q");
  Output less = ops::Less(p, q);
  Session sess(g_);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{p, Tensor::FromVector<float>({1, 2, 3})}, {q, Tensor::FromVector<float>({1, 2})}}, {less});
      },
      "Incompatible shapes: [3] vs. [2]");
}

// ---- ArgMax / ArgMin ----

TEST_F(MathOpsTest, ArgMaxArgMin) {
  Output x = ops::Const<float>({1, 9, 3, 9, 0, 2}, TensorShape({2, 3}));
  Session sess(g_);
  Output am0 = ops::ArgMax(x, 0);
  EXPECT_EQ(am0.dtype(), DT_INT64);
  EXPECT_EQ(am0.shape().DebugString(), "[3]");
  EXPECT_EQ(Values<int64_t>(am0.Eval(sess)), (std::vector<int64_t>{1, 0, 0}));
  // Ties keep the first index.
  EXPECT_EQ(Values<int64_t>(ops::ArgMax(ops::Const<float>({9, 1, 9}), 0).Eval(sess)),
            (std::vector<int64_t>{0}));
  Output am1 = ops::ArgMax(x, -1, DT_INT32);
  EXPECT_EQ(am1.dtype(), DT_INT32);
  EXPECT_EQ(Values<int32_t>(am1.Eval(sess)), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(Values<int64_t>(ops::ArgMin(x, 1).Eval(sess)), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Values<int64_t>(ops::ArgMin(ops::Const<int32_t>({5, -2, 7}), 0).Eval(sess)),
            (std::vector<int64_t>{1}));
  ExpectInvalidArgument([&] { ops::ArgMax(x, 2); }, "Expected dimension in the range [-2, 2), but got 2");
  ExpectInvalidArgument([&] { ops::ArgMax(x, ops::Const(int32_t{0}), DT_FLOAT); }, "output_type");
  Output axis = ops::Placeholder(DT_INT32, PartialTensorShape({}), "axis");
  Output dynamic = ops::ArgMax(x, axis);
  EXPECT_EQ(dynamic.shape().DebugString(), "[?]");
  ExpectInvalidArgument(
      [&] {
        sess.Run({{axis, Tensor::Scalar<int32_t>(5)}}, {dynamic});
      },
      "Expected dimension in the range [-2, 2), but got 5");
  // No gradient flows through an index.
  Output xd = In({3});
  EXPECT_FALSE(ops::Gradients({ops::Cast(ops::ArgMax(xd, 0), DT_DOUBLE)}, {xd})[0]);
}

// ---- MatMul split over the intra-op pool ----

// Products big enough for Gemm to split into chunks claimed by two threads (the operand every
// chunk needs packed by each thread, or when over 512 KB once, in pieces the threads claim):
// by rows (m >= n; a shared op(b) in several pieces of columns, the last one a narrow panel)
// and by column panels (op(a) in several row groups, own and shared), depth over one packing
// block, every transpose combination, against a float64 reference.
// TF 2.x writes MatMul's grad_a/grad_b; flowtrain imports them, and leaves them out of the
// GraphDefs it writes while they are at their default, which TF 1.15 (no such attrs) imports.
TEST_F(MathOpsTest, MatMulAcceptsTf2AttrsAndExportsThemOnlyWhenSet) {
  Output a = ops::Const<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  ops::MatMul(a, a, false, false, "plain");
  tensorflow::GraphDef def = g_.ToGraphDef();
  const tensorflow::NodeDef* plain = nullptr;
  for (const auto& n : def.node())
    if (n.name() == "plain") plain = &n;
  ASSERT_NE(plain, nullptr);
  EXPECT_TRUE(plain->attr().contains("transpose_a"));
  EXPECT_FALSE(plain->attr().contains("grad_a"));
  EXPECT_FALSE(plain->attr().contains("grad_b"));

  tensorflow::NodeDef marked = *plain;
  marked.set_name("marked");
  (*marked.mutable_attr())["grad_b"].set_b(true);
  *def.add_node() = marked;
  Graph imported;
  ImportGraphDef(def, &imported);
  ASSERT_NE(imported.FindNode("marked"), nullptr);
  ASSERT_NE(imported.FindNode("plain"), nullptr);
  EXPECT_TRUE(imported.FindNode("marked")->GetAttr<bool>("grad_b"));
  EXPECT_FALSE(imported.FindNode("plain")->GetAttr<bool>("grad_a"));  // the default
  bool exported_marked = false;
  const tensorflow::GraphDef exported = imported.ToGraphDef();
  for (const auto& n : exported.node()) {
    if (n.name() == "marked") exported_marked = n.attr().contains("grad_b") && n.attr().at("grad_b").b();
  }
  EXPECT_TRUE(exported_marked);
  Session sess(imported);
  EXPECT_EQ(Values<float>(sess.Run({}, {"marked:0"}, {})[0]), (std::vector<float>{7, 10, 15, 22}));
}

TEST_F(MathOpsTest, MatMulSplitOverThreadsMatchesReference) {
  struct Shape {
    int64_t m, n, k;
  };
  SessionOptions options;
  options.config.intra_op_parallelism_threads = 2;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  // One product per shape, stored in each of the four layouts: the reference (a plain loop,
  // slow in the unoptimised sanitizer build) is computed once.
  auto transposed = [](const std::vector<float>& m, int64_t rows, int64_t cols) {
    std::vector<float> t(m.size());
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = m[i * cols + j];
    }
    return t;
  };
  for (const Shape& s : {Shape{203, 70, 600}, Shape{700, 520, 600}, Shape{30, 517, 530}, Shape{130, 600, 530},
                         Shape{200, 900, 700}, Shape{13, 1000, 130}, Shape{260, 10, 700}}) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    std::vector<double> expected(s.m * s.n, 0.0);
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t p = 0; p < s.k; ++p) {
        const double a_ip = a[i * s.k + p];
        for (int64_t j = 0; j < s.n; ++j) expected[i * s.n + j] += a_ip * b[p * s.n + j];
      }
    }
    const std::vector<float> a_t = transposed(a, s.m, s.k), b_t = transposed(b, s.k, s.n);
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        SCOPED_TRACE(StrCat(s.m, "x", s.n, "x", s.k, ta ? " A^T" : "", tb ? " B^T" : ""));
        Graph g;
        auto as_default = g.AsDefault();
        Output x = ops::Const<float>(ta ? a_t : a, ta ? TensorShape({s.k, s.m}) : TensorShape({s.m, s.k}));
        Output y = ops::Const<float>(tb ? b_t : b, tb ? TensorShape({s.n, s.k}) : TensorShape({s.k, s.n}));
        Session sess(g, options);
        const Tensor out = ops::MatMul(x, y, ta, tb).Eval(sess);
        ASSERT_EQ(out.shape(), TensorShape({s.m, s.n}));
        for (int64_t i = 0; i < s.m * s.n; ++i) {
          ASSERT_NEAR(out.flat<float>()[i], expected[i], 1e-4 * (1 + std::sqrt(double(s.k))))
              << "at (" << i / s.n << ", " << i % s.n << ")";
        }
      }
    }
  }
}

// ---- BatchMatMul ----

TEST_F(MathOpsTest, BatchMatMulValuesAndShapes) {
  // Two batches of [2,3] x [3,2].
  std::vector<float> a(12), b(12);
  for (int i = 0; i < 12; ++i) {
    a[i] = static_cast<float>(i + 1);
    b[i] = static_cast<float>(12 - i);
  }
  Output x = ops::Const<float>(a, TensorShape({2, 2, 3}));
  Output y = ops::Const<float>(b, TensorShape({2, 3, 2}));
  Output z = ops::BatchMatMul(x, y);
  EXPECT_EQ(z.shape().DebugString(), "[2,2,2]");
  Session sess(g_);
  const Tensor out = z.Eval(sess);
  for (int batch = 0; batch < 2; ++batch) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        float expected = 0;
        for (int k = 0; k < 3; ++k) expected += a[batch * 6 + i * 3 + k] * b[batch * 6 + k * 2 + j];
        EXPECT_EQ(out.flat<float>()[batch * 4 + i * 2 + j], expected);
      }
    }
  }
  // Adjoints: x^T y^T of [2,3,2] and [2,2,3] operands gives the same shapes back.
  Output xt = ops::Transpose(x, {0, 2, 1});
  Output yt = ops::Transpose(y, {0, 2, 1});
  const Tensor adj = ops::BatchMatMul(xt, yt, true, true).Eval(sess);
  EXPECT_EQ(Values<float>(adj), Values<float>(out));
  // V2 broadcasts the batch dimensions: [2,1,2,3] x [4,3,2] -> [2,4,2,2]; with y all ones
  // every entry is the sum of a row of x.
  Output x4 = ops::Reshape(x, {2, 1, 2, 3});
  Output ones = ops::Const<float>(std::vector<float>(24, 1), TensorShape({4, 3, 2}));
  Output z2 = ops::BatchMatMulV2(x4, ones);
  EXPECT_EQ(z2.shape().DebugString(), "[2,4,2,2]");
  const Tensor v2 = z2.Eval(sess);
  ASSERT_EQ(v2.shape(), TensorShape({2, 4, 2, 2}));
  for (int batch = 0; batch < 2; ++batch) {
    for (int copy = 0; copy < 4; ++copy) {
      for (int i = 0; i < 2; ++i) {
        const float row_sum = a[batch * 6 + i * 3] + a[batch * 6 + i * 3 + 1] + a[batch * 6 + i * 3 + 2];
        EXPECT_EQ(v2.flat<float>()[((batch * 4 + copy) * 2 + i) * 2 + 1], row_sum);
      }
    }
  }
}

TEST_F(MathOpsTest, BatchMatMulErrors) {
  Output x = ops::Const<float>(std::vector<float>(12, 1), TensorShape({2, 2, 3}));
  ExpectInvalidArgument(
      [&] {
        ops::BatchMatMul(x, ops::Const<float>(std::vector<float>(16, 1), TensorShape({2, 4, 2})));
      },
      "Dimensions must be equal, but are 3 and 4 for 'BatchMatMul'");
  ExpectInvalidArgument(
      [&] {
        ops::BatchMatMul(x, ops::Const<float>(std::vector<float>(18, 1), TensorShape({3, 3, 2})));
      },
      "BatchMatMul");
  ExpectInvalidArgument(
      [&] {
        ops::BatchMatMul(ops::Const<float>({1, 2}), x);
      },
      "Shape must be at least rank 2");
  ExpectInvalidArgument(
      [&] {
        ops::MatMul(ops::Const<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})),
                    ops::Const<float>({1, 2, 3, 4}, TensorShape({2, 2})));
      },
      "Dimensions must be equal, but are 3 and 2 for 'MatMul'");
  // Run-time: shapes unknown while building.
  Output p = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "p");
  Output q = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "q");
  Output z = ops::BatchMatMul(p, q);
  Output m = ops::MatMul(p, q);
  Session sess(g_);
  Tensor a(DT_FLOAT, TensorShape({2, 2, 3}));
  Tensor b(DT_FLOAT, TensorShape({2, 4, 2}));
  ExpectInvalidArgument(
      [&] {
        sess.Run({{p, a}, {q, b}}, {z});
      },
      "Matrix size-incompatible: In[0]: [2,2,3], In[1]: [2,4,2]");
  Tensor c(DT_FLOAT, TensorShape({3, 3, 2}));
  ExpectInvalidArgument([&] { sess.Run({{p, a}, {q, c}}, {z}); }, "must have compatible batch dimensions");
  Tensor m1(DT_FLOAT, TensorShape({2, 3}));
  Tensor m2(DT_FLOAT, TensorShape({2, 3}));
  ExpectInvalidArgument([&] { sess.Run({{p, m1}, {q, m2}}, {m}); }, "Matrix size-incompatible");
}

TEST_F(MathOpsTest, BatchMatMulGradients) {
  for (bool adj_x : {false, true}) {
    for (bool adj_y : {false, true}) {
      const TensorShape sx = adj_x ? TensorShape({2, 3, 2}) : TensorShape({2, 2, 3});
      const TensorShape sy = adj_y ? TensorShape({2, 4, 3}) : TensorShape({2, 3, 4});
      Output x = In(sx, "x");
      Output y = In(sy, "y");
      EXPECT_LT(ComputeGradientError({x, y}, {RandomDoubles(sx, 10), RandomDoubles(sy, 11)},
                                     ops::BatchMatMul(x, y, adj_x, adj_y)),
                1e-8)
          << adj_x << adj_y;
    }
  }
  // V2 with a broadcast batch dimension on each side.
  Output x = In({3, 1, 2, 3}, "bx");
  Output y = In({4, 3, 2}, "by");
  EXPECT_LT(ComputeGradientError({x, y}, {RandomDoubles({3, 1, 2, 3}, 12), RandomDoubles({4, 3, 2}, 13)},
                                 ops::BatchMatMulV2(x, y, false, false)),
            1e-8);
  Output x2 = In({3, 2}, "mx");
  Output y2 = In({2, 3, 4}, "my");
  EXPECT_LT(ComputeGradientError({x2, y2}, {RandomDoubles({3, 2}, 14), RandomDoubles({2, 3, 4}, 15)},
                                 ops::BatchMatMulV2(x2, y2, true, false)),
            1e-8);
}

// ---- Reductions ----

TEST_F(MathOpsTest, ReductionsOverAxesWithKeepDims) {
  Output x = ops::Const<float>({1, 5, 3, 4, 2, 6, 0, 8, 7, 9, 11, 10}, TensorShape({2, 2, 3}));
  Session sess(g_);
  const Tensor mx = ops::ReduceMax(x, {0, 2}, true).Eval(sess);
  EXPECT_EQ(mx.shape(), TensorShape({1, 2, 1}));
  EXPECT_EQ(Values<float>(mx), (std::vector<float>{8, 11}));
  const Tensor mn = ops::ReduceMin(x, {-1}).Eval(sess);
  EXPECT_EQ(mn.shape(), TensorShape({2, 2}));
  EXPECT_EQ(Values<float>(mn), (std::vector<float>{1, 2, 0, 9}));
  const Tensor pr = ops::ReduceProd(x, {1}).Eval(sess);
  EXPECT_EQ(Values<float>(pr), (std::vector<float>{4, 10, 18, 0, 88, 70}));
  EXPECT_EQ(ops::ReduceSum(x, {1}, true).shape().DebugString(), "[2,1,3]");
  ExpectInvalidArgument([&] { ops::ReduceSum(x, {3}); },
                        "Invalid reduction dimension 3 for input with 3 dimensions");
}

// Sums and means over a leading or trailing block of axes (the vectorized layouts), float
// and double, against sums accumulated in double.
TEST_F(MathOpsTest, SumAndMeanOverLeadingAndTrailingAxes) {
  const int64_t rows = 37, cols = 45;
  auto check = [&]<typename T>() {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> dist(-1, 1);
    std::vector<T> values(rows * 3 * cols);
    for (T& v : values) v = static_cast<T>(dist(rng));
    Output x = ops::Const<T>(values, TensorShape({rows, 3, cols}));
    Session sess(g_);
    const Tensor lead_sum = ops::ReduceSum(x, {0, 1}).Eval(sess);
    const Tensor lead_mean = ops::ReduceMean(x, {0, 1}, true).Eval(sess);
    const Tensor tail_sum = ops::ReduceSum(x, {1, 2}, true).Eval(sess);
    const Tensor tail_mean = ops::ReduceMean(x, {-1, -2}).Eval(sess);
    ASSERT_EQ(lead_mean.shape(), TensorShape({1, 1, cols}));
    ASSERT_EQ(tail_sum.shape(), TensorShape({rows, 1, 1}));
    const double tolerance = std::is_same_v<T, float> ? 1e-4 : 1e-12;
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < rows * 3; ++i) sum += values[i * cols + j];
      EXPECT_NEAR(lead_sum.flat<T>()[j], sum, tolerance) << j;
      EXPECT_NEAR(lead_mean.flat<T>()[j], sum / (rows * 3), tolerance) << j;
    }
    for (int64_t i = 0; i < rows; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < 3 * cols; ++j) sum += values[i * 3 * cols + j];
      EXPECT_NEAR(tail_sum.flat<T>()[i], sum, tolerance) << i;
      EXPECT_NEAR(tail_mean.flat<T>()[i], sum / (3 * cols), tolerance) << i;
    }
  };
  check.template operator()<float>();
  check.template operator()<double>();
}

TEST_F(MathOpsTest, MaxMinProdReductionGradients) {
  Output x = In({2, 3, 4});
  const Tensor v = RandomDoubles({2, 3, 4}, 16);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceMax(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceMax(x, {1})), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceMin(x, {0, 2}, true)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceMin(x, {-1})), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceProd(x, {1})), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceProd(x, {0, 2}, true)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceProd(x)), 1e-8);
  // Prod with zeros in the input: the gradient is still the product of the others.
  Tensor with_zero = v.DeepCopy();
  with_zero.flat<double>()[1] = 0;
  with_zero.flat<double>()[5] = 0;
  EXPECT_LT(ComputeGradientError({x}, {with_zero}, ops::ReduceProd(x, {2})), 1e-8);
  // Ties in Max share the gradient equally.
  Output t = In({3}, "t");
  std::vector<Output> g = ops::Gradients({ops::ReduceMax(t)}, {t});
  const Tensor gv = Run(g[0], {{t, Tensor::FromVector<double>({2, 1, 2})}});
  EXPECT_EQ(Values<double>(gv), (std::vector<double>{0.5, 0, 0.5}));
}

// ---- Cumsum / Cumprod ----

TEST_F(MathOpsTest, CumulativeScans) {
  Output x = ops::Const<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Output one = ops::Const(int32_t{1});
  Session sess(g_);
  EXPECT_EQ(Values<float>(ops::Cumsum(x, one).Eval(sess)), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(Values<float>(ops::Cumsum(x, one, true).Eval(sess)), (std::vector<float>{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(Values<float>(ops::Cumsum(x, one, false, true).Eval(sess)),
            (std::vector<float>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(Values<float>(ops::Cumprod(x, ops::Const(int32_t{0})).Eval(sess)),
            (std::vector<float>{1, 2, 3, 4, 10, 18}));
  EXPECT_EQ(Values<float>(ops::Cumprod(x, one, true, true).Eval(sess)),
            (std::vector<float>{6, 3, 1, 30, 6, 1}));
  ExpectInvalidArgument([&] { ops::Cumsum(x, ops::Const(int32_t{2})); },
                        "axis must be in range [-2, 2), got 2");
  Output xd = In({2, 3});
  const Tensor v = RandomDoubles({2, 3}, 17, 0.5, 2.0);
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      EXPECT_LT(ComputeGradientError({xd}, {v}, ops::Cumsum(xd, one, exclusive, reverse)), 1e-8);
      EXPECT_LT(ComputeGradientError({xd}, {v}, ops::Cumprod(xd, one, exclusive, reverse)), 1e-7);
    }
  }
}

// ---- Errors of the existing binary ops ----

TEST_F(MathOpsTest, BinaryOpErrorsAtBuildAndRunTime) {
  Output a = ops::Const<float>({1, 2, 3});
  ExpectInvalidArgument(
      [&] {
        ops::Add(a, ops::Const<float>({1, 2}));
      },
      "Dimensions must be equal, but are 3 and 2 for 'Add' (op: 'Add') with input shapes: [3], [2].");
  ExpectInvalidArgument([&] { ops::Mul(a, ops::Const<int32_t>({1, 2, 3})); }, "Mul");
  Output p = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1}), "p");
  Output sum = ops::SquaredDifference(a, p);
  EXPECT_EQ(sum.shape().DebugString(), "[3]");
  Session sess(g_);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{p, Tensor::FromVector<float>({1, 2})}}, {sum});
      },
      "Incompatible shapes: [3] vs. [2]");
}

}  // namespace
}  // namespace flowtrain
