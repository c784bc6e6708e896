// DivergenceGuardHook: a NaN, infinite or too-large loss rolls the model back to the newest
// checkpoint in the same process, training goes on, and the budget ends in the TF error.
#include "flowtrain/train/divergence_guard_hook.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/monitored_session.h"
#include "flowtrain/train/session_creator.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A "model" whose loss is a weight that each step adds `delta` to (fed, 1 by default), so a
// test makes it diverge on the step it chooses (the next step reports it); the global step
// counts the steps.
struct DivergingModel {
  DivergingModel() {
    auto as_default = graph.AsDefault();
    step = GetOrCreateGlobalStep(&graph);
    weight = Variable(Tensor::Scalar<float>(0.0f), {.name = "weight"});
    delta = ops::PlaceholderWithDefault(ops::Const(1.0f), PartialTensorShape({}), "delta");
    // As in a real model, a step reports the loss of the weights it starts from (the update
    // waits for the read), and fetching the loss alone changes nothing.
    loss = ops::Identity(weight.value(), "loss");
    auto after_read = graph.ControlDependencies({loss.op()});
    train_op =
        ops::Group({step.AssignAdd(ops::Const(int64_t{1})).op(), weight.AssignAdd(delta).op()}, "train");
  }
  std::unique_ptr<MonitoredSession> Session(HookList hooks) {
    auto as_default = graph.AsDefault();
    ChiefSessionCreatorOptions chief;
    chief.graph = &graph;
    chief.config.inter_op_parallelism_threads = 1;
    return std::make_unique<MonitoredSession>(std::make_shared<ChiefSessionCreator>(chief), std::move(hooks));
  }
  void Step(MonitoredSession& sess, float d = 1.0f) {
    sess.Run({{delta, Tensor::Scalar<float>(d)}}, {}, {train_op});
  }
  float Weight(MonitoredSession& sess) { return sess.Run({}, {weight.value()}, {})[0].scalar<float>(); }
  int64_t GlobalStep(MonitoredSession& sess) { return sess.Run({}, {step.value()}, {})[0].scalar<int64_t>(); }

  Graph graph;
  Variable step, weight;
  Output delta, loss;
  Operation train_op;
};

TEST(DivergenceGuardHookTest, RollsBackToTheNewestCheckpointAndTrainsOn) {
  const std::string dir = testing::MakeTempDir("divergence_guard");
  DivergingModel m;
  std::vector<Rollback> seen;
  auto guard = std::make_shared<DivergenceGuardHook>(DivergenceGuardHook::Options{
      .loss = m.loss,
      .checkpoint_dir = dir,
      .max_rollbacks = 2,
      .on_rollback = [&](SessionInterface&, const Rollback& r) { seen.push_back(r); }});
  auto saver = std::make_shared<CheckpointSaverHook>(dir, CheckpointSaverHookOptions{.every_n_steps = 5});
  auto sess = m.Session({guard, saver});
  for (int i = 0; i < 7; ++i) m.Step(*sess);  // saved at steps 0 and 5
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-5");
  m.Step(*sess, kNaN);  // step 8 makes the weight NaN,
  EXPECT_TRUE(seen.empty());
  m.Step(*sess);  // step 9 reports it: back to step 5 with weight 5
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].rollbacks, 1);
  EXPECT_TRUE(std::isnan(seen[0].loss));
  EXPECT_EQ(seen[0].restored_checkpoint, dir + "/model.ckpt-5");
  EXPECT_EQ(m.Weight(*sess), 5.0f);
  EXPECT_EQ(m.GlobalStep(*sess), 5);
  // Training goes on from there, and no NaN was ever saved.
  for (int i = 0; i < 6; ++i) m.Step(*sess);
  EXPECT_EQ(m.Weight(*sess), 11.0f);
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-10");
  EXPECT_EQ(guard->rollbacks(), 1);
}

TEST(DivergenceGuardHookTest, InfinityAndALossAboveTheBoundDivergeToo) {
  const std::string dir = testing::MakeTempDir("divergence_guard");
  DivergingModel m;
  auto guard = std::make_shared<DivergenceGuardHook>(
      DivergenceGuardHook::Options{.loss = m.loss, .checkpoint_dir = dir, .max_loss = 100.0});
  auto saver = std::make_shared<CheckpointSaverHook>(dir, CheckpointSaverHookOptions{.every_n_steps = 1000});
  auto sess = m.Session({guard, saver});  // saved at step 0
  m.Step(*sess, std::numeric_limits<float>::infinity());
  m.Step(*sess);
  EXPECT_EQ(m.Weight(*sess), 0.0f);
  m.Step(*sess, 100.0f);
  m.Step(*sess, 0.5f);  // reports 100, at the bound: fine
  EXPECT_EQ(guard->rollbacks(), 1);
  // Every run through the monitored session reports the loss, this read too: 100.5 is above.
  EXPECT_EQ(m.Weight(*sess), 100.5f);
  EXPECT_EQ(guard->rollbacks(), 2);
  EXPECT_EQ(m.Weight(*sess), 0.0f);
}

TEST(DivergenceGuardHookTest, FailsAsTensorFlowOnceTheBudgetIsSpentOrNothingWasSaved) {
  const std::string dir = testing::MakeTempDir("divergence_guard");
  DivergingModel m;
  auto guard = std::make_shared<DivergenceGuardHook>(
      DivergenceGuardHook::Options{.loss = m.loss, .checkpoint_dir = dir, .max_rollbacks = 1});
  {
    auto saver =
        std::make_shared<CheckpointSaverHook>(dir, CheckpointSaverHookOptions{.every_n_steps = 1000});
    auto sess = m.Session({guard, saver});
    m.Step(*sess, kNaN);
    m.Step(*sess);  // the one rollback
    m.Step(*sess, kNaN);
    EXPECT_THROW(m.Step(*sess), NanLossDuringTrainingError);
  }
  DivergingModel fresh;
  auto unsaved = std::make_shared<DivergenceGuardHook>(DivergenceGuardHook::Options{
      .loss = fresh.loss, .checkpoint_dir = testing::MakeTempDir("divergence_guard_empty")});
  auto sess = fresh.Session({unsaved});
  fresh.Step(*sess, kNaN);
  EXPECT_THROW(fresh.Step(*sess), NanLossDuringTrainingError);
}

TEST(DivergenceGuardHookTest, RejectsBadOptions) {
  DivergingModel m;
  testing::ExpectInvalidArgument([&] { DivergenceGuardHook h({.checkpoint_dir = "x"}); }, "no loss");
  testing::ExpectInvalidArgument(
      [&] { DivergenceGuardHook h({.loss = m.step.value(), .checkpoint_dir = "x"}); },
      {"int64", "float or double"});
  testing::ExpectInvalidArgument([&] { DivergenceGuardHook h({.loss = m.loss}); }, "checkpoint_dir");
}

}  // namespace
}  // namespace flowtrain::train
