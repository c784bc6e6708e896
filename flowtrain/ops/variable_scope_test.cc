#include "flowtrain/ops/variable_scope.h"

#include <cmath>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

// ---- Initializers ----

TEST(InitOpsTest, FansFollowTf) {
  EXPECT_EQ(ops::ComputeFans(TensorShape({})), std::make_pair(1.0, 1.0));
  EXPECT_EQ(ops::ComputeFans(TensorShape({7})), std::make_pair(7.0, 7.0));
  EXPECT_EQ(ops::ComputeFans(TensorShape({3, 5})), std::make_pair(3.0, 5.0));
  EXPECT_EQ(ops::ComputeFans(TensorShape({2, 3, 4, 5})), std::make_pair(24.0, 30.0));
}

TEST(InitOpsTest, ValuesAndNames) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable zeros([] { return ops::ZerosInitializer()(TensorShape({2, 3}), DT_FLOAT); }, {.name = "z"});
  Variable big_ones([] { return ops::OnesInitializer()(TensorShape({50, 40}), DT_FLOAT); }, {.name = "o"});
  Variable c([] { return ops::ConstantInitializer(2.5)(TensorShape({4}), DT_DOUBLE); }, {.name = "c"});
  Variable izero([] { return ops::ZerosInitializer()(TensorShape({}), DT_INT64); }, {.name = "i"});
  Variable glorot(
      [] {
        return ops::GlorotUniformInitializer(1)(TensorShape({200, 300}), DT_FLOAT);
      },
      {.name = "glorot"});
  Variable he(
      [] {
        return ops::HeNormalInitializer(2)(TensorShape({3, 3, 64, 64}), DT_FLOAT);
      },
      {.name = "he"});
  Variable trunc([] { return ops::TruncatedNormalInitializer(1.0, 0.1, 3)(TensorShape({10000}), DT_FLOAT); },
                 {.name = "trunc"});
  EXPECT_NE(g.FindNode("z/Initializer/zeros"), nullptr);
  EXPECT_EQ(g.FindNode("o/Initializer/ones")->type(), "Fill");  // big: Fill, as TF
  EXPECT_NE(g.FindNode("o/Initializer/ones/shape_as_tensor"), nullptr);
  EXPECT_NE(g.FindNode("c/Initializer/Const"), nullptr);
  EXPECT_NE(g.FindNode("glorot/Initializer/random_uniform/RandomUniform"), nullptr);
  EXPECT_NE(g.FindNode("he/Initializer/truncated_normal/TruncatedNormal"), nullptr);
  EXPECT_EQ(izero.dtype(), DT_INT64);
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  // Each evaluated tensor is held in a variable: a range-for over Eval(s).flat<T>() would
  // iterate a span into a temporary Tensor destroyed before the loop starts.
  const Tensor zeros_value = zeros.value().Eval(s), ones_value = big_ones.value().Eval(s),
               c_value = c.value().Eval(s);
  for (float v : zeros_value.flat<float>()) EXPECT_EQ(v, 0.0f);
  for (float v : ones_value.flat<float>()) EXPECT_EQ(v, 1.0f);
  for (double v : c_value.flat<double>()) EXPECT_EQ(v, 2.5);
  const double limit = std::sqrt(6.0 / 500.0);
  double max_abs = 0;
  const Tensor glorot_value = glorot.value().Eval(s);
  for (float v : glorot_value.flat<float>()) max_abs = std::max(max_abs, double(std::abs(v)));
  EXPECT_LE(max_abs, limit);
  EXPECT_GT(max_abs, 0.95 * limit);
  // He normal: variance 2 / fan_in.
  Tensor h = he.value().Eval(s);
  double sq = 0;
  for (float v : h.flat<float>()) sq += double(v) * v;
  EXPECT_NEAR(sq / h.NumElements(), 2.0 / (3 * 3 * 64), 0.1 * 2.0 / (3 * 3 * 64));
  const Tensor trunc_value = trunc.value().Eval(s);
  for (float v : trunc_value.flat<float>()) {
    EXPECT_GE(v, 0.8f);
    EXPECT_LE(v, 1.2f);
  }
  EXPECT_THROW(ops::GlorotUniformInitializer()(TensorShape({2}), DT_INT32), InvalidArgumentError);
}

// ---- Variable scopes ----

