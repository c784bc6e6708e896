#include "flowtrain/ops/training_ops.h"

#include <cmath>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

// A variable of `values` and a session that initialized it.
struct Fixture {
  Graph g;
  ScopeGuard as_default = g.AsDefault();
  Variable Var(const std::vector<float>& values, std::string_view name) {
    return Variable(Tensor::FromVector<float>(values), {.name = std::string(name)});
  }
};

std::vector<float> Read(Session& s, const Variable& v) {
  Tensor t = v.value().Eval(s);
  return {t.flat<float>().begin(), t.flat<float>().end()};
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * (1 + std::abs(want[i]))) << i;
}

const std::vector<float> kVar = {1.0f, -2.0f, 3.0f};
const std::vector<float> kGrad = {0.5f, -1.5f, 0.25f};

TEST(TrainingOpsTest, ApplyGradientDescent) {
  Fixture f;
  Variable var = f.Var(kVar, "var");
  Output update =
      ops::ApplyGradientDescent(var.ref(), ops::Const(0.1f), ops::Const<float>({0.5f, -1.5f, 0.25f}));
  EXPECT_EQ(update.op().name(), "ApplyGradientDescent");
  EXPECT_TRUE(update.is_ref());
  Session s(f.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  Tensor out = s.Run({}, {update})[0];
  std::vector<double> want;
  for (int i = 0; i < 3; ++i) want.push_back(kVar[i] - 0.1 * kGrad[i]);
  ExpectNear({out.flat<float>().begin(), out.flat<float>().end()}, want);
  ExpectNear(Read(s, var), want);
}

TEST(TrainingOpsTest, ApplyMomentumPlainAndNesterov) {
  for (bool nesterov : {false, true}) {
    Fixture f;
    Variable var = f.Var(kVar, "var");
    Variable accum = f.Var({0.1f, 0.2f, 0.3f}, "accum");
    Output update =
        ops::ApplyMomentum(var.ref(), accum.ref(), ops::Const(0.1f),
                           ops::Const(Tensor::FromVector<float>(kGrad)), ops::Const(0.9f), false, nesterov);
    EXPECT_EQ(update.op().GetAttr<bool>("use_nesterov"), nesterov);
    Session s(f.g);
    s.Run({}, {}, {ops::GlobalVariablesInitializer()});
    // Two steps, so the accumulator's history matters.
    s.Run({}, {}, {update.op()});
    s.Run({}, {}, {update.op()});
    std::vector<double> v(kVar.begin(), kVar.end()), a = {0.1, 0.2, 0.3};
    for (int step = 0; step < 2; ++step) {
      for (int i = 0; i < 3; ++i) {
        a[i] = a[i] * 0.9 + kGrad[i];
        v[i] -= nesterov ? kGrad[i] * 0.1 + a[i] * 0.9 * 0.1 : 0.1 * a[i];
      }
    }
    ExpectNear(Read(s, var), v);
    ExpectNear(Read(s, accum), a);
  }
}

TEST(TrainingOpsTest, ApplyAdamPlainAndNesterov) {
  for (bool nesterov : {false, true}) {
    Fixture f;
    Variable var = f.Var(kVar, "var");
    Variable m = f.Var({0.1f, -0.1f, 0.0f}, "m");
    Variable v = f.Var({0.01f, 0.02f, 0.0f}, "v");
    const double b1p = 0.9 * 0.9, b2p = 0.999 * 0.999, lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    Output update =
        ops::ApplyAdam(var.ref(), m.ref(), v.ref(), ops::Const(float(b1p)), ops::Const(float(b2p)),
                       ops::Const(float(lr)), ops::Const(float(b1)), ops::Const(float(b2)),
                       ops::Const(float(eps)), ops::Const(Tensor::FromVector<float>(kGrad)), false, nesterov);
    Session s(f.g);
    s.Run({}, {}, {ops::GlobalVariablesInitializer()});
    s.Run({}, {}, {update.op()});
    std::vector<double> want_var(3), want_m = {0.1, -0.1, 0.0}, want_v = {0.01, 0.02, 0.0};
    const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
    for (int i = 0; i < 3; ++i) {
      const double g = kGrad[i];
      want_m[i] += (g - want_m[i]) * (1 - b1);
      want_v[i] += (g * g - want_v[i]) * (1 - b2);
      const double numer = nesterov ? g * (1 - b1) + b1 * want_m[i] : want_m[i];
      want_var[i] = kVar[i] - lr_t * numer / (std::sqrt(want_v[i]) + eps);
    }
    ExpectNear(Read(s, var), want_var);
    ExpectNear(Read(s, m), want_m);
    ExpectNear(Read(s, v), want_v);
  }
}

TEST(TrainingOpsTest, ApplyAdagrad) {
  Fixture f;
  Variable var = f.Var(kVar, "var");
  Variable accum = f.Var({0.1f, 0.1f, 0.1f}, "accum");
  Output update = ops::ApplyAdagrad(var.ref(), accum.ref(), ops::Const(0.5f),
                                    ops::Const(Tensor::FromVector<float>(kGrad)));
  Session s(f.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  s.Run({}, {}, {update.op()});
  std::vector<double> want_var(3), want_acc(3);
  for (int i = 0; i < 3; ++i) {
    want_acc[i] = 0.1 + double(kGrad[i]) * kGrad[i];
    want_var[i] = kVar[i] - 0.5 * kGrad[i] / std::sqrt(want_acc[i]);
  }
  ExpectNear(Read(s, var), want_var);
  ExpectNear(Read(s, accum), want_acc);
}

// Rows 2 and 0 of a [3, 2] variable, row 2 twice (updated once per occurrence, in order).
TEST(TrainingOpsTest, SparseApplyAdagradUpdatesOnlyTheIndexedRows) {
  Fixture f;
  Variable var(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})), {.name = "var"});
  Variable accum(Tensor::FromVector<float>({0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f}, TensorShape({3, 2})),
                 {.name = "accum"});
  const std::vector<float> g = {0.5f, -1.0f, 2.0f, 0.25f, -0.5f, 1.5f};
  Output update = ops::SparseApplyAdagrad(var.ref(), accum.ref(), ops::Const(0.5f),
                                          ops::Const(Tensor::FromVector<float>(g, TensorShape({3, 2}))),
                                          ops::Const<int64_t>({2, 0, 2}));
  EXPECT_EQ(update.shape().DebugString(), "[3,2]");
  Session s(f.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  s.Run({}, {}, {update.op()});
  std::vector<double> want_var = {1, 2, 3, 4, 5, 6}, want_acc(6, 0.1);
  for (int i : {0, 1, 2}) {
    const int row = std::vector<int>{2, 0, 2}[i];
    for (int c = 0; c < 2; ++c) {
      const double gi = g[i * 2 + c];
      want_acc[row * 2 + c] += gi * gi;
      want_var[row * 2 + c] -= 0.5 * gi / std::sqrt(want_acc[row * 2 + c]);
    }
  }
  ExpectNear(Read(s, var), want_var);
  ExpectNear(Read(s, accum), want_acc);

  Output out_of_range = ops::SparseApplyAdagrad(
      var.ref(), accum.ref(), ops::Const(0.5f),
      ops::Const(Tensor::FromVector<float>({1, 1}, TensorShape({1, 2}))), ops::Const<int32_t>({3}));
  EXPECT_THROW(s.Run({}, {}, {out_of_range.op()}), InvalidArgumentError);
  Output wrong_rows = ops::SparseApplyAdagrad(
      var.ref(), accum.ref(), ops::Const(0.5f),
      ops::Const(Tensor::FromVector<float>({1, 1}, TensorShape({1, 2}))), ops::Const<int32_t>({0, 1}));
  EXPECT_THROW(s.Run({}, {}, {wrong_rows.op()}), InvalidArgumentError);
  ExpectNear(Read(s, var), want_var);  // the failed updates changed nothing
}

