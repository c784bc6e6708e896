#include "flowtrain/train/optimizer.h"

#include <cmath>
#include <map>
#include <memory>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/layers.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variable_scope.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/adadelta.h"
#include "flowtrain/train/adagrad.h"
#include "flowtrain/train/adagrad_da.h"
#include "flowtrain/train/adam.h"
#include "flowtrain/train/ftrl.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/momentum.h"
#include "flowtrain/train/proximal_adagrad.h"
#include "flowtrain/train/proximal_gradient_descent.h"
#include "flowtrain/train/rmsprop.h"

namespace flowtrain::train {
namespace {

// A linear model "dense" (kernel [2, 1], bias [1]) with a mean squared error loss.
struct Model {
  Graph g;
  ScopeGuard as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {-1, 2}, "x");
  Output y = ops::Placeholder(DT_FLOAT, {-1, 1}, "y");
  Variable kernel, bias;
  Output loss;
  Model() {
    {
      ops::VariableScope scope("dense");
      kernel = ops::GetVariable("kernel", TensorShape({2, 1}), DT_FLOAT, ops::ZerosInitializer());
      bias = ops::GetVariable("bias", TensorShape({1}), DT_FLOAT, ops::ZerosInitializer());
    }
    Output err = ops::MatMul(x, kernel) + bias - y;
    loss = ops::ReduceMean(err * err);
  }
  // y = 2 x0 - 3 x1 + 1 on a fixed batch.
  FeedList Batch() const {
    std::vector<float> xs, ys;
    for (int i = 0; i < 16; ++i) {
      const float a = std::sin(1.3f * i), b = std::cos(0.7f * i + 0.2f);
      xs.push_back(a);
      xs.push_back(b);
      ys.push_back(2 * a - 3 * b + 1);
    }
    return {{x, Tensor::FromVector<float>(xs, TensorShape({16, 2}))},
            {y, Tensor::FromVector<float>(ys, TensorShape({16, 1}))}};
  }
};

bool Has(const Graph& g, const std::string& name) { return g.FindNode(name) != nullptr; }

TEST(OptimizerTest, AdamNamesSlotsAndUpdatesAsTf) {
  Model m;
  Variable step = GetOrCreateGlobalStep();
  AdamOptimizer adam(0.01);
  Operation train_op = adam.Minimize(m.loss, step);
  EXPECT_EQ(train_op.name(), "Adam");
  EXPECT_EQ(train_op.type(), "AssignAdd");
  EXPECT_TRUE(Has(m.g, "Adam/update"));
  EXPECT_TRUE(Has(m.g, "Adam/update_dense/kernel/ApplyAdam"));
  EXPECT_TRUE(Has(m.g, "Adam/update_dense/bias/ApplyAdam"));
  EXPECT_TRUE(Has(m.g, "Adam/learning_rate"));
  EXPECT_TRUE(Has(m.g, "Adam/beta1"));
  EXPECT_TRUE(Has(m.g, "Adam/epsilon"));
  EXPECT_TRUE(Has(m.g, "Adam/mul"));
  EXPECT_TRUE(Has(m.g, "Adam/Assign"));
  EXPECT_TRUE(Has(m.g, "Adam/Assign_1"));
  EXPECT_TRUE(Has(m.g, "dense/kernel/Adam/Initializer/zeros"));
  EXPECT_EQ(adam.GetSlot(m.kernel, "m")->op().name(), "dense/kernel/Adam");
  EXPECT_EQ(adam.GetSlot(m.kernel, "v")->op().name(), "dense/kernel/Adam_1");
  EXPECT_EQ(adam.GetSlot(m.bias, "m")->op().name(), "dense/bias/Adam");
  EXPECT_EQ(adam.GetSlotNames(), (std::vector<std::string>{"m", "v"}));
  auto [b1, b2] = *adam.GetBetaAccumulators(&m.g);
  EXPECT_EQ(b1.op().name(), "beta1_power");
  EXPECT_EQ(b2.op().name(), "beta2_power");
  // Slots and accumulators are global, non-trainable variables.
  std::vector<std::string> globals;
  for (const Variable& v : ops::GlobalVariables()) globals.push_back(v.op().name());
  EXPECT_EQ(globals, (std::vector<std::string>{"dense/kernel", "dense/bias", "global_step", "beta1_power",
                                               "beta2_power", "dense/kernel/Adam", "dense/kernel/Adam_1",
                                               "dense/bias/Adam", "dense/bias/Adam_1"}));
  EXPECT_EQ(ops::TrainableVariables().size(), 2u);
  EXPECT_EQ(adam.variables().size(), 6u);
  // The train op is in TRAIN_OP.
  EXPECT_EQ(m.g.GetCollection<Operation>(GraphKeys::kTrainOp).size(), 1u);

  // One step by hand: kernel and bias start at 0, m = (1 - b1) g, v = (1 - b2) g^2.
  Session s(m.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  auto grads = adam.ComputeGradients(m.loss, {m.kernel, m.bias});
  std::vector<Output> fetch = {grads[0].first};
  const float g0 = s.Run(m.Batch(), fetch)[0].flat<float>()[0];
  s.Run(m.Batch(), {}, {train_op});
  const double lr_t = 0.01 * std::sqrt(1 - 0.999) / (1 - 0.9);
  const double m0 = 0.1 * g0, v0 = 0.001 * double(g0) * g0;
  EXPECT_NEAR(m.kernel.value().Eval(s).flat<float>()[0], -lr_t * m0 / (std::sqrt(v0) + 1e-8), 1e-6);
  EXPECT_NEAR(b1.value().Eval(s).scalar<float>(), 0.81f, 1e-7);
  EXPECT_NEAR(b2.value().Eval(s).scalar<float>(), 0.999f * 0.999f, 1e-7);
  EXPECT_EQ(step.value().Eval(s).scalar<int64_t>(), 1);
}

TEST(OptimizerTest, SlotNamesOfEachOptimizer) {
  struct Case {
    std::function<std::unique_ptr<Optimizer>()> make;
    std::string op_name;
    std::vector<std::pair<std::string, std::string>> slots;  // slot → variable name
  };
  std::vector<Case> cases = {
      {[] { return std::make_unique<GradientDescentOptimizer>(0.1); }, "GradientDescent", {}},
      {[] { return std::make_unique<MomentumOptimizer>(0.1, 0.9); },
       "Momentum",
       {{"momentum", "dense/kernel/Momentum"}}},
      {[] { return std::make_unique<AdagradOptimizer>(0.1); },
       "Adagrad",
       {{"accumulator", "dense/kernel/Adagrad"}}},
      {[] { return std::make_unique<RMSPropOptimizer>(0.1); },
       "RMSProp",
       {{"rms", "dense/kernel/RMSProp"}, {"momentum", "dense/kernel/RMSProp_1"}}},
      {[] { return std::make_unique<RMSPropOptimizer>(0.1, RMSPropOptions{.centered = true}); },
       "RMSProp",
       {{"rms", "dense/kernel/RMSProp"},
        {"mg", "dense/kernel/RMSProp_1"},
        {"momentum", "dense/kernel/RMSProp_2"}}},
      {[] { return std::make_unique<AdadeltaOptimizer>(1.0); },
       "Adadelta",
       {{"accum", "dense/kernel/Adadelta"}, {"accum_update", "dense/kernel/Adadelta_1"}}},
      {[] { return std::make_unique<ProximalGradientDescentOptimizer>(0.1); }, "ProximalGradientDescent", {}},
      {[] { return std::make_unique<ProximalAdagradOptimizer>(0.1); },
       "ProximalAdagrad",
       {{"accumulator", "dense/kernel/ProximalAdagrad"}}},
      {[] { return std::make_unique<FtrlOptimizer>(0.1); },
       "Ftrl",
       {{"accum", "dense/kernel/Ftrl"}, {"linear", "dense/kernel/Ftrl_1"}}},
      {[] {
         return std::make_unique<FtrlOptimizer>(
             0.1, FtrlOptions{.name = "FtrlV2", .l2_shrinkage_regularization_strength = 0.01});
       },
       "FtrlV2",
       {{"accum", "dense/kernel/FtrlV2"}, {"linear", "dense/kernel/FtrlV2_1"}}},
      {[] {
         return std::make_unique<FtrlOptimizer>(0.1, FtrlOptions{.accum_name = "acc", .linear_name = "lin"});
       },
       "Ftrl",
       {{"accum", "dense/kernel/acc"}, {"linear", "dense/kernel/lin"}}},
      {[] { return std::make_unique<AdagradDAOptimizer>(0.1, GetOrCreateGlobalStep()); },
       "AdagradDA",
       {{"gradient_accumulator", "dense/kernel/AdagradDA"},
        {"gradient_squared_accumulator", "dense/kernel/AdagradDA_1"}}},
  };
  const std::map<std::string, std::string> apply_ops = {
      {"GradientDescent", "ApplyGradientDescent"},
      {"Momentum", "ApplyMomentum"},
      {"Adagrad", "ApplyAdagrad"},
      {"RMSProp", "ApplyRMSProp"},
      {"Adadelta", "ApplyAdadelta"},
      {"ProximalGradientDescent", "ApplyProximalGradientDescent"},
      {"ProximalAdagrad", "ApplyProximalAdagrad"},
      {"Ftrl", "ApplyFtrl"},
      {"FtrlV2", "ApplyFtrlV2"},
      {"AdagradDA", "ApplyAdagradDA"}};
  for (const Case& c : cases) {
    Model m;
    auto opt = c.make();
    Operation train_op = opt->Minimize(m.loss);
    // Without a global step the returned op is the group of the updates.
    EXPECT_EQ(train_op.name(), c.op_name);
    EXPECT_EQ(train_op.type(), "NoOp");
    const Node* update = m.g.FindNode(StrCat(c.op_name, "/update_dense/kernel/", apply_ops.at(c.op_name)));
    const bool centered = c.slots.size() == 3;
    if (!centered) {
      EXPECT_NE(update, nullptr) << c.op_name;
    }
    for (const auto& [slot, var_name] : c.slots) {
      std::optional<Variable> v = opt->GetSlot(m.kernel, slot);
      ASSERT_TRUE(v.has_value()) << slot;
      EXPECT_EQ(v->op().name(), var_name);
      EXPECT_FALSE(v->trainable());
    }
    // Training reduces the loss.
    Session s(m.g);
    s.Run({}, {}, {ops::GlobalVariablesInitializer()});
    const float before = s.Run(m.Batch(), {m.loss})[0].scalar<float>();
    for (int i = 0; i < 5; ++i) s.Run(m.Batch(), {}, {train_op});
    EXPECT_LT(s.Run(m.Batch(), {m.loss})[0].scalar<float>(), before) << c.op_name;
  }
}

TEST(OptimizerTest, GlobalStepIncrementsAfterTheUpdates) {
  Model m;
  Variable step = GetOrCreateGlobalStep();
  GradientDescentOptimizer sgd(0.1);
  Operation train_op = sgd.Minimize(m.loss, step);
  EXPECT_EQ(train_op.type(), "AssignAdd");
  Operation update = m.g.GetOperationByName("GradientDescent/update");
  ASSERT_EQ(train_op.control_inputs().size(), 1u);
  EXPECT_EQ(train_op.control_inputs()[0], update);
  Session s(m.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  for (int i = 0; i < 3; ++i) s.Run(m.Batch(), {}, {train_op});
  EXPECT_EQ(step.value().Eval(s).scalar<int64_t>(), 3);
  // A second optimizer in the same graph gets unique names.
  GradientDescentOptimizer sgd2(0.1);
  EXPECT_EQ(sgd2.Minimize(m.loss, step).name(), "GradientDescent_1");
}

TEST(OptimizerTest, HyperParametersMayBeTensors) {
  Model m;
  Output lr = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "lr");
  MomentumOptimizer opt(lr, 0.0);
  Operation train_op = opt.Minimize(m.loss);
  Session s(m.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  FeedList feeds = m.Batch();
  feeds.emplace_back(lr, Tensor::Scalar<float>(0.0f));
  s.Run(feeds, {}, {train_op});
  EXPECT_EQ(m.bias.value().Eval(s).flat<float>()[0], 0.0f);  // lr 0: no change
  feeds.back().second = Tensor::Scalar<float>(0.5f);
  s.Run(feeds, {}, {train_op});
  EXPECT_NE(m.bias.value().Eval(s).flat<float>()[0], 0.0f);
}

TEST(OptimizerTest, ApplyGradientsSkipsMissingGradients) {
  Model m;
  ops::GetVariable("unused", TensorShape({3}));  // a variable no loss depends on
  GradientDescentOptimizer sgd(0.1);
  auto grads = sgd.ComputeGradients(m.loss);
  ASSERT_EQ(grads.size(), 3u);
  EXPECT_FALSE(grads[2].first);  // no path from "unused" to the loss
  sgd.ApplyGradients(grads);
  EXPECT_FALSE(m.g.FindNode("GradientDescent/update_unused/ApplyGradientDescent"));
  EXPECT_TRUE(m.g.FindNode("GradientDescent/update_dense/kernel/ApplyGradientDescent"));
}

TEST(OptimizerTest, Errors) {
  {
    Graph g;
    auto as_default = g.AsDefault();
    Output loss = ops::ReduceSum(ops::Const<float>({1, 2}));
    GradientDescentOptimizer sgd(0.1);
    try {
      sgd.Minimize(loss);
      FAIL();
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("No variables to optimize."), std::string::npos);
    }
    Variable v = ops::GetVariable("v", TensorShape({2}));
    try {
      sgd.Minimize(loss);
      FAIL();
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("No gradients provided for any variable"), std::string::npos);
    }
    EXPECT_THROW(sgd.Minimize(ops::Const(int32_t{1})), InvalidArgumentError);
    EXPECT_THROW(sgd.ApplyGradients({}), InvalidArgumentError);
    EXPECT_THROW(sgd.ApplyGradients({{ops::Const<double>({1, 1}), v}}), InvalidArgumentError);
  }
  // Invalid hyper-parameters, as TF's ValueErrors.
  EXPECT_THROW(ProximalAdagradOptimizer(0.1, {.initial_accumulator_value = 0}), InvalidArgumentError);
  EXPECT_THROW(FtrlOptimizer(0.1, {.learning_rate_power = 0.5}), InvalidArgumentError);
  EXPECT_THROW(FtrlOptimizer(0.1, {.initial_accumulator_value = -1}), InvalidArgumentError);
  EXPECT_THROW(FtrlOptimizer(0.1, {.l1_regularization_strength = -1}), InvalidArgumentError);
  EXPECT_THROW(FtrlOptimizer(0.1, {.l2_regularization_strength = -1}), InvalidArgumentError);
  EXPECT_THROW(FtrlOptimizer(0.1, {.l2_shrinkage_regularization_strength = -1}), InvalidArgumentError);
  {
    Graph g;
    auto as_default = g.AsDefault();
    Variable step32(Tensor::Scalar<int32_t>(0), {.name = "step", .trainable = false});
    try {
      AdagradDAOptimizer da(0.1, step32);
      FAIL();
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("global_step must be an int64 variable"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(
        AdagradDAOptimizer(0.1, GetOrCreateGlobalStep(), {.initial_gradient_squared_accumulator_value = 0}),
        InvalidArgumentError);
  }
}

}  // namespace
}  // namespace flowtrain::train

namespace flowtrain::train {
namespace {

// One SGD step of an MLP moves every variable by -lr x its gradient at the weights before the
// step (a layer's input gradient reads its kernel while the kernel's own update may already
// run: updates copy a buffer a reader still holds). With 1 and 2 inter-op threads, with the
// fused plan (remapping: MatMul + ApplyGradientDescent as one GEMM) and without.
TEST(OptimizerTest, AnSgdStepAppliesTheGradientsOfTheWeightsBeforeIt) {
  for (bool remapping : {true, false}) {
    for (int inter_op : {1, 2}) {
      Graph g;
      auto as_default = g.AsDefault();
      g.set_seed(7);
      const int64_t batch = 128, width = 512;
      Output x = ops::Placeholder(DT_FLOAT, {batch, width}, "x");
      Output labels = ops::Placeholder(DT_INT64, {batch}, "labels");
      Output h = layers::Dense(x, width, ops::Relu);
      h = layers::Dense(h, width, ops::Relu);
      Output logits = layers::Dense(h, 10);
      Output loss = ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits));
      GradientDescentOptimizer sgd(0.5);
      const std::vector<GradAndVar> grads_and_vars = sgd.ComputeGradients(loss);
      Operation train = sgd.ApplyGradients(grads_and_vars);
      SessionOptions options;
      options.config.inter_op_parallelism_threads = inter_op;
      options.config.intra_op_parallelism_threads = 2;
      options.config.remapping = remapping;
      Session sess(g, options);
      sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
      std::vector<float> xs(batch * width);
      std::vector<int64_t> ys(batch);
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * static_cast<float>(i));
      for (int64_t i = 0; i < batch; ++i) ys[i] = i % 10;
      const FeedList feeds = {{x, Tensor::FromVector<float>(xs, TensorShape({batch, width}))},
                              {labels, Tensor::FromVector<int64_t>(ys)}};
      std::vector<Output> before_fetches;
      for (const auto& [grad, var] : grads_and_vars) {
        before_fetches.push_back(grad);
        before_fetches.push_back(var.value());
      }
      for (int step = 0; step < 3; ++step) {
        std::vector<Tensor> before = sess.Run(feeds, before_fetches, {});
        for (Tensor& t : before) t = t.DeepCopy();
        sess.Run(feeds, {}, {train});
        for (size_t v = 0; v < grads_and_vars.size(); ++v) {
          const Tensor after = sess.Run({}, {grads_and_vars[v].second.value()}, {})[0];
          const auto grad = before[2 * v].flat<float>(), old = before[2 * v + 1].flat<float>();
          const auto now = after.flat<float>();
          double worst = 0, largest = 0;
          for (int64_t i = 0; i < now.size(); ++i) {
            const double expected = old[i] - 0.5 * grad[i];
            worst = std::max(worst, std::abs(now[i] - expected));
            largest = std::max(largest, std::abs(0.5 * grad[i]));
          }
          EXPECT_LE(worst, 1e-3 * largest + 1e-7) << grads_and_vars[v].second.name() << " step " << step
                                                  << " remapping " << remapping << " inter_op " << inter_op;
        }
      }
    }
  }
}

