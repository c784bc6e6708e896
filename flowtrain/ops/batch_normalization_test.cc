#include "flowtrain/ops/batch_normalization.h"

#include <cmath>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

std::vector<std::string> NamesOf(const std::vector<Variable>& variables) {
  std::vector<std::string> names;
  for (const Variable& v : variables) names.push_back(v.name());
  return names;
}

// The largest absolute difference of two float tensors of one shape.
double MaxDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double worst = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]));
  }
  return worst;
}

Tensor RandomFloats(const TensorShape& shape, uint64_t seed) {
  const Tensor d = RandomDoubles(shape, seed, -2, 3);
  Tensor f(DT_FLOAT, shape);
  for (int64_t i = 0; i < d.NumElements(); ++i) f.data<float>()[i] = static_cast<float>(d.data<double>()[i]);
  return f;
}

TEST(BatchNormalizationTest, VariablesAndUpdatesAreNamedAndCollectedAsTf) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {-1, 4, 4, 3}, "x");
  Output h = layers::BatchNormalizationLayer(x, true);
  Output y = layers::BatchNormalizationLayer(ops::Reshape(h, std::vector<int64_t>{-1, 48}), true);
  EXPECT_EQ(h.shape().DebugString(), "[?,4,4,3]");
  EXPECT_NE(g.FindNode("batch_normalization/FusedBatchNormV3"), nullptr);
  EXPECT_NE(g.FindNode("batch_normalization_1/moments/mean"), nullptr);
  EXPECT_EQ(y.op().name(), "batch_normalization_1/batchnorm/add_1");
  const std::vector<std::string> all = {
      "batch_normalization/gamma:0",         "batch_normalization/beta:0",
      "batch_normalization/moving_mean:0",   "batch_normalization/moving_variance:0",
      "batch_normalization_1/gamma:0",       "batch_normalization_1/beta:0",
      "batch_normalization_1/moving_mean:0", "batch_normalization_1/moving_variance:0"};
  EXPECT_EQ(NamesOf(ops::GlobalVariables()), all);
  EXPECT_EQ(NamesOf(ops::TrainableVariables()),
            (std::vector<std::string>{"batch_normalization/gamma:0", "batch_normalization/beta:0",
                                      "batch_normalization_1/gamma:0", "batch_normalization_1/beta:0"}));
  EXPECT_TRUE(g.GetCollectionItems(GraphKeys::kMovingAverageVariables).empty());  // as tf.layers
  std::vector<std::string> updates;
  for (const Operation& op : g.GetCollection<Operation>(GraphKeys::kUpdateOps)) updates.push_back(op.name());
  EXPECT_EQ(updates,
            (std::vector<std::string>{
                "batch_normalization/AssignMovingAvg", "batch_normalization/AssignMovingAvg_1",
                "batch_normalization_1/AssignMovingAvg", "batch_normalization_1/AssignMovingAvg_1"}));
  EXPECT_EQ(g.GetOperationByName("batch_normalization/AssignMovingAvg").type(), "AssignSub");
}

TEST(BatchNormalizationTest, WithoutCenterOrScaleAndInferenceBuildsNoUpdates) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {2, 3}, "x");
  layers::BatchNormalization bn({.center = false, .scale = false, .name = "bn"});
  Output y = bn(x, false);
  EXPECT_FALSE(bn.gamma());
  EXPECT_FALSE(bn.beta());
  EXPECT_TRUE(bn.updates().empty());
  EXPECT_EQ(NamesOf(ops::GlobalVariables()),
            (std::vector<std::string>{"bn/moving_mean:0", "bn/moving_variance:0"}));
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  // Initial moving statistics 0 and 1: y = x / sqrt(1 + epsilon).
  const Tensor out =
      sess.Run({{x, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}))}}, {y})[0];
  EXPECT_NEAR(out.data<float>()[5], 6 / std::sqrt(1.001), 1e-6);
}

// The fused kernel and the op-by-op form agree on the outputs, the gradients and the moving
// mean; the moving variance differs by Bessel's correction, as in TF.
TEST(BatchNormalizationTest, FusedAndNonFusedAgree) {
  for (int axis : {3, 1}) {
    SCOPED_TRACE(axis);
    Graph g;
    auto as_default = g.AsDefault();
    const TensorShape shape({4, 3, 5, 2});
    Output x = ops::Placeholder(DT_FLOAT, shape, "x");
    const Tensor value = RandomFloats(shape, 7);
    const ops::Initializer gamma = ops::ConstantInitializer(1.5), beta = ops::ConstantInitializer(-0.25);
    layers::BatchNormalization fused(
        {.axis = axis, .momentum = 0.9, .beta_initializer = beta, .gamma_initializer = gamma});
    layers::BatchNormalization plain({.axis = axis,
                                      .momentum = 0.9,
                                      .beta_initializer = beta,
                                      .gamma_initializer = gamma,
                                      .fused = false});
    Output yf = fused(x, true);
    Output yp = plain(x, true);
    EXPECT_NE(g.FindNode(fused.name() + "/FusedBatchNormV3"), nullptr);
    EXPECT_EQ(g.FindNode(plain.name() + "/FusedBatchNormV3"), nullptr);
    Output weights = ops::Const(RandomFloats(shape, 8));
    std::vector<Output> gf = ops::Gradients({ops::ReduceSum(yf * weights)}, {x, fused.gamma(), fused.beta()});
    std::vector<Output> gp = ops::Gradients({ops::ReduceSum(yp * weights)}, {x, plain.gamma(), plain.beta()});
    Session sess(g);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
    std::vector<Operation> updates = fused.updates();
    updates.insert(updates.end(), plain.updates().begin(), plain.updates().end());
    const std::vector<Tensor> out =
        sess.Run({{x, value}}, {yf, yp, gf[0], gp[0], gf[1], gp[1], gf[2], gp[2]}, updates);
    EXPECT_LT(MaxDiff(out[0], out[1]), 1e-5);
    for (int i = 2; i < 8; i += 2) EXPECT_LT(MaxDiff(out[i], out[i + 1]), 1e-4) << i;
    const std::vector<Tensor> stats = sess.Run(
        {}, {fused.moving_mean(), plain.moving_mean(), fused.moving_variance(), plain.moving_variance()});
    EXPECT_LT(MaxDiff(stats[0], stats[1]), 1e-6);
    // 0.9 + 0.1 * v_unbiased against 0.9 + 0.1 * v_biased, v_unbiased = v_biased * n / (n - 1).
    const int64_t channels = shape.dim_size(axis);
    const double n = static_cast<double>(shape.num_elements()) / channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double biased = (stats[3].data<float>()[c] - 0.9) / 0.1;
      EXPECT_NEAR(stats[2].data<float>()[c], 0.9 + 0.1 * biased * n / (n - 1), 1e-5);
    }
  }
}

