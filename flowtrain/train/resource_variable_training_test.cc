// Training, saving and exporting with resource variables (use_resource=True): optimizers run
// ResourceApply* with resource slots, and the results, checkpoint keys and values are those
// of the same program on ref variables.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/adadelta.h"
#include "flowtrain/train/adagrad.h"
#include "flowtrain/train/adagrad_da.h"
#include "flowtrain/train/adam.h"
#include "flowtrain/train/ftrl.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/meta_graph.h"
#include "flowtrain/train/momentum.h"
#include "flowtrain/train/proximal_adagrad.h"
#include "flowtrain/train/proximal_gradient_descent.h"
#include "flowtrain/train/rmsprop.h"
#include "flowtrain/train/saver.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

// A two-layer regression model on fixed data.
struct Model {
  Graph g;
  ScopeGuard as_default = g.AsDefault();
  Variable w1, w2;
  Output loss;
  explicit Model(bool use_resource) {
    Output x = ops::Const(Tensor::FromVector<float>({0.5f, -1, 2, 0.25f, 1.5f, -0.5f}).Reshaped({3, 2}));
    Output y = ops::Const(Tensor::FromVector<float>({1, -1, 0.5f}).Reshaped({3, 1}));
    w1 = Variable(Tensor::FromVector<float>({0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}).Reshaped({2, 3}),
                  {.name = "w1", .use_resource = use_resource});
    w2 = Variable(Tensor::FromVector<float>({0.2f, -0.1f, 0.3f}).Reshaped({3, 1}),
                  {.name = "w2", .use_resource = use_resource});
    Output h = ops::Tanh(ops::MatMul(x, w1));
    loss = ops::ReduceMean(ops::Square(ops::Sub(ops::MatMul(h, w2), y)));
  }
};

using MakeOptimizer = std::function<std::unique_ptr<train::Optimizer>()>;

std::vector<float> TrainLosses(bool use_resource, const MakeOptimizer& make, int steps) {
  Model m(use_resource);
  std::unique_ptr<train::Optimizer> opt = make();
  Operation train_op = opt->Minimize(m.loss);
  Session s(m.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    losses.push_back(s.Run({}, {m.loss})[0].scalar<float>());
    s.Run({}, {}, {train_op});
  }
  return losses;
}

TEST(ResourceVariableTrainingTest, OptimizersTrainAsOnRefVariables) {
  const std::vector<std::pair<std::string, MakeOptimizer>> optimizers = {
      {"GradientDescent", [] { return std::make_unique<train::GradientDescentOptimizer>(0.1); }},
      {"Momentum", [] { return std::make_unique<train::MomentumOptimizer>(0.1, 0.9); }},
      {"Adam", [] { return std::make_unique<train::AdamOptimizer>(0.05); }},
      {"Adagrad", [] { return std::make_unique<train::AdagradOptimizer>(0.1); }},
      {"RMSProp", [] { return std::make_unique<train::RMSPropOptimizer>(0.01); }},
      {"CenteredRMSProp",
       [] {
         return std::make_unique<train::RMSPropOptimizer>(0.01, train::RMSPropOptions{.centered = true});
       }},
      {"Adadelta", [] { return std::make_unique<train::AdadeltaOptimizer>(1.0); }},
      {"ProximalGradientDescent",
       [] {
         return std::make_unique<train::ProximalGradientDescentOptimizer>(
             0.1, train::ProximalGradientDescentOptions{.l1_regularization_strength = 0.01});
       }},
      {"ProximalAdagrad", [] { return std::make_unique<train::ProximalAdagradOptimizer>(0.1); }},
      {"Ftrl", [] { return std::make_unique<train::FtrlOptimizer>(0.1); }},
      {"FtrlV2",
       [] {
         return std::make_unique<train::FtrlOptimizer>(
             0.1, train::FtrlOptions{.l2_shrinkage_regularization_strength = 0.1});
       }},
      {"AdagradDA",
       [] { return std::make_unique<train::AdagradDAOptimizer>(0.1, train::GetOrCreateGlobalStep()); }},
  };
  for (const auto& [name, make] : optimizers) {
    const std::vector<float> ref = TrainLosses(false, make, 20);
    const std::vector<float> res = TrainLosses(true, make, 20);
    EXPECT_EQ(ref, res) << name;
    EXPECT_LT(res.back(), res.front()) << name;
  }
}

