// Saver::TakeSnapshot / WriteSnapshot and AsyncCheckpointSaver: a snapshot holds the model as it
// was when taken, is written as Save writes (retention, state file; byte for byte against TF's
// files in saver_test.cc), and a background write's error reaches the caller.
#include "flowtrain/train/async_checkpoint_saver.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/checkpoint_management.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using ::testing::ElementsAre;

// Variables w [2] = {1, 2} and step = 0, initialized in a session, with a Saver of them;
// Set() assigns w = {k, k}, step = k; `add` updates them in place.
struct Model {
  explicit Model(int max_to_keep = 5) {
    auto as_default = g.AsDefault();
    w = Variable(Tensor::FromVector<float>({1, 2}), {.name = "w"});
    step = Variable(Tensor::Scalar<int64_t>(0), {.name = "step", .trainable = false});
    w_in = ops::Placeholder(DT_FLOAT, {2}, "w_in");
    step_in = ops::Placeholder(DT_INT64, {}, "step_in");
    set = {w.Assign(w_in).op(), step.Assign(step_in).op()};
    add = {w.AssignAdd(ops::Const<float>({10, 10})).op(), step.AssignAdd(ops::Const(int64_t{10})).op()};
    saver = std::make_unique<Saver>(SaverOptions{.max_to_keep = max_to_keep, .graph = &g});
    sess = std::make_unique<Session>(g);
    sess->Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
  }
  void Set(float k) {
    sess->Run({{w_in, Tensor::FromVector<float>({k, k})},
               {step_in, Tensor::Scalar<int64_t>(static_cast<int64_t>(k))}},
              {}, set);
  }
  void Add() { sess->Run({}, {}, add); }

  Graph g;
  Variable w, step;
  Output w_in, step_in;
  std::vector<Operation> set, add;
  std::unique_ptr<Saver> saver;
  std::unique_ptr<Session> sess;
};

std::vector<float> SavedW(const std::string& path) {
  Tensor t = io::CheckpointReader(path).GetTensor("w");
  return {t.flat<float>().begin(), t.flat<float>().end()};
}

TEST(SaverSnapshot, HoldsTheModelAsItWasWhenTaken) {
  const std::string dir = testing::MakeTempDir("snapshot");
  Model m;
  m.Set(3);
  const CheckpointSnapshot snapshot = m.saver->TakeSnapshot(*m.sess, dir + "/model.ckpt", 3);
  EXPECT_EQ(snapshot.checkpoint_file, dir + "/model.ckpt-3");
  EXPECT_EQ(snapshot.bytes(), 2 * sizeof(float) + sizeof(int64_t));
  m.Add();   // training goes on: updates in place (they copy, on write)
  m.Set(7);  // and assignments
  EXPECT_EQ(m.saver->WriteSnapshot(snapshot), dir + "/model.ckpt-3");
  EXPECT_EQ(SavedW(dir + "/model.ckpt-3"), (std::vector<float>{3, 3}));
  EXPECT_TRUE(FileExists(dir + "/model.ckpt-3.meta"));
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-3");
  // It restores like any checkpoint.
  m.saver->Restore(*m.sess, dir + "/model.ckpt-3");
  EXPECT_EQ(m.sess->Run({}, {m.step.value()}, {})[0].scalar<int64_t>(), 3);
}

TEST(SaverSnapshot, ShardsOnTwoDevicesBecomeOneCheckpoint) {
  const std::string dir = testing::MakeTempDir("snapshot_shards");
  Graph g;
  auto as_default = g.AsDefault();
  Variable a(Tensor::Scalar<float>(1), {.name = "a"});
  Variable c;
  {
    auto device = g.Device("/job:localhost/replica:0/task:0/device:CPU:0");
    c = Variable(Tensor::Scalar<float>(2), {.name = "c"});
  }
  Saver saver({.sharded = true, .graph = &g});
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
  const std::string path = saver.WriteSnapshot(saver.TakeSnapshot(sess, dir + "/model.ckpt", 5));
  EXPECT_TRUE(FileExists(path + ".data-00000-of-00001"));
  Session fresh(g);
  saver.Restore(fresh, path);
  const std::vector<Tensor> values = fresh.Run({}, {a.value(), c.value()}, {});
  EXPECT_EQ(values[0].scalar<float>(), 1.f);
  EXPECT_EQ(values[1].scalar<float>(), 2.f);
}

TEST(AsyncCheckpointSaver, WritesInTheBackgroundOneAtATimeWithRetention) {
  const std::string dir = testing::MakeTempDir("async");
  Model m(/*max_to_keep=*/2);
  AsyncCheckpointSaver async(*m.saver);
  EXPECT_FALSE(async.in_flight());
  EXPECT_FALSE(async.TakeFinished().has_value());
  std::vector<int64_t> written;
  for (int step = 1; step <= 4; ++step) {
    m.Set(static_cast<float>(step));
    if (auto previous = async.Save(*m.sess, dir + "/model.ckpt", step)) {
      written.push_back(previous->global_step);  // the save before waited for
    }
    EXPECT_TRUE(async.in_flight());
    m.Add();  // changes after the snapshot never reach the checkpoint
  }
  std::optional<AsyncCheckpointSaver::Written> last = async.Wait();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->path, dir + "/model.ckpt-4");
  EXPECT_EQ(last->global_step, 4);
  EXPECT_EQ(written, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(async.in_flight());
  EXPECT_FALSE(async.Wait().has_value());
  EXPECT_EQ(SavedW(dir + "/model.ckpt-4"), (std::vector<float>{4, 4}));
  EXPECT_THAT(m.saver->last_checkpoints(), ElementsAre(dir + "/model.ckpt-3", dir + "/model.ckpt-4"));
  EXPECT_FALSE(CheckpointExists(dir + "/model.ckpt-2"));
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-4");
}

TEST(AsyncCheckpointSaver, TakeFinishedCollectsACompletedWrite) {
  const std::string dir = testing::MakeTempDir("async_poll");
  Model m;
  AsyncCheckpointSaver async(*m.saver);
  async.Save(*m.sess, dir + "/model.ckpt", 1);
  std::optional<AsyncCheckpointSaver::Written> done;
  for (int i = 0; i < 10000 && !done; ++i) {
    done = async.TakeFinished();
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->path, dir + "/model.ckpt-1");
  EXPECT_FALSE(async.in_flight());
  EXPECT_TRUE(CheckpointExists(dir + "/model.ckpt-1"));
}

TEST(AsyncCheckpointSaver, AFailedWriteIsRethrownAndTheStateFileKeepsTheLastGoodOne) {
  const std::string dir = testing::MakeTempDir("async_fail");
  Model m;
  AsyncCheckpointSaver async(*m.saver);
  std::filesystem::create_directories(dir + "/good");
  async.Save(*m.sess, dir + "/good/model.ckpt", 1);
  async.Wait();
  // A directory where the index should go: its rename into place fails.
  std::filesystem::create_directories(dir + "/good/model.ckpt-2.index/in_the_way");
  async.Save(*m.sess, dir + "/good/model.ckpt", 2, /*write_meta_graph=*/false);
  EXPECT_THROW(async.Wait(), Error);
  EXPECT_FALSE(async.in_flight());
  EXPECT_EQ(LatestCheckpoint(dir + "/good"), dir + "/good/model.ckpt-1");
}

}  // namespace
}  // namespace flowtrain::train
