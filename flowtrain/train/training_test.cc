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
#include "flowtrain/train/adadelta.h"
#include "flowtrain/train/adagrad.h"
#include "flowtrain/train/adagrad_da.h"
#include "flowtrain/train/adam.h"
#include "flowtrain/train/ftrl.h"
#include "flowtrain/train/global_step.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/learning_rate_decay.h"
#include "flowtrain/train/momentum.h"
#include "flowtrain/train/proximal_adagrad.h"
#include "flowtrain/train/proximal_gradient_descent.h"
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

// TF 1.15's formulas in double, for the schedules below (tf.train.*_decay's docs and code).
double PolynomialFormula(double lr, int64_t step, int64_t decay_steps, double end, double power, bool cycle) {
  double s = static_cast<double>(step), d = static_cast<double>(decay_steps);
  if (cycle) {
    d *= step == 0 ? 1.0 : std::ceil(s / d);
  } else {
    s = std::min(s, d);
  }
  return (lr - end) * std::pow(1 - s / d, power) + end;
}

double RestartsFormula(double lr, int64_t step, int64_t first, double t_mul, double m_mul, double alpha) {
  double fraction = static_cast<double>(step) / static_cast<double>(first);
  double i;
  if (t_mul == 1.0) {
    i = std::floor(fraction);
    fraction -= i;
  } else {
    i = std::floor(std::log(1 - fraction * (1 - t_mul)) / std::log(t_mul));
    const double before = (1 - std::pow(t_mul, i)) / (1 - t_mul);
    fraction = (fraction - before) / std::pow(t_mul, i);
  }
  const double cosine = 0.5 * std::pow(m_mul, i) * (1 + std::cos(M_PI * fraction));
  return lr * ((1 - alpha) * cosine + alpha);
}

double LinearCosineFormula(double lr, int64_t step, int64_t decay_steps, double num_periods, double alpha,
                           double beta, double noise = 0) {
  const double d = static_cast<double>(decay_steps);
  const double s = std::min(static_cast<double>(step), d);
  const double linear = (d - s) / d + noise;
  const double cosine = 0.5 * (1 + std::cos(M_PI * 2 * num_periods * s / d));
  return lr * ((alpha + linear) * cosine + beta);
}

TEST(LearningRateDecayTest, NaturalExpAndInverseTimeDecay) {
  Graph g;
  auto as_default = g.AsDefault();
  Output step = ops::Placeholder(DT_INT64, PartialTensorShape({}), "step");
  Output natural = NaturalExpDecay(0.1, step, 10, 0.5);
  Output natural_stairs = NaturalExpDecay(0.1, step, 10, 0.5, /*staircase=*/true, "natural");
  Output inverse = InverseTimeDecay(0.1, step, 10, 0.5);
  Output inverse_stairs = InverseTimeDecay(0.1, step, 10, 0.5, /*staircase=*/true);
  // TF builds natural_exp_decay as an ExponentialDecay with the rate exp(-decay_rate).
  EXPECT_EQ(natural.op().name(), "ExponentialDecay");
  EXPECT_EQ(natural.op().input(1).op().input(0).op().name(), "Exp");
  EXPECT_EQ(natural_stairs.op().name(), "natural");
  EXPECT_EQ(inverse.op().name(), "InverseTimeDecay");
  EXPECT_EQ(inverse.op().type(), "RealDiv");
  EXPECT_EQ(inverse_stairs.op().name(), "InverseTimeDecay_1");
  Session s(g);
  for (int64_t at : {0, 1, 9, 10, 15, 100}) {
    const double p = at / 10.0, floored = std::floor(p);
    EXPECT_NEAR(At(s, natural, step, at), 0.1 * std::exp(-0.5 * p), 1e-7) << at;
    EXPECT_NEAR(At(s, natural_stairs, step, at), 0.1 * std::exp(-0.5 * floored), 1e-7) << at;
    EXPECT_NEAR(At(s, inverse, step, at), 0.1 / (1 + 0.5 * p), 1e-7) << at;
    EXPECT_NEAR(At(s, inverse_stairs, step, at), 0.1 / (1 + 0.5 * floored), 1e-7) << at;
  }
  EXPECT_THROW(InverseTimeDecay(0.1, step, 0, 0.5), InvalidArgumentError);
  EXPECT_THROW(NaturalExpDecay(0.1, ops::Const<int64_t>({1, 2}), 10, 0.5), InvalidArgumentError);
}

