// Beyond TF: a run stopped and resumed from its checkpoint ends with the same bits as a run
// that went straight through. The weights, Adam's slots and powers, the global step, the
// input pipeline's position (shuffle buffer and random state included, through
// data::MakeSaveableFromIterator) and the random ops' positions (dropout, through
// ops::MakeSaveableRandomOpStates) all come back from the checkpoint — registered by hand, or
// by MonitoredTrainingSession's default saver (exact_resume) — and the kernels give the same
// results on every run, on two intra-op threads too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/layers.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/random_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/train/adam.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/divergence_guard_hook.h"
#include "flowtrain/train/monitored_training_session.h"
#include "flowtrain/train/scaffold.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

constexpr int64_t kExamples = 300;
constexpr int64_t kFeatures = 8;

// An MLP trained with Adam on a seeded, shuffled, repeated, batched, prefetched dataset; with
// `dropout`, dropout on its hidden layer. With `register_states` the pipeline's position (and,
// with dropout, the random ops' positions) are registered in SAVEABLE_OBJECTS by hand, as
// before MonitoredTrainingSession's default saver kept them (exact_resume).
struct Trainer {
  explicit Trainer(bool dropout = false, bool register_states = true) {
    auto as_default = graph.AsDefault();
    graph.set_seed(11);
    Tensor features(DT_FLOAT, TensorShape({kExamples, kFeatures}));
    std::vector<int64_t> labels(kExamples);
    float* f = features.data<float>();
    for (int64_t i = 0; i < kExamples; ++i) {
      float sum = 0;
      for (int64_t j = 0; j < kFeatures; ++j) {
        f[i * kFeatures + j] = std::sin(0.37f * static_cast<float>(i * kFeatures + j));
        sum += f[i * kFeatures + j] * static_cast<float>(j % 3 - 1);
      }
      labels[i] = sum > 0.3f ? 2 : (sum < -0.3f ? 0 : 1);
    }
    iterator = data::Dataset::FromTensorSlices(std::vector<Tensor>{features, Tensor::FromVector(labels)})
                   .Shuffle(64, /*seed=*/5)
                   .Repeat()
                   .Batch(16)
                   .Prefetch(data::kAutotune)
                   .MakeInitializableIterator();
    if (register_states) {
      graph.AddToCollection(GraphKeys::kSaveableObjects, data::MakeSaveableFromIterator(iterator));
    }
    std::vector<Output> batch = iterator.GetNext();
    Output hidden = layers::Dense(batch[0], 32, layers::Activation(ops::Relu));
    if (dropout) {
      hidden = layers::Dropout(hidden, 0.3, /*training=*/true);
      if (register_states)
        graph.AddToCollection(GraphKeys::kSaveableObjects, ops::MakeSaveableRandomOpStates());
    }
    Output logits = layers::Dense(hidden, 3);
    Output loss = ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(batch[1], logits));
    Variable step = GetOrCreateGlobalStep();
    train_op = AdamOptimizer(0.01).Minimize(loss, step);
  }

  // Trains in `dir` until global step `last_step` (resuming from the latest checkpoint there)
  // and returns the checkpoint the run ends with.
  std::string TrainUntil(const std::string& dir, int64_t last_step) {
    auto scaffold = std::make_shared<Scaffold>();
    scaffold->local_init_op = ops::Group({Scaffold::DefaultLocalInitOp(graph), iterator.initializer()});
    MonitoredTrainingSessionOptions options;
    options.graph = &graph;
    options.checkpoint_dir = dir;
    options.scaffold = scaffold;
    options.save_checkpoint_steps = int64_t{7};
    options.save_summaries_steps = int64_t{0};
    options.log_step_count_steps = std::nullopt;
    options.config.intra_op_parallelism_threads = 2;
    options.hooks = {std::make_shared<StopAtStepHook>(LastStep{last_step})};
    options.chief_only_hooks = chief_only_hooks;
    options.exact_resume = exact_resume;
    {
      auto sess = MonitoredTrainingSession(options);
      while (!sess->ShouldStop()) sess->Run({train_op});
    }
    return *LatestCheckpoint(dir);
  }

  Graph graph;
  data::Iterator iterator;
  Operation train_op;
  bool exact_resume = true;
  HookList chief_only_hooks;
};

