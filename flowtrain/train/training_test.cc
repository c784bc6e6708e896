// End-to-end training with each optimizer (logistic regression and an MLP on synthetic data,
// built with tf.layers-style layers), learning-rate schedules and gradient clipping.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/clip_ops.h"
#include "flowtrain/ops/layers.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/adagrad.h"
#include "flowtrain/train/adam.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/learning_rate_decay.h"
#include "flowtrain/train/momentum.h"
#include "flowtrain/train/rmsprop.h"

namespace flowtrain::train {
namespace {

// ---- Learning-rate schedules ----

float At(Session& s, const Output& lr, const Output& step, int64_t value) {
  return s.Run({{step, Tensor::Scalar<int64_t>(value)}}, {lr})[0].scalar<float>();
}

TEST(LearningRateDecayTest, ExponentialDecay) {
  Graph g;
  auto as_default = g.AsDefault();
  Output step = ops::Placeholder(DT_INT64, PartialTensorShape({}), "step");
  Output smooth = ExponentialDecay(0.1, step, 100, 0.5);
  Output stairs = ExponentialDecay(0.1, step, 100, 0.5, /*staircase=*/true);
  EXPECT_EQ(smooth.op().name(), "ExponentialDecay");
  EXPECT_EQ(stairs.op().name(), "ExponentialDecay_1");
  Session s(g);
  EXPECT_NEAR(At(s, smooth, step, 0), 0.1f, 1e-7);
  EXPECT_NEAR(At(s, smooth, step, 50), 0.1 * std::pow(0.5, 0.5), 1e-7);
  EXPECT_NEAR(At(s, smooth, step, 250), 0.1 * std::pow(0.5, 2.5), 1e-7);
  EXPECT_NEAR(At(s, stairs, step, 99), 0.1f, 1e-7);
  EXPECT_NEAR(At(s, stairs, step, 100), 0.05f, 1e-7);
  EXPECT_NEAR(At(s, stairs, step, 250), 0.025f, 1e-7);
}

TEST(LearningRateDecayTest, CosineDecayFollowsTensorFlowsFormula) {
  Graph g;
  auto as_default = g.AsDefault();
  Output step = ops::Placeholder(DT_INT64, PartialTensorShape({}), "step");
  Output plain = CosineDecay(0.1, step, 1000);
  Output floored = CosineDecay(0.5, step, 300, /*alpha=*/0.2);
  // TF's names: its unique names ignore case, so after mul, mul_1 and mul_2 the final
  // multiply is Mul_3.
  EXPECT_EQ(plain.op().name(), "CosineDecay/Mul_3");
  EXPECT_EQ(floored.op().name(), "CosineDecay_1/Mul_3");
  // tf.train.cosine_decay's formula, in double.
  auto tf_formula = [](double lr, int64_t step, int64_t decay_steps, double alpha) {
    const double s = static_cast<double>(std::min(step, decay_steps));
    return lr * ((1 - alpha) * 0.5 * (1 + std::cos(M_PI * s / static_cast<double>(decay_steps))) + alpha);
  };
  Session s(g);
  for (int64_t at : {0, 1, 250, 500, 999, 1000, 5000}) {
    EXPECT_NEAR(At(s, plain, step, at), tf_formula(0.1, at, 1000, 0.0), 1e-7) << at;
    EXPECT_NEAR(At(s, floored, step, at), tf_formula(0.5, at, 300, 0.2), 1e-7) << at;
  }
  EXPECT_NEAR(At(s, plain, step, 500), 0.05, 1e-7);   // halfway: half the rate
  EXPECT_NEAR(At(s, floored, step, 300), 0.1, 1e-7);  // the end: alpha * learning_rate
  EXPECT_THROW(CosineDecay(0.1, step, 0), InvalidArgumentError);
}

TEST(LearningRateDecayTest, PiecewiseConstant) {
  Graph g;
  auto as_default = g.AsDefault();
  Output step = ops::Placeholder(DT_INT64, PartialTensorShape({}), "step");
  Output lr = PiecewiseConstant(step, {100, 200}, {1.0, 0.5, 0.1});
  Session s(g);
  EXPECT_EQ(At(s, lr, step, 0), 1.0f);
  EXPECT_EQ(At(s, lr, step, 100), 1.0f);  // boundaries belong to the earlier interval
  EXPECT_EQ(At(s, lr, step, 101), 0.5f);
  EXPECT_EQ(At(s, lr, step, 200), 0.5f);
  EXPECT_EQ(At(s, lr, step, 201), 0.1f);
  EXPECT_EQ(At(s, lr, step, 100000), 0.1f);
  EXPECT_THROW(PiecewiseConstant(step, {1, 2}, {1.0, 2.0}), InvalidArgumentError);
  EXPECT_THROW(PiecewiseConstant(step, {2, 1}, {1.0, 2.0, 3.0}), InvalidArgumentError);
}

// ---- Clipping ----

TEST(ClipTest, ClipByGlobalNorm) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = ops::Const<float>({3, 0});
  Output b = ops::Const<float>({0, 4});  // global norm 5
  auto [clipped, norm] = ops::ClipByGlobalNorm({a, b, Output()}, 2.5f);
  auto [unclipped, norm2] = ops::ClipByGlobalNorm({a, b}, 10.0f);
  ASSERT_EQ(clipped.size(), 3u);
  EXPECT_FALSE(clipped[2]);
  EXPECT_EQ(clipped[0].op().name(), "clip_by_global_norm/clip_by_global_norm_0");
  EXPECT_EQ(norm.op().name(), "clip_by_global_norm/global_norm");
  Session s(g);
  auto out = s.Run({}, {clipped[0], clipped[1], norm, unclipped[0], unclipped[1]});
  EXPECT_NEAR(out[2].scalar<float>(), 5.0f, 1e-6);
  EXPECT_NEAR(out[0].flat<float>()[0], 1.5f, 1e-6);
  EXPECT_NEAR(out[1].flat<float>()[1], 2.0f, 1e-6);
  EXPECT_NEAR(out[3].flat<float>()[0], 3.0f, 1e-6);
  EXPECT_NEAR(out[4].flat<float>()[1], 4.0f, 1e-6);
}

TEST(ClipTest, InfiniteNormGivesNaN) {
  Graph g;
  auto as_default = g.AsDefault();
  auto [clipped, norm] = ops::ClipByGlobalNorm({ops::Const<float>({INFINITY, 1})}, 1.0f);
  Session s(g);
  EXPECT_TRUE(std::isnan(clipped[0].Eval(s).flat<float>()[1]));
}

// ---- Training to a loss threshold ----

using OptimizerFactory = std::function<std::unique_ptr<Optimizer>()>;

struct NamedOptimizer {
  std::string name;
  OptimizerFactory make;
};

std::vector<NamedOptimizer> AllOptimizers(double sgd_lr) {
  return {
      {"GradientDescent", [=] { return std::make_unique<GradientDescentOptimizer>(sgd_lr); }},
      {"Momentum", [=] { return std::make_unique<MomentumOptimizer>(sgd_lr / 5, 0.9); }},
      {"Nesterov",
       [=] {
         return std::make_unique<MomentumOptimizer>(sgd_lr / 5, 0.9, MomentumOptions{.use_nesterov = true});
       }},
      {"Adam", [] { return std::make_unique<AdamOptimizer>(0.05); }},
      {"Adagrad", [] { return std::make_unique<AdagradOptimizer>(0.5); }},
      {"RMSProp", [] { return std::make_unique<RMSPropOptimizer>(0.01); }},
      {"CenteredRMSProp",
       [] { return std::make_unique<RMSPropOptimizer>(0.01, RMSPropOptions{.centered = true}); }},
  };
}

// Two Gaussian-ish blobs per class, deterministic: points (x0, x1) labelled by which side of
// a curve they fall.
void SyntheticData(int n, int classes, std::vector<float>* xs, std::vector<int64_t>* labels) {
  for (int i = 0; i < n; ++i) {
    const float a = std::sin(12.9898f * i) * 2.0f, b = std::cos(78.233f * i) * 2.0f;
    xs->push_back(a);
    xs->push_back(b);
    int64_t label;
    if (classes == 2) {
      label = (a + 0.5f * b > 0.3f) ? 1 : 0;  // linearly separable
    } else {
      label = (a * a + b * b < 1.5f) ? 0 : (a > 0 ? 1 : 2);  // needs a hidden layer
    }
    labels->push_back(label);
  }
}

float Train(const OptimizerFactory& make, int classes, bool hidden, int steps) {
  Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(1);
  const int n = 256;
  std::vector<float> xs;
  std::vector<int64_t> labels;
  SyntheticData(n, classes, &xs, &labels);
  Output x = ops::Const(Tensor::FromVector<float>(xs, TensorShape({n, 2})), "x");
  Output y = ops::Const(Tensor::FromVector<int64_t>(labels), "y");
  Output h = x;
  if (hidden) h = layers::Dense(h, 32, ops::Relu);
  Output logits = layers::Dense(h, classes);
  Output loss = ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(y, logits));
  Variable step = GetOrCreateGlobalStep();
  std::unique_ptr<Optimizer> opt = make();
  Operation train_op = opt->Minimize(loss, step);
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  for (int i = 0; i < steps; ++i) s.Run({}, {}, {train_op});
  EXPECT_EQ(step.value().Eval(s).scalar<int64_t>(), steps);
  return loss.Eval(s).scalar<float>();
}

TEST(TrainingTest, LogisticRegressionWithEachOptimizer) {
  for (const NamedOptimizer& o : AllOptimizers(1.0)) {
    const float loss = Train(o.make, 2, /*hidden=*/false, 300);
    EXPECT_LT(loss, 0.15f) << o.name;
  }
}

TEST(TrainingTest, MlpWithEachOptimizer) {
  for (const NamedOptimizer& o : AllOptimizers(0.5)) {
    const float loss = Train(o.make, 3, /*hidden=*/true, 400);
    EXPECT_LT(loss, 0.3f) << o.name;
  }
}

}  // namespace
}  // namespace flowtrain::train