TEST(LearningRateDecayTest, PolynomialDecayWithAndWithoutCycle) {
  Graph g;
  auto as_default = g.AsDefault();
  Output step = ops::Placeholder(DT_INT64, PartialTensorShape({}), "step");
  Output linear = PolynomialDecay(0.1, step, 100);
  Output squared = PolynomialDecay(0.1, step, 100, /*end_learning_rate=*/0.01, /*power=*/2.0);
  Output cycled = PolynomialDecay(0.1, step, 100, 0.01, 0.5, /*cycle=*/true);
  EXPECT_EQ(linear.op().name(), "PolynomialDecay");
  EXPECT_EQ(cycled.op().name(), "PolynomialDecay_2");
  Session s(g);
  for (int64_t at : {0, 1, 50, 99, 100, 101, 150, 200, 201, 1000}) {
    EXPECT_NEAR(At(s, linear, step, at), PolynomialFormula(0.1, at, 100, 0.0001, 1.0, false), 1e-7) << at;
    EXPECT_NEAR(At(s, squared, step, at), PolynomialFormula(0.1, at, 100, 0.01, 2.0, false), 1e-7) << at;
    EXPECT_NEAR(At(s, cycled, step, at), PolynomialFormula(0.1, at, 100, 0.01, 0.5, true), 1e-7) << at;
  }
  EXPECT_NEAR(At(s, linear, step, 5000), 0.0001, 1e-9);  // stays at the end rate
  // With cycle the decay restarts: just past a multiple of decay_steps the rate is high again.
  EXPECT_GT(At(s, cycled, step, 101), At(s, cycled, step, 100));
  EXPECT_THROW(PolynomialDecay(0.1, step, -1), InvalidArgumentError);
}

TEST(LearningRateDecayTest, CosineDecayRestartsMatchesTheSgdrFormula) {
  Graph g;
  auto as_default = g.AsDefault();
  Output step = ops::Placeholder(DT_INT64, PartialTensorShape({}), "step");
  Output geometric = CosineDecayRestarts(0.1, step, 10);
  Output equal_periods = CosineDecayRestarts(0.2, step, 10, /*t_mul=*/1.0, /*m_mul=*/0.5, /*alpha=*/0.1);
  EXPECT_EQ(geometric.op().name(), "SGDRDecay");
  EXPECT_EQ(equal_periods.op().name(), "SGDRDecay_1");
  // The restart index comes from a cond, as in TF.
  EXPECT_NE(g.FindNode("SGDRDecay/cond/Merge"), nullptr);
  Session s(g);
  for (int64_t at : {0, 1, 5, 9, 10, 11, 29, 30, 31, 69, 70, 100, 1000}) {
    EXPECT_NEAR(At(s, geometric, step, at), RestartsFormula(0.1, at, 10, 2.0, 1.0, 0.0), 2e-7) << at;
    EXPECT_NEAR(At(s, equal_periods, step, at), RestartsFormula(0.2, at, 10, 1.0, 0.5, 0.1), 2e-7) << at;
  }
  // Restarts: periods of 10, 20, 40 steps with t_mul 2, each starting at the full rate.
  EXPECT_NEAR(At(s, geometric, step, 10), 0.1, 1e-6);
  EXPECT_NEAR(At(s, geometric, step, 30), 0.1, 1e-6);
  EXPECT_THROW(CosineDecayRestarts(0.1, step, 0), InvalidArgumentError);
}

