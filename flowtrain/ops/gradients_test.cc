// Gradients of the foundation's ops, checked against central finite differences in float64.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

class GradientTest : public ::testing::Test {
 protected:
  Graph g_;
  ScopeGuard as_default_ = g_.AsDefault();
  Output In(const TensorShape& shape, std::string_view name = "x") {
    return ops::Placeholder(DT_DOUBLE, shape, name);
  }
};

TEST_F(GradientTest, AddSubMulWithBroadcasting) {
  Output x = In({2, 3}, "x");
  Output b = In({3}, "b");
  Output s = In({}, "s");
  Output y = ops::Mul(ops::Sub(ops::Add(x, b), s), b);
  EXPECT_LT(ComputeGradientError({x, b, s},
                                 {RandomDoubles({2, 3}), RandomDoubles({3}, 2), RandomDoubles({}, 3)}, y),
            1e-8);
  Output col = In({2, 1}, "col");
  Output y2 = ops::AddV2(x, col) * x;
  EXPECT_LT(ComputeGradientError({x, col}, {RandomDoubles({2, 3}), RandomDoubles({2, 1}, 4)}, y2), 1e-8);
}

TEST_F(GradientTest, MatMulAllTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Output a = In(ta ? TensorShape({3, 2}) : TensorShape({2, 3}), "a");
      Output b = In(tb ? TensorShape({4, 3}) : TensorShape({3, 4}), "b");
      Output y = ops::MatMul(a, b, ta, tb);
      EXPECT_LT(ComputeGradientError({a, b},
                                     {RandomDoubles(ta ? TensorShape({3, 2}) : TensorShape({2, 3}), 5),
                                      RandomDoubles(tb ? TensorShape({4, 3}) : TensorShape({3, 4}), 6)},
                                     y),
                1e-8)
          << "transpose_a=" << ta << " transpose_b=" << tb;
    }
  }
}

TEST_F(GradientTest, Reductions) {
  Output x = In({2, 3, 4});
  Tensor v = RandomDoubles({2, 3, 4}, 7);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceSum(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceSum(x, {1})), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceSum(x, {0, 2}, true)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceMean(x, {2})), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceMean(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::ReduceMean(x, {-1}, true)), 1e-8);
}

TEST_F(GradientTest, DivNegAddNAndShapes) {
  Output x = In({2, 3}, "x");
  Output d = In({3}, "d");
  Tensor dv = RandomDoubles({3}, 8, 1.0, 2.0);  // away from zero
  Output y = ops::AddN({ops::RealDiv(x, d), ops::Neg(x), x * x});
  EXPECT_LT(ComputeGradientError({x, d}, {RandomDoubles({2, 3}, 9), dv}, y), 1e-7);
  Output r = ops::Reshape(x, {3, 2}) * ops::Const(Tensor::FromVector<double>({1, 2}));
  EXPECT_LT(ComputeGradientError({x}, {RandomDoubles({2, 3}, 10)}, r), 1e-8);
  Output row = In({1, 3}, "row");
  Output sq = ops::Squeeze(row) * ops::Identity(ops::Squeeze(row, {0}));
  EXPECT_LT(ComputeGradientError({row}, {RandomDoubles({1, 3}, 11)}, sq), 1e-8);
  Output bt = ops::BroadcastTo(row, ops::Const<int32_t>({4, 3})) * ops::Const(2.0);
  EXPECT_LT(ComputeGradientError({row}, {RandomDoubles({1, 3}, 12)}, bt), 1e-8);
}

TEST_F(GradientTest, GradientsOfUnconnectedAndMultipleYs) {
  Output x = In({2}, "x");
  Output z = In({2}, "z");
  Output y1 = x * x;
  Output y2 = ops::ReduceSum(x);
  std::vector<Output> grads = ops::Gradients({y1, y2}, {x, z});
  EXPECT_TRUE(grads[0]);
  EXPECT_FALSE(grads[1]);  // z does not affect the ys
  EXPECT_EQ(grads[0].op().name().rfind("gradients/", 0), 0u);
  Session sess(g_);
  Tensor g = sess.Run({{x, Tensor::FromVector<double>({1, 3})}}, {grads[0]})[0];
  EXPECT_DOUBLE_EQ(g.flat<double>()[0], 3.0);  // 2x + 1
  EXPECT_DOUBLE_EQ(g.flat<double>()[1], 7.0);
}

FT_REGISTER_OP("GradientTestNoGrad").Input("x: double").Output("y: double");

TEST_F(GradientTest, MissingGradientIsAnError) {
  Output x = In({2}, "x");
  Output y = NodeBuilder("GradientTestNoGrad", "opaque").Input(x).Finalize();
  try {
    ops::Gradients({y}, {x});
    FAIL();
  } catch (const NotFoundError& e) {
    EXPECT_STREQ(e.what(), "No gradient defined for operation 'opaque' (op type: GradientTestNoGrad)");
  }
}