// Every variable of two checkpoints (weights, slots, powers, global step), compared bit for
// bit. The iterator's saved state is left out: it holds whatever its prefetch buffer held at
// the save, which depends on timing; equal weights show that the batches came in one order.
void ExpectSameBits(const std::string& a, const std::string& b) {
  io::CheckpointReader reader_a(a), reader_b(b);
  const auto shapes = reader_a.GetVariableToShapeMap();
  ASSERT_EQ(shapes.size(), reader_b.GetVariableToShapeMap().size());
  ASSERT_TRUE(shapes.contains("dense/kernel/Adam_1"));
  ASSERT_TRUE(shapes.contains("Iterator:0-state"));
  int compared = 0;
  for (const auto& [name, shape] : shapes) {
    if (name == "Iterator:0-state") continue;
    if (name == "RandomOpStates") {
      EXPECT_TRUE(reader_a.GetTensor(name).scalar<std::string>() ==
                  reader_b.GetTensor(name).scalar<std::string>());
      continue;
    }
    SCOPED_TRACE(name);
    ASSERT_TRUE(reader_b.HasTensor(name));
    const Tensor ta = reader_a.GetTensor(name), tb = reader_b.GetTensor(name);
    ASSERT_EQ(ta.dtype(), tb.dtype());
    ASSERT_EQ(ta.shape(), tb.shape());
    EXPECT_EQ(std::memcmp(ta.raw_data(), tb.raw_data(), ta.TotalBytes()), 0);
    ++compared;
  }
  EXPECT_EQ(compared, 15);  // 4 weights x (value, m, v), 2 powers, the global step
}

TEST(ExactResume, StoppedAndResumedRunEndsWithTheBitsOfAnUninterruptedOne) {
  for (bool dropout : {false, true}) {
    SCOPED_TRACE(dropout ? "with dropout" : "without dropout");
    const std::string straight_dir = testing::MakeTempDir("exact_straight");
    const std::string resumed_dir = testing::MakeTempDir("exact_resumed");
    const std::string straight = Trainer(dropout).TrainUntil(straight_dir, 40);
    // Stopped at step 17 (a checkpoint saved then, between the periodic ones at 14 and 21),
    // resumed in a new graph and session, stopped again at 30, and resumed to the end.
    EXPECT_EQ(Trainer(dropout).TrainUntil(resumed_dir, 17), JoinPath(resumed_dir, "model.ckpt-17"));
    EXPECT_EQ(Trainer(dropout).TrainUntil(resumed_dir, 30), JoinPath(resumed_dir, "model.ckpt-30"));
    const std::string resumed = Trainer(dropout).TrainUntil(resumed_dir, 40);
    EXPECT_EQ(resumed, JoinPath(resumed_dir, "model.ckpt-40"));
    ExpectSameBits(straight, resumed);
  }
}

// Dropout's masks make a resume exact only with the random ops' positions in the checkpoint
// (TF 1.x's behaviour: every random op restarts from its seeds).
TEST(ExactResume, DropoutWithoutTheRandomOpStatesEndsElsewhere) {
  const std::string straight = Trainer(true).TrainUntil(testing::MakeTempDir("exact_straight3"), 40);
  const std::string dir = testing::MakeTempDir("exact_no_random_states");
  Trainer(true).TrainUntil(dir, 20);
  Trainer second(true);
  // Keep the pipeline's position, drop the random ops' positions.
  auto saveables = second.graph.GetCollection<std::shared_ptr<SaveableObject>>(GraphKeys::kSaveableObjects);
  second.graph.ClearCollection(GraphKeys::kSaveableObjects);
  for (const auto& saveable : saveables) {
    if (saveable->name != "RandomOpStates")
      second.graph.AddToCollection(GraphKeys::kSaveableObjects, saveable);
  }
  second.exact_resume = false;
  const std::string resumed = second.TrainUntil(dir, 40);
  io::CheckpointReader a(straight), b(resumed);
  const Tensor ka = a.GetTensor("dense/kernel"), kb = b.GetTensor("dense/kernel");
  EXPECT_NE(std::memcmp(ka.raw_data(), kb.raw_data(), ka.TotalBytes()), 0);
}

// The test above can fail: a resume that restarts the input pipeline (its position not in the
// checkpoint) ends elsewhere.
TEST(ExactResume, ResumingWithoutThePipelinePositionEndsElsewhere) {
  const std::string straight = Trainer().TrainUntil(testing::MakeTempDir("exact_straight2"), 40);
  const std::string dir = testing::MakeTempDir("exact_no_position");
  Trainer().TrainUntil(dir, 20);
  Trainer second;
  second.graph.ClearCollection(GraphKeys::kSaveableObjects);
  second.exact_resume = false;
  const std::string resumed = second.TrainUntil(dir, 40);
  io::CheckpointReader a(straight), b(resumed);
  const Tensor ka = a.GetTensor("dense/kernel"), kb = b.GetTensor("dense/kernel");
  EXPECT_NE(std::memcmp(ka.raw_data(), kb.raw_data(), ka.TotalBytes()), 0);
}