TEST(ResourceVariableTrainingTest, SlotsAreResourceVariablesAndUpdatesResourceApply) {
  Model m(true);
  train::AdamOptimizer adam(0.01);
  adam.Minimize(m.loss);
  std::optional<Variable> slot = adam.GetSlot(m.w1, "m");
  ASSERT_TRUE(slot.has_value());
  EXPECT_TRUE(slot->is_resource());
  EXPECT_EQ(slot->op().name(), "w1/Adam");
  EXPECT_EQ(slot->op().type(), "VarHandleOp");
  ASSERT_NE(m.g.FindNode("beta1_power"), nullptr);
  EXPECT_EQ(m.g.FindNode("beta1_power")->type(), "VarHandleOp");
  int resource_applies = 0;
  for (const Operation& op : m.g.operations()) {
    EXPECT_NE(op.type(), "ApplyAdam");
    resource_applies += op.type() == "ResourceApplyAdam";
  }
  EXPECT_EQ(resource_applies, 2);
}

// Trains a few Adam steps and saves; returns the checkpoint prefix.
std::string TrainAndSave(bool use_resource, const std::string& dir) {
  Model m(use_resource);
  train::AdamOptimizer adam(0.05);
  Operation train_op = adam.Minimize(m.loss);
  train::Saver saver;
  Session s(m.g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  for (int i = 0; i < 3; ++i) s.Run({}, {}, {train_op});
  return saver.Save(s, dir + "/model.ckpt");
}

// Restores `prefix` into a fresh model and returns the loss after 3 more Adam steps.
float RestoreAndTrain(bool use_resource, const std::string& prefix) {
  Model m(use_resource);
  train::AdamOptimizer adam(0.05);
  Operation train_op = adam.Minimize(m.loss);
  train::Saver saver;
  Session s(m.g);
  saver.Restore(s, prefix);
  for (int i = 0; i < 3; ++i) s.Run({}, {}, {train_op});
  return s.Run({}, {m.loss})[0].scalar<float>();
}

TEST(ResourceVariableTrainingTest, CheckpointsInterchangeWithRefVariables) {
  const std::string dir = testing::MakeTempDir("resvar");
  std::filesystem::create_directories(dir + "/ref");
  std::filesystem::create_directories(dir + "/res");
  const std::string from_ref = TrainAndSave(false, dir + "/ref");
  const std::string from_res = TrainAndSave(true, dir + "/res");
  io::CheckpointReader ref_reader(from_ref), res_reader(from_res);
  for (const char* key : {"w1", "w2", "w1/Adam", "w1/Adam_1", "w2/Adam", "beta1_power", "beta2_power"}) {
    ASSERT_TRUE(res_reader.HasTensor(key)) << key;
    Tensor a = ref_reader.GetTensor(key), b = res_reader.GetTensor(key);
    ASSERT_EQ(a.NumElements(), b.NumElements()) << key;
    for (int64_t i = 0; i < a.NumElements(); ++i) EXPECT_EQ(a.flat<float>()[i], b.flat<float>()[i]) << key;
  }
  const float ref_ref = RestoreAndTrain(false, from_ref);
  EXPECT_EQ(RestoreAndTrain(true, from_ref), ref_ref);
  EXPECT_EQ(RestoreAndTrain(false, from_res), ref_ref);
  EXPECT_EQ(RestoreAndTrain(true, from_res), ref_ref);
}

TEST(ResourceVariableTrainingTest, MetaGraphRoundTrip) {
  Model m(true);
  train::GradientDescentOptimizer sgd(0.1);
  Operation train_op = sgd.Minimize(m.loss);
  tensorflow::MetaGraphDef meta = train::ExportMetaGraph(m.g);
  const auto& vars = meta.collection_def().at(GraphKeys::kGlobalVariables).bytes_list().value();
  ASSERT_EQ(vars.size(), 2);
  tensorflow::VariableDef def;
  ASSERT_TRUE(def.ParseFromString(vars[0]));
  EXPECT_EQ(def.variable_name(), "w1:0");
  EXPECT_EQ(def.initializer_name(), "w1/Assign");
  EXPECT_EQ(def.snapshot_name(), "w1/Read/ReadVariableOp:0");
  EXPECT_EQ(def.initial_value_name(), "w1/Initializer/initial_value:0");
  EXPECT_TRUE(def.is_resource());
  EXPECT_TRUE(def.trainable());

  Graph imported;
  train::ImportMetaGraph(meta, &imported);
  std::vector<Variable> got = ops::GlobalVariables(&imported);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].is_resource());
  Output loss = imported.GetTensorByName(m.loss.name());
  Operation step = imported.GetOperationByName(train_op.name());
  Session s(imported);
  s.Run({}, {}, {ops::GlobalVariablesInitializer(&imported)});
  const float before = s.Run({}, {loss})[0].scalar<float>();
  s.Run({}, {}, {step});
  EXPECT_LT(s.Run({}, {loss})[0].scalar<float>(), before);
}

}  // namespace
}  // namespace flowtrain