TEST_F(GradientTest, FloorModGradientIsTensorFlows) {
  Output x = ops::Const<float>({-7.5f, 7.5f});
  Output y = ops::Const<float>({2.0f, -2.0f});
  std::vector<Output> grads = ops::Gradients({ops::ReduceSum(ops::FloorMod(x, y))}, {x, y});
  Session sess(g_);
  auto out = sess.Run({}, grads);
  EXPECT_EQ(testing::Values<float>(out[0]), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(testing::Values<float>(out[1]), (std::vector<float>{4.0f, 4.0f}));  // -floor(x / y)
}

// TF1's Div differentiates as RealDiv; TruncateDiv has no gradient (TF gives None), and
// the truncating ops' float values are TF's: TruncateDiv(-7.5, 2) = -3, Mod(-7.5, 2) = -1.5.
TEST_F(GradientTest, DivAndTheTruncatingDivisions) {
  Output x = In({2, 3}, "x");
  Output y = In({3}, "y");
  EXPECT_LT(
      ComputeGradientError({x, y}, {RandomDoubles({2, 3}), RandomDoubles({3}, 2, 1.0, 2.0)}, ops::Div(x, y)),
      1e-8);
  std::vector<Output> none = ops::Gradients({ops::ReduceSum(ops::TruncateDiv(x, y))}, {x, y});
  EXPECT_EQ(none[0].node(), nullptr);
  EXPECT_EQ(none[1].node(), nullptr);
  Session sess(g_);
  auto out = sess.Run({}, {ops::TruncateDiv(ops::Const<float>({-7, 7, -7.5f}), ops::Const<float>({5, -5, 2})),
                           ops::Div(ops::Const<double>({-7, 7}), ops::Const<double>({2, -2})),
                           ops::Mod(ops::Const<float>({-7.5f, 7.5f}), ops::Const<float>({2, -2})),
                           ops::TruncateMod(ops::Const<double>({-7.5, 1}), ops::Const<double>({2, 0}))});
  EXPECT_EQ(testing::Values<float>(out[0]), (std::vector<float>{-1, -1, -3}));
  EXPECT_EQ(testing::Values<double>(out[1]), (std::vector<double>{-3.5, -3.5}));
  EXPECT_EQ(testing::Values<float>(out[2]), (std::vector<float>{-1.5f, 1.5f}));
  EXPECT_EQ(out[3].flat<double>()[0], -1.5);
  EXPECT_TRUE(std::isnan(out[3].flat<double>()[1]));  // floats divide by zero IEEE's way
}

TEST_F(GradientTest, KernelsOfTheHelperOps) {
  Output x = ops::Const<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Session sess(g_);
  auto out = sess.Run(
      {}, {ops::ReduceSum(x, {0}), ops::ReduceMax(x, {1}), ops::ReduceMin(x), ops::ReduceProd(x, {1}, true),
           ops::ReduceMean(x), ops::FloorDiv(ops::Const<int32_t>({-7, 7}), ops::Const(int32_t{2})),
           ops::Cast(x, DT_INT32), ops::Fill(ops::Const<int32_t>({2}), ops::Const(7.0f)),
           ops::Maximum(x, ops::Const(3.5f)),
           // TF's FloorMod: the remainder takes the divisor's sign.
           ops::FloorMod(ops::Const<int32_t>({-7, 7, 7, -7, 6}), ops::Const<int32_t>({2, -2, 2, -2, 3})),
           ops::FloorMod(ops::Const<float>({-7.5f, 7.5f, 3.0f}), ops::Const<float>({2.0f, -2.0f, 1.5f}))});
  EXPECT_EQ(out[0].flat<float>()[2], 9.0f);
  EXPECT_EQ(out[1].flat<float>()[1], 6.0f);
  EXPECT_EQ(out[2].scalar<float>(), 1.0f);
  EXPECT_EQ(out[3].shape(), TensorShape({2, 1}));
  EXPECT_EQ(out[3].flat<float>()[1], 120.0f);
  EXPECT_EQ(out[4].scalar<float>(), 3.5f);
  EXPECT_EQ(out[5].flat<int32_t>()[0], -4);
  EXPECT_EQ(out[5].flat<int32_t>()[1], 3);
  EXPECT_EQ(out[6].flat<int32_t>()[5], 6);
  EXPECT_EQ(out[7].flat<float>()[1], 7.0f);
  EXPECT_EQ(out[8].flat<float>()[0], 3.5f);
  EXPECT_EQ(testing::Values<int32_t>(out[9]), (std::vector<int32_t>{1, -1, 1, -1, 0}));
  EXPECT_EQ(testing::Values<float>(out[10]), (std::vector<float>{0.5f, -0.5f, 0.0f}));
  EXPECT_EQ(out[8].flat<float>()[5], 6.0f);
  Output div0 = ops::RealDiv(ops::Const(int32_t{1}), ops::Const(int32_t{0}));
  EXPECT_THROW(div0.Eval(sess), InvalidArgumentError);
}

}  // namespace
}  // namespace flowtrain