// What the README's demo does: nothing registered. MonitoredTrainingSession's default saver
// finds the iterator in the "iterators" collection and sees the dropout, and keeps both
// positions in every checkpoint.
TEST(ExactResume, DefaultSaverResumesExactlyWithNothingRegistered) {
  for (bool dropout : {false, true}) {
    SCOPED_TRACE(dropout ? "with dropout" : "without dropout");
    const std::string straight =
        Trainer(dropout, false).TrainUntil(testing::MakeTempDir("default_straight"), 40);
    const std::string dir = testing::MakeTempDir("default_resumed");
    Trainer(dropout, false).TrainUntil(dir, 17);
    Trainer(dropout, false).TrainUntil(dir, 30);
    const std::string resumed = Trainer(dropout, false).TrainUntil(dir, 40);
    ExpectSameBits(straight, resumed);
    EXPECT_EQ(io::CheckpointReader(resumed).HasTensor("RandomOpStates"), dropout);
  }
}

// exact_resume = false is TF's default saver: the variables and nothing else.
TEST(ExactResume, TurnedOffTheCheckpointsHoldOnlyTheVariables) {
  Trainer trainer(/*dropout=*/true, /*register_states=*/false);
  trainer.exact_resume = false;
  const std::string checkpoint = trainer.TrainUntil(testing::MakeTempDir("exact_off"), 10);
  const auto shapes = io::CheckpointReader(checkpoint).GetVariableToShapeMap();
  EXPECT_EQ(shapes.size(), 15u);
  EXPECT_FALSE(shapes.contains("Iterator:0-state"));
  EXPECT_FALSE(shapes.contains("RandomOpStates"));
}

// A checkpoint without the positions (TF's, or one written with exact_resume off) resumes: the
// variables come back, the pipeline and the random ops start fresh.
TEST(ExactResume, CheckpointWithoutThePositionsResumesFromItsVariables) {
  const std::string dir = testing::MakeTempDir("exact_old_checkpoint");
  Trainer old(/*dropout=*/true, /*register_states=*/false);
  old.exact_resume = false;
  old.TrainUntil(dir, 20);
  std::vector<std::string> lines;
  SetLogSink([&](LogSeverity, const std::string& line) { lines.push_back(line); });
  const std::string resumed = Trainer(true, false).TrainUntil(dir, 30);
  SetLogSink(nullptr);
  EXPECT_EQ(resumed, JoinPath(dir, "model.ckpt-30"));
  io::CheckpointReader reader(resumed);
  EXPECT_EQ(reader.GetTensor("global_step").scalar<int64_t>(), 30);
  EXPECT_TRUE(reader.HasTensor("Iterator:0-state"));
  EXPECT_TRUE(reader.HasTensor("RandomOpStates"));
  // Resumed from step 20 (a fresh start would have saved at 21 and 28 instead of 27).
  EXPECT_TRUE(CheckpointExists(JoinPath(dir, "model.ckpt-27")));
  EXPECT_FALSE(CheckpointExists(JoinPath(dir, "model.ckpt-28")));
  const std::string said = StrJoin(lines, "\n");
  EXPECT_NE(said.find("model.ckpt-20 has no Iterator:0-state: Iterator:0 is not restored and starts fresh"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("has no RandomOpStates"), std::string::npos) << said;
}

// An iterator that is not initialized when a checkpoint is saved (an evaluation pipeline
// beside the training one) does not make the save fail: it has no position to save yet.
TEST(ExactResume, AnIteratorNeverInitializedIsSavedWithoutAPosition) {
  Trainer trainer(false, false);
  {
    auto as_default = trainer.graph.AsDefault();
    data::Dataset::FromTensorSlices({Tensor::FromVector<float>({1, 2, 3})}).MakeInitializableIterator();
  }
  const std::string dir = testing::MakeTempDir("exact_uninitialized");
  trainer.TrainUntil(dir, 10);
  Trainer second(false, false);
  {
    auto as_default = second.graph.AsDefault();
    data::Dataset::FromTensorSlices({Tensor::FromVector<float>({1, 2, 3})}).MakeInitializableIterator();
  }
  const std::string resumed = second.TrainUntil(dir, 20);
  io::CheckpointReader reader(resumed);
  EXPECT_TRUE(reader.HasTensor("Iterator:0-state"));
  EXPECT_TRUE(reader.HasTensor("Iterator_1:0-state"));
}

// A DivergenceGuardHook that begins before the scaffold builds its saver does not put TF's
// default saver in its place: the checkpoints still hold the pipeline's position.
TEST(ExactResume, DivergenceGuardKeepsTheExactSaver) {
  Trainer trainer(false, false);
  const std::string dir = testing::MakeTempDir("exact_guard");
  Output loss;
  for (const Operation& op : trainer.graph.operations()) {
    if (op.node()->type() == "Mean") loss = op.output(0);
  }
  ASSERT_TRUE(loss);
  trainer.chief_only_hooks = {std::make_shared<DivergenceGuardHook>(
      DivergenceGuardHook::Options{.loss = loss, .checkpoint_dir = dir})};
  const std::string checkpoint = trainer.TrainUntil(dir, 10);
  EXPECT_TRUE(io::CheckpointReader(checkpoint).HasTensor("Iterator:0-state"));
}

}  // namespace
}  // namespace flowtrain::train
