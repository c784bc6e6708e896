// layers::BatchNormalization is tf.compat.v1.layers.batch_normalization: the model of
// interop/bn_model.py (a fused and an op-by-op batch normalisation, `training` a placeholder,
// Momentum under control_dependencies(UPDATE_OPS)) built by flowtrain from the initial
// checkpoint TF wrote trains 20 steps to TF's losses and variables (moving statistics and
// slots included), gives TF's logits with training fed true and false, restores TF's trained
// checkpoint, and TF restores flowtrain's checkpoint (same keys) to flowtrain's logits.
#include <cmath>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/batch_normalization.h"
#include "flowtrain/ops/layers.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/momentum.h"
#include "flowtrain/train/saver.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

constexpr int kSteps = 20;

void RunModelScript(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TfScript("interop/bn_model.py")};
  argv.insert(argv.end(), args.begin(), args.end());
  const PythonRun run = RunTfPython(argv);
  ASSERT_EQ(run.exit_code, 0) << "bn_model.py failed:\n" << run.output;
}

// bn_model.py's model, in flowtrain.
struct BnModel {
  Graph graph;
  Output x, y, training, logits, loss;
  Operation train_op;

  BnModel() {
    auto as_default = graph.AsDefault();
    x = ops::Placeholder(DT_FLOAT, {8, 6, 6, 2}, "x");
    y = ops::Placeholder(DT_INT64, {8}, "y");
    training = ops::Placeholder(DT_BOOL, {}, "training");
    Output h = layers::Conv2D(x, 4, {3, 3}, {1, 1}, "same");
    h = ops::Relu(layers::BatchNormalizationLayer(h, training, {.momentum = 0.9}));
    h = layers::Flatten(h);
    h = layers::Dense(h, 5);
    h = ops::Relu(layers::BatchNormalizationLayer(h, training, {.momentum = 0.9}));
    logits = layers::Dense(h, 3);
    loss = ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(y, logits));
    auto deps = graph.ControlDependencies(graph.GetCollection<Operation>(GraphKeys::kUpdateOps));
    train_op = train::MomentumOptimizer(0.1, 0.9).Minimize(loss);
  }
};

double MaxRelDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double worst = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    worst = std::max(worst, std::abs(x - y) / std::max(std::abs(y), 1.0));
  }
  return worst;
}

TEST(BatchNormTest, TrainsAsTensorFlowsLayerAndCheckpointsBothWays) {
  const std::string dir = MakeTempDir("bn_interop");
  RunModelScript({"--mode", "write", "--dir", dir, "--steps", std::to_string(kSteps)});
  if (HasFatalFailure()) return;
  const io::CheckpointReader data(dir + "/data.ckpt");
  const io::CheckpointReader tf_final(dir + "/final.ckpt");
  const Tensor x = data.GetTensor("x"), y = data.GetTensor("y");

  BnModel m;
  auto as_default = m.graph.AsDefault();
  train::Saver saver;
  Session sess(m.graph);
  saver.Restore(sess, dir + "/init.ckpt");  // TF's initial values; every key must be ours
  const FeedList feed = {{m.x, x}, {m.y, y}, {m.training, Tensor::Scalar<bool>(true)}};
  const Tensor tf_losses = data.GetTensor("losses");
  double worst_loss = 0, worst_variable = 0;
  for (int i = 0; i < kSteps; ++i) {
    const float loss = sess.Run(feed, {m.loss}, {m.train_op})[0].scalar<float>();
    EXPECT_NEAR(loss, tf_losses.data<float>()[i], 1e-5 * std::max(1.0f, std::abs(loss))) << "step " << i;
    worst_loss = std::max(worst_loss, static_cast<double>(std::abs(loss - tf_losses.data<float>()[i])));
  }
  // Every variable (moving statistics and Momentum slots too) is TF's, under TF's key.
  std::set<std::string> ours, theirs;
  for (const auto& [key, shape] : tf_final.GetVariableToShapeMap()) theirs.insert(key);
  for (const Variable& v : ops::GlobalVariables(&m.graph)) {
    ours.insert(v.op().name());
    if (!tf_final.HasTensor(v.op().name())) continue;
    const double diff = MaxRelDiff(v.value().Eval(sess), tf_final.GetTensor(v.op().name()));
    EXPECT_LT(diff, 1e-5) << v.op().name();
    worst_variable = std::max(worst_variable, diff);
  }
  std::cout << kSteps << " steps: largest loss difference from TF " << worst_loss
            << ", largest variable difference " << worst_variable << " (relative, over " << ours.size()
            << " variables)\n";
  EXPECT_EQ(ours, theirs);
  EXPECT_TRUE(ours.contains("batch_normalization/moving_variance"));
  EXPECT_TRUE(ours.contains("batch_normalization_1/gamma/Momentum"));
  auto logits_with = [&](bool training) {
    return sess.Run({{m.x, x}, {m.training, Tensor::Scalar<bool>(training)}}, {m.logits})[0];
  };
  const Tensor logits_train = logits_with(true), logits_infer = logits_with(false);
  EXPECT_LT(MaxRelDiff(logits_train, data.GetTensor("logits_train")), 1e-5);
  EXPECT_LT(MaxRelDiff(logits_infer, data.GetTensor("logits_infer")), 1e-5);
  saver.Save(sess, dir + "/ours.ckpt");
  {
    Graph outputs;
    auto as_outputs = outputs.AsDefault();
    Variable a(logits_train, {.name = "logits_train"}), b(logits_infer, {.name = "logits_infer"});
    Session out_sess(outputs);
    out_sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
    train::Saver().Save(out_sess, dir + "/ours_outputs.ckpt");
  }
  // TF's trained checkpoint restores into a new flowtrain model: TF's inference logits exactly
  // as TF computes them (up to float rounding).
  {
    BnModel fresh;
    auto as_fresh = fresh.graph.AsDefault();
    train::Saver fresh_saver;
    Session fresh_sess(fresh.graph);
    fresh_saver.Restore(fresh_sess, dir + "/final.ckpt");
    const Tensor logits =
        fresh_sess.Run({{fresh.x, x}, {fresh.training, Tensor::Scalar<bool>(false)}}, {fresh.logits})[0];
    EXPECT_LT(MaxRelDiff(logits, data.GetTensor("logits_infer")), 1e-6);
  }
  RunModelScript({"--mode", "check", "--dir", dir});
}

}  // namespace
}  // namespace flowtrain::testing