// TF's gate_gradients=GATE_OP: an op's input gradients pass through tuple/control_dependency
// identities after a group_deps of all of them, so that TF (whose variable reads alias the
// variable) never runs a weight's update while another gradient of that op still reads it.
// Only gradients that are used are gated: MatMul(x, kernel)'s gradient of the placeholder x is
// not, so kernel's gradient needs no gate.
TEST(OptimizerTest, GradientsAreGatedPerOpAsTf) {
  Model m;
  GradientDescentOptimizer sgd(0.1);
  const std::vector<GradAndVar> grads_and_vars = sgd.ComputeGradients(m.loss);
  ASSERT_EQ(grads_and_vars.size(), 2u);
  const Output kernel_grad = grads_and_vars[0].first;
  const Output bias_grad = grads_and_vars[1].first;
  EXPECT_EQ(kernel_grad.op().name(), "gradients/MatMul_grad/MatMul_1");
  EXPECT_EQ(bias_grad.op().name(), "gradients/add_grad/tuple/control_dependency_1");
  EXPECT_EQ(bias_grad.op().type(), "Identity");
  const Node* gate = m.g.FindNode("gradients/add_grad/tuple/group_deps");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->type(), "NoOp");
  // The gate waits for both of the add's input gradients; the identities wait for the gate.
  std::vector<std::string> gated;
  for (const Node* c : gate->control_inputs()) gated.push_back(c->name());
  EXPECT_EQ(gated, (std::vector<std::string>{"gradients/add_grad/Reshape", "gradients/add_grad/Reshape_1"}));
  ASSERT_EQ(bias_grad.node()->control_inputs().size(), 1u);
  EXPECT_EQ(bias_grad.node()->control_inputs()[0], gate);
  const Node* to_matmul = m.g.FindNode("gradients/add_grad/tuple/control_dependency");
  ASSERT_NE(to_matmul, nullptr);
  EXPECT_EQ(kernel_grad.node()->input(1).node, to_matmul);
  EXPECT_EQ(m.g.FindNode("gradients/MatMul_grad/tuple/group_deps"), nullptr);
  // tf.gradients itself does not gate (its gate_gradients=False), and the values are the same.
  const Output plain = ops::Gradients({m.loss}, {m.bias.ref()}, {}, "plain")[0];
  EXPECT_EQ(plain.op().name(), "plain/add_grad/Reshape_1");
  Session s(m.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  const std::vector<Tensor> out = s.Run(m.Batch(), {bias_grad, plain});
  EXPECT_EQ(out[0].flat<float>()[0], out[1].flat<float>()[0]);
  EXPECT_NE(out[0].flat<float>()[0], 0.0f);
}

}  // namespace
}  // namespace flowtrain::train
