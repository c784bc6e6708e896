#include "flowtrain/ops/training_ops.h"

#include <cmath>
#include <functional>

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

// ---- Adadelta, ProximalGradientDescent, ProximalAdagrad, Ftrl(V2), AdagradDA ----

using Values = std::vector<std::vector<double>>;
// Builds the update on variables (ref.ref() or handles, as `resource` says) made of `init`
// (shape `shape` each) and returns it.
using UpdateFn = std::function<Operation(bool resource, const std::vector<Output>& vars)>;

// Runs `update` once on float variables of `init`, ref or resource, and returns their values.
Values RunUpdate(bool resource, const Values& init, const UpdateFn& update, TensorShape shape = {}) {
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<Variable> vars;
  std::vector<Output> refs;
  for (size_t i = 0; i < init.size(); ++i) {
    std::vector<float> f(init[i].begin(), init[i].end());
    const TensorShape s = shape.dims() == 0 ? TensorShape({static_cast<int64_t>(f.size())}) : shape;
    vars.emplace_back(Tensor::FromVector<float>(f, s),
                      VariableOptions{.name = "v" + std::to_string(i), .use_resource = resource});
    refs.push_back(vars.back().ref());
  }
  Operation op = update(resource, refs);
  EXPECT_EQ(op.type().starts_with("Resource"), resource) << op.type();
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  s.Run({}, {}, {op});
  Values out;
  for (const Variable& v : vars) {
    Tensor t = v.value().Eval(s);
    out.emplace_back(t.flat<float>().begin(), t.flat<float>().end());
  }
  return out;
}

void ExpectValuesNear(const Values& got, const Values& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("variable " + std::to_string(i));
    ASSERT_EQ(got[i].size(), want[i].size());
    for (size_t j = 0; j < got[i].size(); ++j) {
      EXPECT_NEAR(got[i][j], want[i][j], 2e-6 * (1 + std::abs(want[i][j]))) << j;
    }
  }
}

Output F(double v) { return ops::Const(static_cast<float>(v)); }
Output Grad(const std::vector<double>& g) {
  return ops::Const(Tensor::FromVector<float>(std::vector<float>(g.begin(), g.end())));
}
double Sign(double x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }

const std::vector<double> kV = {1.0, -2.0, 3.0, 0.05};
const std::vector<double> kG = {0.5, -1.5, 0.25, -0.1};
const std::vector<double> kSlotA = {0.1, 0.2, 0.3, 0.4};
const std::vector<double> kSlotB = {0.05, -0.5, 0.25, 0.0};

TEST(TrainingOpsTest, ApplyAdadelta) {
  const double lr = 0.5, rho = 0.9, eps = 1e-3;
  const std::vector<double> update0 = {0.01, 0.02, 0.03, 0.0};
  Values want(3, std::vector<double>(4));
  for (int i = 0; i < 4; ++i) {
    const double accum = rho * kSlotA[i] + (1 - rho) * kG[i] * kG[i];
    const double u = kG[i] * std::sqrt(update0[i] + eps) / std::sqrt(accum + eps);
    want[0][i] = kV[i] - lr * u;
    want[1][i] = accum;
    want[2][i] = rho * update0[i] + (1 - rho) * u * u;
  }
  for (bool resource : {false, true}) {
    ExpectValuesNear(
        RunUpdate(resource, {kV, kSlotA, update0},
                  [&](bool r, const std::vector<Output>& v) {
                    return r ? ops::ResourceApplyAdadelta(v[0], v[1], v[2], F(lr), F(rho), F(eps), Grad(kG))
                             : ops::ApplyAdadelta(v[0], v[1], v[2], F(lr), F(rho), F(eps), Grad(kG)).op();
                  }),
        want);
  }
}

// The proximal step of l1 and l2 on p with step size alpha.
double Prox(double p, double alpha, double l1, double l2) {
  const double shrunk = l1 > 0 ? Sign(p) * std::max(std::abs(p) - alpha * l1, 0.0) : p;
  return shrunk / (1 + alpha * l2);
}

