// An input pipeline's position saved in checkpoints (data::MakeSaveableFromIterator) through
// train::Saver and the monitored session: a restarted run continues with the next unseen
// element, shuffle order included.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/monitored_training_session.h"
#include "flowtrain/train/saver.h"
#include "flowtrain/train/scaffold.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

constexpr int64_t kElements = 60;
constexpr int64_t kBatch = 4;

// One pass over 0..59, shuffled (seeded) in a buffer of 16, in batches of 4, prefetched: every
// iterator kind with state of its own (shuffle buffer and random state, prefetch buffer).
struct Pipeline {
  explicit Pipeline(bool add_to_collection = true) {
    auto as_default = graph.AsDefault();
    std::vector<int64_t> values(kElements);
    std::iota(values.begin(), values.end(), 0);
    iterator = data::Dataset::FromTensorSlices(std::vector<Tensor>{Tensor::FromVector<int64_t>(values)})
                   .Shuffle(16, /*seed=*/7)
                   .Batch(kBatch)
                   .Prefetch(2)
                   .MakeInitializableIterator();
    next = iterator.GetNext()[0];
    step = GetOrCreateGlobalStep();
    {
      // A step counts only a batch that was read.
      auto after_read = graph.ControlDependencies({next.op()});
      train_op = ops::Group({step.AssignAdd(ops::Const(int64_t{1})).op()}, "train");
    }
    saveable = data::MakeSaveableFromIterator(iterator);
    if (add_to_collection) graph.AddToCollection(GraphKeys::kSaveableObjects, saveable);
  }
  // Runs GetNext until the end (or `batches` batches), appending the elements to `seen`.
  void Read(SessionInterface& sess, std::vector<int64_t>* seen, int batches = -1) {
    for (int b = 0; b != batches; ++b) {
      Tensor batch;
      try {
        batch = sess.Run({}, {next}, {})[0];
      } catch (const OutOfRangeError&) {
        return;
      }
      for (int64_t v : batch.flat<int64_t>()) seen->push_back(v);
    }
  }
  Graph graph;
  data::Iterator iterator;
  Output next;
  Variable step;
  Operation train_op;
  std::shared_ptr<SaveableObject> saveable;
};

// The elements of one uninterrupted pass.
std::vector<int64_t> OnePass() {
  Pipeline p;
  Session sess(p.graph);
  sess.Run({}, {}, {p.iterator.initializer()});
  std::vector<int64_t> seen;
  p.Read(sess, &seen);
  return seen;
}

TEST(IteratorCheckpoint, OnePassIsAShuffledPermutation) {
  std::vector<int64_t> pass = OnePass();
  ASSERT_EQ(pass.size(), static_cast<size_t>(kElements));
  std::vector<int64_t> sorted = pass;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < kElements; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_FALSE(std::is_sorted(pass.begin(), pass.end()));
  EXPECT_EQ(OnePass(), pass);  // seeded: the reference below is reproducible
}

TEST(IteratorCheckpoint, SaverWritesTheIteratorUnderTensorFlowsKey) {
  Pipeline p;
  Saver saver({.graph = &p.graph});
  Session sess(p.graph);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&p.graph), p.iterator.initializer()});
  const std::string dir = testing::MakeTempDir("iterator_key");
  const std::string path = saver.Save(sess, JoinPath(dir, "model.ckpt"), 0);
  io::CheckpointReader reader(path);
  EXPECT_TRUE(reader.HasTensor("Iterator:0-state"));
  EXPECT_TRUE(reader.HasTensor("global_step"));
  EXPECT_EQ(reader.GetTensor("Iterator:0-state").dtype(), DT_STRING);
}