TEST(TrainingOpsTest, ApplyRMSPropAndCentered) {
  const double lr = 0.01, rho = 0.9, momentum = 0.5, eps = 1e-6;
  {
    Fixture f;
    Variable var = f.Var(kVar, "var");
    Variable ms = f.Var({1, 1, 1}, "ms");
    Variable mom = f.Var({0.1f, 0, -0.1f}, "mom");
    Output update = ops::ApplyRMSProp(var.ref(), ms.ref(), mom.ref(), ops::Const(float(lr)),
                                      ops::Const(float(rho)), ops::Const(float(momentum)),
                                      ops::Const(float(eps)), ops::Const(Tensor::FromVector<float>(kGrad)));
    Session s(f.g);
    s.Run({}, {}, {ops::GlobalVariablesInitializer()});
    s.Run({}, {}, {update.op()});
    std::vector<double> want_var(3), want_ms(3), want_mom = {0.1, 0, -0.1};
    for (int i = 0; i < 3; ++i) {
      const double g = kGrad[i];
      want_ms[i] = 1 + (g * g - 1) * (1 - rho);
      want_mom[i] = want_mom[i] * momentum + lr * g / std::sqrt(want_ms[i] + eps);
      want_var[i] = kVar[i] - want_mom[i];
    }
    ExpectNear(Read(s, var), want_var);
    ExpectNear(Read(s, ms), want_ms);
    ExpectNear(Read(s, mom), want_mom);
  }
  {
    Fixture f;
    Variable var = f.Var(kVar, "var");
    Variable mg = f.Var({0.2f, 0.1f, 0}, "mg");
    Variable ms = f.Var({1, 1, 1}, "ms");
    Variable mom = f.Var({0, 0, 0}, "mom");
    Output update = ops::ApplyCenteredRMSProp(
        var.ref(), mg.ref(), ms.ref(), mom.ref(), ops::Const(float(lr)), ops::Const(float(rho)),
        ops::Const(float(momentum)), ops::Const(float(eps)), ops::Const(Tensor::FromVector<float>(kGrad)));
    Session s(f.g);
    s.Run({}, {}, {ops::GlobalVariablesInitializer()});
    s.Run({}, {}, {update.op()});
    std::vector<double> want_var(3), want_mg = {0.2, 0.1, 0};
    for (int i = 0; i < 3; ++i) {
      const double g = kGrad[i];
      const double ms_i = 1 + (g * g - 1) * (1 - rho);
      want_mg[i] += (g - want_mg[i]) * (1 - rho);
      const double mom_i = lr * g / std::sqrt(ms_i - want_mg[i] * want_mg[i] + eps);
      want_var[i] = kVar[i] - mom_i;
    }
    ExpectNear(Read(s, var), want_var);
    ExpectNear(Read(s, mg), want_mg);
  }
}