TEST(VariableScopeTest, NamesAndReuse) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable w;
  {
    ops::VariableScope scope("dense");
    EXPECT_EQ(scope.name(), "dense");
    w = ops::GetVariable("kernel", TensorShape({3, 4}));
    EXPECT_EQ(w.op().name(), "dense/kernel");
    EXPECT_EQ(w.dtype(), DT_FLOAT);
    EXPECT_TRUE(w.trainable());
    // The default initializer of floats is glorot_uniform.
    EXPECT_NE(g.FindNode("dense/kernel/Initializer/random_uniform"), nullptr);
    EXPECT_THROW(ops::GetVariable("kernel", TensorShape({3, 4})), InvalidArgumentError);
    {
      ops::VariableScope inner("inner");
      EXPECT_EQ(ops::GetVariable("b", TensorShape({1}), DT_INT32).op().name(), "dense/inner/b");
      EXPECT_EQ(ops::CurrentVariableScopeName(), "dense/inner");
    }
  }
  {
    ops::VariableScope scope("dense", {.reuse = ops::Reuse::kReuse});
    EXPECT_EQ(scope.original_name_scope(), "dense_1/");  // name scopes are made unique
    Variable same = ops::GetVariable("kernel", TensorShape({3, 4}));
    EXPECT_EQ(same, w);
    try {
      ops::GetVariable("kernel", TensorShape({4, 4}));
      FAIL();
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(
          std::string(e.what()).find("Trying to share variable dense/kernel, but specified shape [4,4]"),
          std::string::npos)
          << e.what();
    }
    try {
      ops::GetVariable("missing", TensorShape({1}));
      FAIL();
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("Variable dense/missing does not exist"), std::string::npos)
          << e.what();
    }
  }
  {
    ops::VariableScope scope("auto", {.reuse = ops::Reuse::kAutoReuse});
    Variable a = ops::GetVariable("v", TensorShape({2}));
    Variable b = ops::GetVariable("v", TensorShape({2}));
    EXPECT_EQ(a, b);
  }
  EXPECT_EQ(ops::CurrentVariableScopeName(), "");
  // Non-trainable variables and custom collections.
  Variable local = ops::GetVariable("counter", TensorShape({}), DT_INT64, nullptr,
                                    {.trainable = false, .collections = {GraphKeys::kLocalVariables}});
  EXPECT_EQ(ops::LocalVariables().size(), 1u);
  EXPECT_EQ(ops::TrainableVariables().size(), 3u);  // dense/kernel, dense/inner/b, auto/v
  (void)local;
}

TEST(VariableScopeTest, ScopeInitializerIsInherited) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::VariableScope scope("s", {.initializer = ops::ConstantInitializer(3.0)});
  Variable v = ops::GetVariable("v", TensorShape({2}));
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(v.value().Eval(s).flat<float>()[1], 3.0f);
}

// ---- Global step ----

TEST(GlobalStepTest, CreateGetAndErrors) {
  Graph g;
  auto as_default = g.AsDefault();
  EXPECT_FALSE(train::GetGlobalStep().has_value());
  Variable step;
  {
    auto scope = g.NameScope("somewhere");
    step = train::CreateGlobalStep();
  }
  EXPECT_EQ(step.op().name(), "global_step");
  EXPECT_EQ(step.dtype(), DT_INT64);
  EXPECT_EQ(step.shape().dims(), 0);
  EXPECT_FALSE(step.trainable());
  EXPECT_NE(g.FindNode("global_step/Initializer/zeros"), nullptr);
  EXPECT_EQ(g.GetCollection<Variable>(GraphKeys::kGlobalStep).size(), 1u);
  EXPECT_EQ(ops::GlobalVariables().size(), 1u);
  EXPECT_TRUE(ops::TrainableVariables().empty());
  EXPECT_EQ(*train::GetGlobalStep(), step);
  EXPECT_EQ(train::GetOrCreateGlobalStep(), step);
  try {
    train::CreateGlobalStep();
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("\"global_step\" already exists."), std::string::npos);
  }
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(step.value().Eval(s).scalar<int64_t>(), 0);
}

TEST(GlobalStepTest, FoundByNameAndValidated) {
  {
    Graph g;
    auto as_default = g.AsDefault();
    Variable named(Tensor::Scalar<int32_t>(5), {.name = "global_step", .trainable = false});
    std::optional<Variable> found = train::GetGlobalStep();
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->op().name(), "global_step");
  }
  {
    Graph g;
    auto as_default = g.AsDefault();
    Variable bad(Tensor::Scalar<float>(0), {.name = "global_step"});
    EXPECT_THROW(train::GetGlobalStep(), InvalidArgumentError);
  }
  {
    Graph g;
    auto as_default = g.AsDefault();
    Variable vec(Tensor::FromVector<int64_t>({1, 2}), {.name = "step"});
    EXPECT_THROW(train::AssertGlobalStep(vec), InvalidArgumentError);
    g.AddToCollection(GraphKeys::kGlobalStep, vec);
    EXPECT_THROW(train::GetGlobalStep(), InvalidArgumentError);
    g.AddToCollection(GraphKeys::kGlobalStep, vec);
    EXPECT_FALSE(train::GetGlobalStep().has_value());  // several: logged, none returned
  }
}

}  // namespace
}  // namespace flowtrain