TEST(BatchNormalizationTest, TrainingPlaceholderChoosesThePath) {
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused);
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Placeholder(DT_FLOAT, {2, 1, 1, 2}, "x");
    Output training = ops::Placeholder(DT_BOOL, {}, "training");
    layers::BatchNormalization bn({.momentum = 0.5, .fused = fused});
    Output y = bn(x, training);
    ASSERT_EQ(bn.updates().size(), 2u);
    Session sess(g);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
    const Tensor value = Tensor::FromVector<float>({1, 10, 3, 30}, TensorShape({2, 1, 1, 2}));
    const Tensor train_out =
        sess.Run({{x, value}, {training, Tensor::Scalar<bool>(true)}}, {y}, bn.updates())[0];
    // Batch mean (2, 20), biased variance (1, 100): y = +-1 / sqrt(1 + eps / var).
    EXPECT_NEAR(train_out.data<float>()[0], -1 / std::sqrt(1 + 1e-3), 1e-5);
    EXPECT_NEAR(train_out.data<float>()[3], 1 / std::sqrt(1 + 1e-5), 1e-5);
    const Tensor mean_after_training = sess.Run({}, {bn.moving_mean()})[0];
    EXPECT_NEAR(mean_after_training.data<float>()[1], 10, 1e-5);
    const Tensor infer_out =
        sess.Run({{x, value}, {training, Tensor::Scalar<bool>(false)}}, {y}, bn.updates())[0];
    const std::vector<Tensor> stats = sess.Run({}, {bn.moving_mean(), bn.moving_variance()});
    EXPECT_EQ(stats[0].data<float>()[1], mean_after_training.data<float>()[1]);  // inference moves nothing
    EXPECT_NEAR(infer_out.data<float>()[1], (10 - 10) / std::sqrt(stats[1].data<float>()[1] + 1e-3), 1e-5);
    EXPECT_NEAR(infer_out.data<float>()[3], (30 - 10) / std::sqrt(stats[1].data<float>()[1] + 1e-3), 1e-4);
  }
}

TEST(BatchNormalizationTest, GradientsMatchFiniteDifferences) {
  for (int axis : {-1, 1}) {
    SCOPED_TRACE(axis);
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Placeholder(DT_DOUBLE, {3, 2, 2}, "x");
    layers::BatchNormalization bn({.axis = axis, .gamma_initializer = ops::ConstantInitializer(1.5)});
    Output y = bn(x, true) * ops::Const(RandomDoubles({3, 2, 2}, 3));
    // Against x, gamma and beta (their snapshots fed, so no variable needs initialising).
    EXPECT_LT(
        ComputeGradientError({x, bn.gamma().value(), bn.beta().value()},
                             {RandomDoubles({3, 2, 2}, 4), RandomDoubles({2}, 5), RandomDoubles({2}, 6)}, y),
        1e-6);
  }
}

TEST(BatchNormalizationTest, BadInputIsInvalidArgumentNamingIt) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {2, 3}, "x");
  try {
    layers::BatchNormalizationLayer(x, true, {.axis = 2});
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("axis 2 is out of range for inputs of rank 2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(layers::BatchNormalizationLayer(x, true, {.axis = -3}), InvalidArgumentError);
  EXPECT_THROW(layers::BatchNormalizationLayer(x, ops::Placeholder(DT_FLOAT, {})), InvalidArgumentError);
  EXPECT_THROW(layers::BatchNormalizationLayer(ops::Placeholder(DT_INT32, {2, 3})), InvalidArgumentError);
  EXPECT_THROW(layers::BatchNormalizationLayer(ops::Placeholder(DT_FLOAT, {2, -1})), InvalidArgumentError);
  layers::BatchNormalization bn;
  bn(x, true);
  EXPECT_THROW(bn(ops::Placeholder(DT_FLOAT, {2, 4})), InvalidArgumentError);
}

}  // namespace
}  // namespace flowtrain