TEST(LearningRateDecayTest, LinearCosineAndNoisyLinearCosineDecay) {
  Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(5);
  Output step = ops::Placeholder(DT_INT64, PartialTensorShape({}), "step");
  Output plain = LinearCosineDecay(0.1, step, 100);
  Output periodic = LinearCosineDecay(0.1, step, 100, /*num_periods=*/2.0, /*alpha=*/0.1, /*beta=*/0.01);
  Output quiet = NoisyLinearCosineDecay(0.1, step, 100, /*initial_variance=*/0.0);
  Output noisy = NoisyLinearCosineDecay(0.1, step, 100);
  EXPECT_EQ(plain.op().name(), "LinearCosineDecay");
  EXPECT_EQ(noisy.op().name(), "NoisyLinearCosineDecay_1");
  Session s(g);
  for (int64_t at : {0, 1, 25, 50, 99, 100, 500}) {
    EXPECT_NEAR(At(s, plain, step, at), LinearCosineFormula(0.1, at, 100, 0.5, 0.0, 0.001), 1e-7) << at;
    EXPECT_NEAR(At(s, periodic, step, at), LinearCosineFormula(0.1, at, 100, 2.0, 0.1, 0.01), 1e-7) << at;
    // Without variance the noisy schedule is the plain one.
    EXPECT_NEAR(At(s, quiet, step, at), LinearCosineFormula(0.1, at, 100, 0.5, 0.0, 0.001), 1e-7) << at;
  }
  // With it, each evaluation draws noise of variance 1 / (1 + s)^0.55 on the linear part: at
  // step 0 the rate is 0.1 * (linear + n) + 0.1 * 0.001 with n ~ N(0, 1). Recover n from 2000
  // draws and check its mean and variance.
  double sum = 0, sum_sq = 0;
  const int draws = 2000;
  for (int i = 0; i < draws; ++i) {
    const double n = (At(s, noisy, step, 0) - LinearCosineFormula(0.1, 0, 100, 0.5, 0.0, 0.001)) / 0.1;
    sum += n;
    sum_sq += n * n;
  }
  const double mean = sum / draws, variance = sum_sq / draws - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(variance, 1.0, 0.15);
  EXPECT_THROW(NoisyLinearCosineDecay(0.1, step, 100, -1.0), InvalidArgumentError);
}

TEST(GlobalStepTest, ReadsTheStepAsTensorFlowsGlobalStep) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable step = GetOrCreateGlobalStep();
  Output as_float = ops::Cast(step.value(), DT_FLOAT);
  Output vector = ops::Const<int64_t>({1, 2});
  Session s(g);
  EXPECT_THROW(ReadGlobalStep(s, step), FailedPreconditionError);  // not initialized yet
  s.Run({}, {}, {step.Assign(ops::Const(int64_t{41})).op()});
  EXPECT_EQ(ReadGlobalStep(s, step), 41);
  EXPECT_EQ(ReadGlobalStep(s, as_float), 41);
  EXPECT_THROW(ReadGlobalStep(s, vector), InvalidArgumentError);
  EXPECT_THROW(ReadGlobalStep(s, ops::Const(std::string("x"))), InvalidArgumentError);
  EXPECT_THROW(ReadGlobalStep(s, ops::Const(std::nanf(""))), InvalidArgumentError);
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
      {"Adadelta", [] { return std::make_unique<AdadeltaOptimizer>(1.0, AdadeltaOptions{.epsilon = 1e-4}); }},
      {"ProximalGradientDescent",
       [=] {
         return std::make_unique<ProximalGradientDescentOptimizer>(
             sgd_lr, ProximalGradientDescentOptions{.l1_regularization_strength = 1e-4,
                                                    .l2_regularization_strength = 1e-4});
       }},
      {"ProximalAdagrad",
       [] {
         return std::make_unique<ProximalAdagradOptimizer>(
             0.5, ProximalAdagradOptions{.l1_regularization_strength = 1e-4});
       }},
      {"Ftrl", [] { return std::make_unique<FtrlOptimizer>(0.5); }},
      {"FtrlV2",
       [] {
         return std::make_unique<FtrlOptimizer>(
             0.5,
             FtrlOptions{.l1_regularization_strength = 1e-4, .l2_shrinkage_regularization_strength = 1e-4});
       }},
      {"AdagradDA", [] { return std::make_unique<AdagradDAOptimizer>(0.5, GetOrCreateGlobalStep()); }},
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