TEST(TrainingOpsTest, ApplyProximalGradientDescent) {
  const double alpha = 0.1, l2 = 0.5;
  // l1 = 10 zeroes the elements with |p| <= 1 (the first and last).
  for (double l1 : {0.0, 10.0}) {
    Values want(1, std::vector<double>(4));
    for (int i = 0; i < 4; ++i) want[0][i] = Prox(kV[i] - alpha * kG[i], alpha, l1, l2);
    if (l1 > 0) {
      EXPECT_EQ(want[0][0], 0.0);
    }
    for (bool resource : {false, true}) {
      ExpectValuesNear(
          RunUpdate(
              resource, {kV},
              [&](bool r, const std::vector<Output>& v) {
                return r ? ops::ResourceApplyProximalGradientDescent(v[0], F(alpha), F(l1), F(l2), Grad(kG))
                         : ops::ApplyProximalGradientDescent(v[0], F(alpha), F(l1), F(l2), Grad(kG)).op();
              }),
          want);
    }
  }
}

TEST(TrainingOpsTest, ApplyProximalAdagrad) {
  const double lr = 0.2, l2 = 0.5;
  for (double l1 : {0.0, 2.0}) {
    Values want(2, std::vector<double>(4));
    for (int i = 0; i < 4; ++i) {
      const double accum = kSlotA[i] + kG[i] * kG[i];
      const double a = lr / std::sqrt(accum);
      want[0][i] = Prox(kV[i] - a * kG[i], a, l1, l2);
      want[1][i] = accum;
    }
    for (bool resource : {false, true}) {
      ExpectValuesNear(
          RunUpdate(resource, {kV, kSlotA},
                    [&](bool r, const std::vector<Output>& v) {
                      return r ? ops::ResourceApplyProximalAdagrad(v[0], v[1], F(lr), F(l1), F(l2), Grad(kG))
                               : ops::ApplyProximalAdagrad(v[0], v[1], F(lr), F(l1), F(l2), Grad(kG)).op();
                    }),
          want);
    }
  }
}

struct FtrlCase {
  double l1, lr_power, l2_shrinkage;
  bool multiply_linear_by_lr;
};

// FTRL by hand: the new var, accum and linear.
Values FtrlByHand(const FtrlCase& c, double lr, double l2) {
  Values want(3, std::vector<double>(4));
  for (int i = 0; i < 4; ++i) {
    const double g = kG[i] + 2 * c.l2_shrinkage * kV[i];
    const double n = kSlotA[i] + kG[i] * kG[i];
    const double pn = std::pow(n, -c.lr_power), po = std::pow(kSlotA[i], -c.lr_power);
    double linear, var;
    if (c.multiply_linear_by_lr) {
      linear = kSlotB[i] + g * lr - (pn - po) * kV[i];
      var = std::abs(linear) > c.l1 * lr ? (c.l1 * lr * Sign(linear) - linear) / (pn + 2 * l2 * lr) : 0;
    } else {
      linear = kSlotB[i] + g - (pn - po) / lr * kV[i];
      var = std::abs(linear) > c.l1 ? (c.l1 * Sign(linear) - linear) / (pn / lr + 2 * l2) : 0;
    }
    want[0][i] = var;
    want[1][i] = n;
    want[2][i] = linear;
  }
  return want;
}