TEST(TrainingOpsTest, DoubleVariablesAndLargeVariablesSplitAcrossThreads) {
  Graph g;
  auto as_default = g.AsDefault();
  const int64_t n = 1 << 20;
  std::vector<double> init(n), grad(n);
  for (int64_t i = 0; i < n; ++i) {
    init[i] = 0.001 * (i % 1000);
    grad[i] = 1.0 - 0.002 * (i % 777);
  }
  Variable var(Tensor::FromVector<double>(init), {.name = "big"});
  Variable accum(Tensor::FromVector<double>(std::vector<double>(n, 0.0)), {.name = "accum"});
  Output update = ops::ApplyMomentum(var.ref(), accum.ref(), ops::Const(0.5),
                                     ops::Const(Tensor::FromVector<double>(grad)), ops::Const(0.9));
  SessionOptions options;
  options.config.intra_op_parallelism_threads = 4;
  Session s(g, options);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  s.Run({}, {}, {update.op()});
  Tensor out = var.value().Eval(s);
  for (int64_t i = 0; i < n; i += 4099) EXPECT_DOUBLE_EQ(out.flat<double>()[i], init[i] - 0.5 * grad[i]) << i;
  EXPECT_DOUBLE_EQ(out.flat<double>()[n - 1], init[n - 1] - 0.5 * grad[n - 1]);
}

TEST(TrainingOpsTest, FetchedValuesDoNotChangeUnderLaterUpdates) {
  Fixture f;
  Variable var = f.Var(kVar, "var");
  Output update = ops::ApplyGradientDescent(var.ref(), ops::Const(1.0f), ops::Const<float>({1, 1, 1}));
  Session s(f.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  Tensor before = var.value().Eval(s);
  s.Run({}, {}, {update.op()});
  EXPECT_EQ(before.flat<float>()[0], 1.0f);
  EXPECT_EQ(Read(s, var)[0], 0.0f);
}

TEST(TrainingOpsTest, Errors) {
  Fixture f;
  Variable var = f.Var(kVar, "var");
  Variable small = f.Var({1, 2}, "small");
  // Shapes are checked while building.
  EXPECT_THROW(ops::ApplyGradientDescent(var.ref(), ops::Const(0.1f), ops::Const<float>({1, 2})),
               InvalidArgumentError);
  EXPECT_THROW(ops::ApplyGradientDescent(var.ref(), ops::Const<float>({0.1f}),
                                         ops::Const(Tensor::FromVector<float>(kGrad))),
               InvalidArgumentError);
  EXPECT_THROW(ops::ApplyMomentum(var.ref(), small.ref(), ops::Const(0.1f),
                                  ops::Const(Tensor::FromVector<float>(kGrad)), ops::Const(0.9f)),
               InvalidArgumentError);
  // The variable must be a reference.
  EXPECT_THROW(
      ops::ApplyGradientDescent(var.value(), ops::Const(0.1f), ops::Const(Tensor::FromVector<float>(kGrad))),
      InvalidArgumentError);
  // An uninitialized variable fails when run, naming it.
  Output update =
      ops::ApplyGradientDescent(var.ref(), ops::Const(0.1f), ops::Const(Tensor::FromVector<float>(kGrad)));
  Session s(f.g);
  try {
    s.Run({}, {}, {update.op()});
    FAIL() << "expected FailedPrecondition";
  } catch (const FailedPreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("Attempting to use uninitialized value var"), std::string::npos)
        << e.what();
  }
  // A fed gradient of the wrong shape fails when run.
  Output grad = ops::Placeholder(DT_FLOAT);
  Output fed = ops::ApplyGradientDescent(var.ref(), ops::Const(0.1f), grad);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_THROW(s.Run({{grad, Tensor::FromVector<float>({1})}}, {}, {fed.op()}), InvalidArgumentError);
}

}  // namespace
}  // namespace flowtrain