// Reads 3 batches, saves, and restores into a new graph and session: with the restore before
// the initializer (as a monitored session does) and after it.
TEST(IteratorCheckpoint, SaverRestoreContinuesWithTheNextUnseenElement) {
  const std::vector<int64_t> pass = OnePass();
  const std::string dir = testing::MakeTempDir("iterator_saver");
  std::vector<int64_t> first;
  std::string path;
  {
    Pipeline p;
    Saver saver({.graph = &p.graph});
    Session sess(p.graph);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&p.graph), p.iterator.initializer()});
    p.Read(sess, &first, 3);
    path = saver.Save(sess, JoinPath(dir, "model.ckpt"), 3);
    // Reading on after the save does not change what was saved.
    std::vector<int64_t> ignored;
    p.Read(sess, &ignored, 2);
  }
  ASSERT_EQ(first.size(), static_cast<size_t>(3 * kBatch));
  for (bool restore_first : {true, false}) {
    SCOPED_TRACE(restore_first ? "restore, then initialize" : "initialize, then restore");
    Pipeline p;
    Saver saver({.graph = &p.graph});
    Session sess(p.graph);
    if (restore_first) {
      saver.Restore(sess, path);
      sess.Run({}, {}, {p.iterator.initializer()});
    } else {
      sess.Run({}, {}, {p.iterator.initializer()});
      std::vector<int64_t> ignored;
      p.Read(sess, &ignored, 1);  // a position that the restore replaces
      saver.Restore(sess, path);
    }
    std::vector<int64_t> seen = first;
    p.Read(sess, &seen);
    EXPECT_EQ(seen, pass);
    // The restored position was used once: initializing again starts a new pass.
    sess.Run({}, {}, {p.iterator.initializer()});
    std::vector<int64_t> again;
    p.Read(sess, &again);
    EXPECT_EQ(again.size(), static_cast<size_t>(kElements));
  }
}

TEST(IteratorCheckpoint, SaveableObjectsCanBeGivenToTheSaverExplicitly) {
  Pipeline p(/*add_to_collection=*/false);
  Saver saver({.saveable_objects = {p.saveable}, .graph = &p.graph});
  Session sess(p.graph);
  sess.Run({}, {}, {p.iterator.initializer()});
  const std::string dir = testing::MakeTempDir("iterator_explicit");
  const std::string path = saver.Save(sess, JoinPath(dir, "model.ckpt"));
  io::CheckpointReader reader(path);
  EXPECT_TRUE(reader.HasTensor("Iterator:0-state"));
  EXPECT_FALSE(reader.HasTensor("global_step"));  // only what was given
}

TEST(IteratorCheckpoint, ACheckpointWithoutTheIteratorIsNotFoundNamingIt) {
  const std::string dir = testing::MakeTempDir("iterator_missing");
  std::string path;
  {
    Pipeline p(/*add_to_collection=*/false);
    Saver saver({.graph = &p.graph});
    Session sess(p.graph);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&p.graph)});
    path = saver.Save(sess, JoinPath(dir, "model.ckpt"));
  }
  Pipeline p;
  Saver saver({.graph = &p.graph});
  Session sess(p.graph);
  try {
    saver.Restore(sess, path);
    FAIL() << "expected NotFound";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("Iterator:0-state"), std::string::npos) << e.what();
  }
}

// Two MonitoredTrainingSession runs over one checkpoint directory: the first stops at step 5,
// the second resumes and reads to the end. Together they see exactly one pass, in its order.
TEST(IteratorCheckpoint, MonitoredTrainingSessionResumesTheInputPipeline) {
  const std::vector<int64_t> pass = OnePass();
  const std::string dir = testing::MakeTempDir("iterator_mts");
  std::vector<int64_t> seen;
  std::vector<int> steps_per_run;
  for (int run = 0; run < 2; ++run) {
    Pipeline p;
    auto scaffold = std::make_shared<Scaffold>();
    scaffold->local_init_op = ops::Group({Scaffold::DefaultLocalInitOp(p.graph), p.iterator.initializer()});
    MonitoredTrainingSessionOptions options;
    options.graph = &p.graph;
    options.checkpoint_dir = dir;
    options.scaffold = scaffold;
    options.save_summaries_steps = std::nullopt;
    options.save_summaries_secs = std::nullopt;
    options.log_step_count_steps = std::nullopt;
    if (run == 0) options.hooks = {std::make_shared<StopAtStepHook>(LastStep{5})};
    auto sess = MonitoredTrainingSession(options);
    int steps = 0;
    while (!sess->ShouldStop()) {
      Tensor batch = sess->Run({}, {p.next}, {p.train_op})[0];
      if (!batch.IsInitialized()) break;  // the pass is over: the session stopped
      for (int64_t v : batch.flat<int64_t>()) seen.push_back(v);
      ++steps;
    }
    sess->Close();
    steps_per_run.push_back(steps);
  }
  EXPECT_EQ(steps_per_run[0], 5);
  EXPECT_EQ(steps_per_run[1], kElements / kBatch - 5);
  EXPECT_EQ(seen, pass);
  EXPECT_EQ(LatestCheckpoint(dir), JoinPath(dir, "model.ckpt-15"));
}

}  // namespace
}  // namespace flowtrain::train