TEST(TrainingOpsTest, ApplyFtrlAndFtrlV2) {
  const double lr = 0.3, l2 = 0.2;
  int zeroed = 0;
  for (double l1 : {0.0, 1.5}) {
    for (double lr_power : {-0.5, -0.7, 0.0}) {
      for (double shrinkage : {0.0, 0.4}) {
        for (bool mlr : {false, true}) {
          const FtrlCase c{l1, lr_power, shrinkage, mlr};
          SCOPED_TRACE(testing::Message() << "l1 " << l1 << " lr_power " << lr_power << " shrinkage "
                                          << shrinkage << " multiply_linear_by_lr " << mlr);
          const Values want = FtrlByHand(c, lr, l2);
          for (double w : want[0]) zeroed += w == 0;
          for (bool resource : {false, true}) {
            auto update = [&](bool r, const std::vector<Output>& v) -> Operation {
              if (shrinkage == 0) {
                return r ? ops::ResourceApplyFtrl(v[0], v[1], v[2], Grad(kG), F(lr), F(l1), F(l2),
                                                  F(lr_power), false, mlr)
                         : ops::ApplyFtrl(v[0], v[1], v[2], Grad(kG), F(lr), F(l1), F(l2), F(lr_power), false,
                                          mlr)
                               .op();
              }
              return r ? ops::ResourceApplyFtrlV2(v[0], v[1], v[2], Grad(kG), F(lr), F(l1), F(l2),
                                                  F(shrinkage), F(lr_power), false, mlr)
                       : ops::ApplyFtrlV2(v[0], v[1], v[2], Grad(kG), F(lr), F(l1), F(l2), F(shrinkage),
                                          F(lr_power), false, mlr)
                             .op();
            };
            ExpectValuesNear(RunUpdate(resource, {kV, kSlotA, kSlotB}, update), want);
          }
        }
      }
    }
  }
  EXPECT_GT(zeroed, 0) << "l1 never zeroed a weight: the cases do not test the threshold";
}

TEST(TrainingOpsTest, ApplyAdagradDA) {
  const double lr = 0.3, l2 = 0.25;
  const int64_t step = 3;
  for (double l1 : {0.0, 0.1}) {
    Values want(3, std::vector<double>(4));
    for (int i = 0; i < 4; ++i) {
      const double acc = kSlotB[i] + kG[i];
      const double sq = kSlotA[i] + kG[i] * kG[i];
      const double num = l1 > 0 ? Sign(acc) * std::max(std::abs(acc) - l1 * step, 0.0) : acc;
      want[0][i] = -lr * num / (l2 * step * lr + std::sqrt(sq));
      want[1][i] = acc;
      want[2][i] = sq;
    }
    for (bool resource : {false, true}) {
      ExpectValuesNear(
          RunUpdate(resource, {kV, kSlotB, kSlotA},
                    [&](bool r, const std::vector<Output>& v) {
                      const Output t = ops::Const(Tensor::Scalar<int64_t>(step));
                      return r ? ops::ResourceApplyAdagradDA(v[0], v[1], v[2], Grad(kG), F(lr), F(l1), F(l2),
                                                             t)
                               : ops::ApplyAdagradDA(v[0], v[1], v[2], Grad(kG), F(lr), F(l1), F(l2), t).op();
                    }),
          want);
    }
  }
}

// A SparseApply op (given the indices and the gradient rows) against its dense form run on the
// rows alone: the named rows change as the dense update says, in order (row 2 twice), the others
// not at all.
struct SparseCase {
  std::string name;
  int num_vars;
  std::function<Operation(bool resource, const std::vector<Output>& vars, Output grad, Output indices)>
      sparse;
  UpdateFn dense_on_grad_rows;  // the dense op with gradient kRowGrad
};

const std::vector<double> kRowGrad = {0.5, -1.5};

