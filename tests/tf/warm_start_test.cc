// train::InitFromCheckpoint and train::WarmStart against TF's own: TF writes a checkpoint of
// variables under "old/" and warm-starts models from it itself (interop/warm_start_model.py);
// flowtrain's models, warm-started from the same TF-written checkpoint, hold exactly the values
// TF's did after their init ops, and the variables left out start from their own initializers
// in both.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/variable_scope.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/warm_starting.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

// warm_start_model.py's variables under `scope`, zero-initialized so that a value read from the
// checkpoint cannot be mistaken for an initial one.
std::vector<Variable> Layers(const std::string& scope) {
  std::vector<Variable> vars;
  ops::VariableScope outer(scope);
  for (const auto& [name, shape] : {std::pair{"hidden", TensorShape({3, 5})}, {"out", TensorShape({5, 2})}}) {
    ops::VariableScope layer(name);
    vars.push_back(ops::GetVariable("kernel", shape, DT_FLOAT, ops::ZerosInitializer()));
    vars.push_back(ops::GetVariable("bias", {shape.dim_size(1)}, DT_FLOAT, ops::ZerosInitializer()));
  }
  return vars;
}

// Runs the init op and returns each variable's value.
std::vector<Tensor> InitializedValues(Graph& g, const std::vector<Variable>& vars) {
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
  std::vector<Output> fetches;
  for (const Variable& v : vars) fetches.push_back(v.value());
  return sess.Run({}, fetches, {});
}

bool BitwiseEqual(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && Values<float>(a) == Values<float>(b);
}

TEST(WarmStartTest, TensorFlowsCheckpointWarmStartsAsTensorFlowDoes) {
  const std::string dir = MakeTempDir("warm_start_tf");
  const PythonRun run = RunTfPython({TfScript("interop/warm_start_model.py"), "--dir", dir});
  ASSERT_EQ(run.exit_code, 0) << "warm_start_model.py failed:\n" << run.output;
  const std::string old_ckpt = dir + "/old.ckpt";
  const io::CheckpointReader old(old_ckpt), tf_new(dir + "/tf_new.ckpt"), tf_warm(dir + "/tf_warm.ckpt");

  // init_from_checkpoint(old, {"old/": "new/"}): every new/ variable, exactly; head/kernel fresh.
  {
    Graph g;
    auto as_default = g.AsDefault();
    std::vector<Variable> vars = Layers("new");
    vars.push_back(ops::GetVariable("head/kernel", {2, 2}, DT_FLOAT, ops::ZerosInitializer()));
    train::InitFromCheckpoint(old_ckpt, {{"old/", "new/"}});
    const std::vector<Tensor> values = InitializedValues(g, vars);
    for (size_t i = 0; i + 1 < vars.size(); ++i) {
      EXPECT_TRUE(BitwiseEqual(values[i], tf_new.GetTensor(vars[i].op().name()))) << vars[i].name();
    }
    EXPECT_EQ(Values<float>(values.back()), std::vector<float>(4, 0.0f));
  }
  // warm_start(old, vars_to_warm_start="old/hidden"): hidden from the checkpoint, out fresh
  // (in TF too: its out variables are not the checkpoint's).
  {
    Graph g;
    auto as_default = g.AsDefault();
    const std::vector<Variable> vars = Layers("old");
    train::WarmStart(old_ckpt, {.vars_to_warm_start = "old/hidden"});
    const std::vector<Tensor> values = InitializedValues(g, vars);
    for (int i = 0; i < 2; ++i) {
      const std::string key = vars[i].op().name();
      EXPECT_TRUE(BitwiseEqual(values[i], tf_warm.GetTensor(key))) << key;
      EXPECT_TRUE(BitwiseEqual(values[i], old.GetTensor(key))) << key;
    }
    for (int i = 2; i < 4; ++i) {
      const std::string key = vars[i].op().name();
      EXPECT_FALSE(BitwiseEqual(tf_warm.GetTensor(key), old.GetTensor(key))) << key;
      EXPECT_EQ(Values<float>(values[i]), std::vector<float>(values[i].NumElements(), 0.0f)) << key;
    }
  }
}

}  // namespace
}  // namespace flowtrain::testing
