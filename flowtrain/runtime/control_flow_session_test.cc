// ops::Cond, ops::Case and ops::WhileLoop run by flowtrain's Session: the taken branch's
// values, loops to their end (maximum_iterations, growing shapes, loop invariants), and
// gradients through conds against finite differences on both branches.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/tensor.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

float RunScalar(Session& sess, const Output& x, float value, const Output& fetch) {
  return sess.Run({{x, Tensor::Scalar<float>(value)}}, {fetch})[0].scalar<float>();
}

TEST(CondSession, RunsOnlyTheTakenBranch) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output y = ops::Const(3.0f, "y");
  Output r = ops::Cond(
      ops::Greater(x, ops::Const(0.0f)), [&] { return ops::AddV2(ops::Square(x), y); },
      [&] { return ops::Neg(x); });
  std::vector<Output> pair = ops::Cond(
      ops::Less(x, y),
      [&] {
        return std::vector<Output>{ops::Mul(x, y), ops::Const(1.0f)};
      },
      [&] {
        return std::vector<Output>{x, ops::Const(0.0f)};
      });
  Session sess(g);
  EXPECT_FLOAT_EQ(RunScalar(sess, x, 2.0f, r), 7.0f);
  EXPECT_FLOAT_EQ(RunScalar(sess, x, -2.0f, r), 2.0f);
  std::vector<Tensor> out = sess.Run({{x, Tensor::Scalar<float>(1.0f)}}, pair);
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 3.0f);
  EXPECT_FLOAT_EQ(out[1].scalar<float>(), 1.0f);
  out = sess.Run({{x, Tensor::Scalar<float>(5.0f)}}, pair);
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 5.0f);
  EXPECT_FLOAT_EQ(out[1].scalar<float>(), 0.0f);
}

TEST(CaseSession, TakesTheFirstTruePredicateElseTheDefault) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output c = ops::Case({{ops::Less(x, ops::Const(0.0f)), [] { return ops::Const(-1.0f); }},
                        {ops::Less(x, ops::Const(1.0f)), [] { return ops::Const(0.5f); }}},
                       [] { return ops::Const(1.0f); });
  Session sess(g);
  EXPECT_FLOAT_EQ(RunScalar(sess, x, -3.0f, c), -1.0f);
  EXPECT_FLOAT_EQ(RunScalar(sess, x, 0.25f, c), 0.5f);
  EXPECT_FLOAT_EQ(RunScalar(sess, x, 4.0f, c), 1.0f);
}

TEST(WhileLoopSession, RunsToTheEndWithInvariantsCountersAndGrowingShapes) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  std::vector<Output> power =
      ops::WhileLoop([](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(5)); },
                     [&](const std::vector<Output>& v) {
                       return std::vector<Output>{ops::AddV2(v[0], ops::Const(1)), ops::Mul(v[1], x)};
                     },
                     {ops::Const(0), x});
  std::vector<Output> capped = ops::WhileLoop(
      [](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(100.0f)); },
      [](const std::vector<Output>& v) { return std::vector<Output>{ops::Mul(v[0], ops::Const(2.0f))}; }, {x},
      {.maximum_iterations = ops::Const(3)});
  std::vector<Output> grown =
      ops::WhileLoop([](const std::vector<Output>& v) { return ops::Less(ops::Size(v[0]), ops::Const(8)); },
                     [](const std::vector<Output>& v) {
                       return std::vector<Output>{ops::ConcatV2({v[0], v[0]}, ops::Const(0))};
                     },
                     {ops::Const({1.0f})}, {.shape_invariants = {PartialTensorShape({-1})}});
  Session sess(g);
  std::vector<Tensor> out = sess.Run({{x, Tensor::Scalar<float>(1.5f)}}, {power[0], power[1], capped[0]});
  EXPECT_EQ(out[0].scalar<int32_t>(), 5);
  EXPECT_FLOAT_EQ(out[1].scalar<float>(), std::pow(1.5f, 6.0f));
  EXPECT_FLOAT_EQ(out[2].scalar<float>(), 12.0f);                 // stopped by maximum_iterations
  EXPECT_FLOAT_EQ(RunScalar(sess, x, 30.0f, capped[0]), 120.0f);  // stopped by its condition
  EXPECT_EQ(sess.Run({}, {grown[0]})[0].NumElements(), 8);
}

// d/dx of cond(x > 0, x^2 * y, -3x) on both sides of 0, against finite differences.
TEST(CondGradientSession, MatchesFiniteDifferencesOnBothBranches) {
  for (double start : {0.7, -0.4}) {
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({3}), "x");
    Output y = ops::Const(Tensor::FromVector<double>({1.0, 2.0, -1.0}), "y");
    Output s = ops::ReduceSum(x);
    Output r = ops::Cond(
        ops::Greater(s, ops::Const(0.0)), [&] { return ops::Mul(ops::Square(x), y); },
        [&] { return ops::Mul(x, ops::Const(-3.0)); });
    Tensor at = Tensor::FromVector<double>({start, start / 2, start / 3});
    EXPECT_LT(ComputeGradientError({x}, {at}, r), 1e-6) << "at " << start;
  }
}

TEST(CondGradientSession, UntakenBranchGivesZeros) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output r = ops::Cond(
      ops::Greater(x, ops::Const(0.0f)), [&] { return ops::Square(x); }, [] { return ops::Const(4.0f); });
  Output dx = ops::Gradients({r}, {x})[0];
  Session sess(g);
  EXPECT_FLOAT_EQ(RunScalar(sess, x, 3.0f, dx), 6.0f);
  EXPECT_FLOAT_EQ(RunScalar(sess, x, -3.0f, dx), 0.0f);
}

}  // namespace
}  // namespace flowtrain