TEST(TrainingOpsTest, SparseApplyOpsTouchOnlyTheNamedRows) {
  auto f = [](double v) { return F(v); };
  std::vector<SparseCase> cases = {
      {"Adadelta", 3,
       [=](bool r, const std::vector<Output>& v, Output g, Output i) {
         return r ? ops::ResourceSparseApplyAdadelta(v[0], v[1], v[2], f(0.3), f(0.9), f(1e-3), g, i)
                  : ops::SparseApplyAdadelta(v[0], v[1], v[2], f(0.3), f(0.9), f(1e-3), g, i).op();
       },
       [=](bool r, const std::vector<Output>& v) {
         return r ? ops::ResourceApplyAdadelta(v[0], v[1], v[2], f(0.3), f(0.9), f(1e-3), Grad(kRowGrad))
                  : ops::ApplyAdadelta(v[0], v[1], v[2], f(0.3), f(0.9), f(1e-3), Grad(kRowGrad)).op();
       }},
      {"ProximalGradientDescent", 1,
       [=](bool r, const std::vector<Output>& v, Output g, Output i) {
         return r ? ops::ResourceSparseApplyProximalGradientDescent(v[0], f(0.3), f(0.5), f(0.2), g, i)
                  : ops::SparseApplyProximalGradientDescent(v[0], f(0.3), f(0.5), f(0.2), g, i).op();
       },
       [=](bool r, const std::vector<Output>& v) {
         return r ? ops::ResourceApplyProximalGradientDescent(v[0], f(0.3), f(0.5), f(0.2), Grad(kRowGrad))
                  : ops::ApplyProximalGradientDescent(v[0], f(0.3), f(0.5), f(0.2), Grad(kRowGrad)).op();
       }},
      {"ProximalAdagrad", 2,
       [=](bool r, const std::vector<Output>& v, Output g, Output i) {
         return r ? ops::ResourceSparseApplyProximalAdagrad(v[0], v[1], f(0.3), f(0.5), f(0.2), g, i)
                  : ops::SparseApplyProximalAdagrad(v[0], v[1], f(0.3), f(0.5), f(0.2), g, i).op();
       },
       [=](bool r, const std::vector<Output>& v) {
         return r ? ops::ResourceApplyProximalAdagrad(v[0], v[1], f(0.3), f(0.5), f(0.2), Grad(kRowGrad))
                  : ops::ApplyProximalAdagrad(v[0], v[1], f(0.3), f(0.5), f(0.2), Grad(kRowGrad)).op();
       }},
      {"Ftrl", 3,
       [=](bool r, const std::vector<Output>& v, Output g, Output i) {
         return r ? ops::ResourceSparseApplyFtrl(v[0], v[1], v[2], g, i, f(0.3), f(0.05), f(0.2), f(-0.5))
                  : ops::SparseApplyFtrl(v[0], v[1], v[2], g, i, f(0.3), f(0.05), f(0.2), f(-0.5)).op();
       },
       [=](bool r, const std::vector<Output>& v) {
         return r ? ops::ResourceApplyFtrl(v[0], v[1], v[2], Grad(kRowGrad), f(0.3), f(0.05), f(0.2), f(-0.5))
                  : ops::ApplyFtrl(v[0], v[1], v[2], Grad(kRowGrad), f(0.3), f(0.05), f(0.2), f(-0.5)).op();
       }},
      {"FtrlV2", 3,
       [=](bool r, const std::vector<Output>& v, Output g, Output i) {
         return r ? ops::ResourceSparseApplyFtrlV2(v[0], v[1], v[2], g, i, f(0.3), f(0.05), f(0.2), f(0.4),
                                                   f(-0.6), false, true)
                  : ops::SparseApplyFtrlV2(v[0], v[1], v[2], g, i, f(0.3), f(0.05), f(0.2), f(0.4), f(-0.6),
                                           false, true)
                        .op();
       },
       [=](bool r, const std::vector<Output>& v) {
         return r ? ops::ResourceApplyFtrlV2(v[0], v[1], v[2], Grad(kRowGrad), f(0.3), f(0.05), f(0.2),
                                             f(0.4), f(-0.6), false, true)
                  : ops::ApplyFtrlV2(v[0], v[1], v[2], Grad(kRowGrad), f(0.3), f(0.05), f(0.2), f(0.4),
                                     f(-0.6), false, true)
                        .op();
       }},
      {"AdagradDA", 3,
       [=](bool r, const std::vector<Output>& v, Output g, Output i) {
         const Output t = ops::Const(Tensor::Scalar<int64_t>(2));
         return r ? ops::ResourceSparseApplyAdagradDA(v[0], v[1], v[2], g, i, f(0.3), f(0.05), f(0.2), t)
                  : ops::SparseApplyAdagradDA(v[0], v[1], v[2], g, i, f(0.3), f(0.05), f(0.2), t).op();
       },
       [=](bool r, const std::vector<Output>& v) {
         const Output t = ops::Const(Tensor::Scalar<int64_t>(2));
         return r ? ops::ResourceApplyAdagradDA(v[0], v[1], v[2], Grad(kRowGrad), f(0.3), f(0.05), f(0.2), t)
                  : ops::ApplyAdagradDA(v[0], v[1], v[2], Grad(kRowGrad), f(0.3), f(0.05), f(0.2), t).op();
       }},
  };
  // Variables of 3 rows of 2; the slots positive (Adadelta's and Adagrad's take square roots).
  const std::vector<double> var = {1.0, -2.0, 3.0, 0.5, -0.25, 4.0};
  const std::vector<double> slot = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
  auto row = [](const std::vector<double>& v, int r) { return std::vector<double>{v[2 * r], v[2 * r + 1]}; };
  for (const SparseCase& c : cases) {
    SCOPED_TRACE(c.name);
    Values init(c.num_vars, slot);
    init[0] = var;
    for (bool resource : {false, true}) {
      for (DataType index_type : {DT_INT32, DT_INT64}) {
        // Rows 2, 0, 2, each with gradient row kRowGrad: row 2 is updated twice.
        const std::vector<double> grads = {0.5, -1.5, 0.5, -1.5, 0.5, -1.5};
        const Values got = RunUpdate(
            resource, init,
            [&](bool r, const std::vector<Output>& v) {
              const Output indices = index_type == DT_INT32
                                         ? ops::Const(Tensor::FromVector<int32_t>({2, 0, 2}))
                                         : ops::Const(Tensor::FromVector<int64_t>({2, 0, 2}));
              const std::vector<float> g(grads.begin(), grads.end());
              return c.sparse(r, v, ops::Const(Tensor::FromVector<float>(g, TensorShape({3, 2}))), indices);
            },
            TensorShape({3, 2}));
        // Row 1 is untouched.
        for (int k = 0; k < c.num_vars; ++k) {
          EXPECT_EQ(got[k][2], static_cast<float>(init[k][2])) << k;
          EXPECT_EQ(got[k][3], static_cast<float>(init[k][3])) << k;
        }
        // Rows 2 (twice) and 0 (once) as the dense op on the row alone.
        Values row2(c.num_vars), row0(c.num_vars);
        for (int k = 0; k < c.num_vars; ++k) {
          row2[k] = row(init[k], 2);
          row0[k] = row(init[k], 0);
        }
        row2 = RunUpdate(resource, row2, c.dense_on_grad_rows);
        row2 = RunUpdate(resource, row2, c.dense_on_grad_rows);
        row0 = RunUpdate(resource, row0, c.dense_on_grad_rows);
        for (int k = 0; k < c.num_vars; ++k) {
          EXPECT_NEAR(got[k][0], row0[k][0], 1e-6) << k;
          EXPECT_NEAR(got[k][1], row0[k][1], 1e-6) << k;
          EXPECT_NEAR(got[k][4], row2[k][0], 1e-6) << k;
          EXPECT_NEAR(got[k][5], row2[k][1], 1e-6) << k;
        }
        EXPECT_NE(got[0][4], static_cast<float>(init[0][4]));
      }
    }
  }
}

TEST(TrainingOpsTest, SparseApplyErrors) {
  Fixture f;
  Variable var(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})), {.name = "var"});
  Variable accum(Tensor::FromVector<float>({1, 1, 1, 1, 1, 1}, TensorShape({3, 2})), {.name = "accum"});
  Variable linear(Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, TensorShape({3, 2})), {.name = "linear"});
  Output grad = ops::Placeholder(DT_FLOAT);
  Output indices = ops::Placeholder(DT_INT32);
  Output ftrl =
      ops::SparseApplyFtrl(var.ref(), accum.ref(), linear.ref(), grad, indices, F(0.1), F(0), F(0), F(-0.5));
  Session s(f.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  const Tensor two_rows = Tensor::FromVector<float>({1, 1, 1, 1}, TensorShape({2, 2}));
  try {
    s.Run({{grad, two_rows}, {indices, Tensor::FromVector<int32_t>({0, 3})}}, {}, {ftrl.op()});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("SparseApplyFtrl: index 3 at offset 1"), std::string::npos)
        << e.what();
  }
  // Nothing was updated, not even row 0 before the bad index.
  EXPECT_EQ(Read(s, var), std::vector<float>({1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(s.Run({{grad, two_rows}, {indices, Tensor::FromVector<int32_t>({-1, 0})}}, {}, {ftrl.op()}),
               InvalidArgumentError);
  // grad rows must match the indices and var's row shape.
  EXPECT_THROW(s.Run({{grad, two_rows}, {indices, Tensor::FromVector<int32_t>({0})}}, {}, {ftrl.op()}),
               InvalidArgumentError);
  EXPECT_THROW(s.Run({{grad, Tensor::FromVector<float>({1, 1, 1, 1, 1, 1}, TensorShape({2, 3}))},
                      {indices, Tensor::FromVector<int32_t>({0, 1})}},
                     {}, {ftrl.op()}),
               InvalidArgumentError);
  EXPECT_THROW(s.Run({{grad, two_rows}, {indices, Tensor::FromVector<int32_t>({0, 1}, TensorShape({1, 2}))}},
                     {}, {ftrl.op()}),
               InvalidArgumentError);
  // Scalars and shapes are checked while building, for the dense ops too.
  EXPECT_THROW(ops::SparseApplyFtrl(var.ref(), accum.ref(), linear.ref(), grad, indices,
                                    ops::Const<float>({0.1f, 0.2f}), F(0), F(0), F(-0.5)),
               InvalidArgumentError);
  EXPECT_THROW(ops::ApplyFtrl(var.ref(), accum.ref(), linear.ref(), ops::Const<float>({1, 2}), F(0.1), F(0),
                              F(0), F(-0.5)),
               InvalidArgumentError);
  Variable small = f.Var({1, 2}, "small");
  EXPECT_THROW(
      ops::ApplyAdadelta(var.ref(), accum.ref(), small.ref(), F(1), F(0.9), F(1e-6),
                         ops::Const(Tensor::FromVector<float>({1, 1, 1, 1, 1, 1}, TensorShape({3, 2})))),
      InvalidArgumentError);
  // A resource variable in a ref op is refused.
  Variable res(Tensor::FromVector<float>({1, 2}), {.name = "res", .use_resource = true});
  EXPECT_THROW(ops::ApplyProximalGradientDescent(res.ref(), F(0.1), F(0), F(0), ops::Const<float>({1, 1})),
               InvalidArgumentError);
}

TEST(TrainingOpsTest, NewUpdatesRunOnDoubles) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable var(Tensor::FromVector<double>({1.0, -2.0}), {.name = "var", .use_resource = true});
  Variable accum(Tensor::FromVector<double>({0.1, 0.1}), {.name = "accum", .use_resource = true});
  Variable linear(Tensor::FromVector<double>({0.0, 0.0}), {.name = "linear", .use_resource = true});
  const std::vector<double> grad = {0.5, -0.25};
  Operation op = ops::ResourceApplyFtrl(var.ref(), accum.ref(), linear.ref(),
                                        ops::Const(Tensor::FromVector<double>(grad)), ops::Const(0.1),
                                        ops::Const(0.0), ops::Const(0.0), ops::Const(-0.5));
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  s.Run({}, {}, {op});
  Tensor out = var.value().Eval(s);
  for (int i = 0; i < 2; ++i) {
    const double v0 = i == 0 ? 1.0 : -2.0, n = 0.1 + grad[i] * grad[i];
    const double lin = grad[i] - (std::sqrt(n) - std::sqrt(0.1)) / 0.1 * v0;
    EXPECT_NEAR(out.flat<double>()[i], -lin / (std::sqrt(n) / 0.1), 1e-14) << i;
  }
}

}  // namespace
}  // namespace flowtrain
