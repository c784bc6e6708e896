// Saver: the save/restore subgraph TF builds, checkpoints TF reads, retention, restore errors,
// damaged files, falling back to the newest intact checkpoint, and .meta round trips.
#include "flowtrain/train/saver.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/allocator.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/io_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/meta_graph.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A small model: w [2,2] float, b [3] float, step int64 (not trainable).
struct Model {
  explicit Model(Graph& g) {
    auto as_default = g.AsDefault();
    w = Variable(Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})), {.name = "w"});
    b = Variable(Tensor::FromVector<float>({5, 6, 7}), {.name = "b"});
    step = Variable(Tensor::Scalar<int64_t>(0), {.name = "step", .trainable = false});
  }
  void Init(Session& sess) { sess.Run({}, {}, {ops::GlobalVariablesInitializer(w.graph())}); }
  // Sets every variable from `k`: w = k, b = 10k, step = k.
  void Set(Session& sess, int k) {
    if (!w_in) {
      auto as_default = w.graph()->AsDefault();
      w_in = ops::Placeholder(DT_FLOAT, {2, 2}, "w_in");
      b_in = ops::Placeholder(DT_FLOAT, {3}, "b_in");
      step_in = ops::Placeholder(DT_INT64, {}, "step_in");
      set = {w.Assign(w_in).op(), b.Assign(b_in).op(), step.Assign(step_in).op()};
    }
    const float f = static_cast<float>(k);
    sess.Run({{w_in, Tensor::FromVector<float>({f, f, f, f}, TensorShape({2, 2}))},
              {b_in, Tensor::FromVector<float>({10 * f, 10 * f, 10 * f})},
              {step_in, Tensor::Scalar<int64_t>(k)}},
             {}, set);
  }
  std::vector<float> W(Session& sess) {
    Tensor t = sess.Run({}, {w.value()}, {})[0];
    return {t.flat<float>().begin(), t.flat<float>().end()};
  }
  std::vector<float> B(Session& sess) {
    Tensor t = sess.Run({}, {b.value()}, {})[0];
    return {t.flat<float>().begin(), t.flat<float>().end()};
  }
  int64_t Step(Session& sess) { return sess.Run({}, {step.value()}, {})[0].scalar<int64_t>(); }

  Variable w, b, step;
  Output w_in, b_in, step_in;
  std::vector<Operation> set;
};

TEST(SaverTest, BuildsTfSaveRestoreSubgraph) {
  Graph g;
  Model m(g);
  Saver saver({.graph = &g});
  for (const char* name :
       {"save/filename/input", "save/filename", "save/Const", "save/SaveV2", "save/SaveV2/tensor_names",
        "save/SaveV2/shape_and_slices", "save/control_dependency", "save/RestoreV2", "save/Assign",
        "save/Assign_1", "save/Assign_2", "save/restore_all"}) {
    EXPECT_NE(g.FindNode(name), nullptr) << name;
  }
  EXPECT_EQ(g.FindNode("save/SaveV2")->type(), "SaveV2");
  EXPECT_EQ(g.FindNode("save/Const")->type(), "PlaceholderWithDefault");
  // Keys sorted by name, as TF: b, step, w.
  Tensor names = g.FindNode("save/SaveV2/tensor_names")->GetAttr<Tensor>("value");
  EXPECT_THAT(std::vector<std::string>(names.flat<std::string>().begin(), names.flat<std::string>().end()),
              ElementsAre("b", "step", "w"));
  const tensorflow::SaverDef& def = saver.saver_def();
  EXPECT_EQ(def.filename_tensor_name(), "save/Const:0");
  EXPECT_EQ(def.save_tensor_name(), "save/control_dependency:0");
  EXPECT_EQ(def.restore_op_name(), "save/restore_all");
  EXPECT_EQ(def.max_to_keep(), 5);
  EXPECT_FALSE(def.sharded());
  EXPECT_FLOAT_EQ(def.keep_checkpoint_every_n_hours(), 10000.0f);
  EXPECT_EQ(def.version(), tensorflow::SaverDef::V2);

  // A second saver gets its own scope.
  Saver second({.var_list = {m.w}, .graph = &g});
  EXPECT_EQ(second.saver_def().restore_op_name(), "save_1/restore_all");
}

TEST(SaverTest, ShardedSubgraphMatchesTf) {
  Graph g;
  Model m(g);
  Saver saver({.sharded = true, .graph = &g});
  for (const char* name :
       {"save/StringJoin/inputs_1", "save/StringJoin", "save/num_shards", "save/ShardedFilename/shard",
        "save/ShardedFilename", "save/SaveV2", "save/control_dependency",
        "save/MergeV2Checkpoints/checkpoint_prefixes", "save/MergeV2Checkpoints", "save/Identity",
        "save/RestoreV2", "save/restore_shard", "save/restore_all"}) {
    EXPECT_NE(g.FindNode(name), nullptr) << name;
  }
  EXPECT_EQ(g.FindNode("save/SaveV2")->requested_device(), "/device:CPU:0");
  EXPECT_EQ(saver.saver_def().save_tensor_name(), "save/Identity:0");
  EXPECT_TRUE(saver.saver_def().sharded());
}

TEST(SaverTest, SaveAndRestoreRoundTrip) {
  for (bool sharded : {false, true}) {
    SCOPED_TRACE(sharded ? "sharded" : "plain");
    const std::string dir = testing::MakeTempDir("saver");
    Graph g;
    Model m(g);
    Saver saver({.sharded = sharded, .graph = &g});
    Session sess(g);
    m.Init(sess);
    m.Set(sess, 7);
    const std::string path = saver.Save(sess, dir + "/model.ckpt", 7);
    EXPECT_EQ(path, dir + "/model.ckpt-7");
    EXPECT_TRUE(FileExists(path + ".index"));
    EXPECT_TRUE(FileExists(path + ".data-00000-of-00001"));
    EXPECT_TRUE(FileExists(path + ".meta"));
    EXPECT_EQ(LatestCheckpoint(dir), path);
    // Nothing else is left in the directory (no temp dirs from the sharded path).
    EXPECT_THAT(ListDirectory(dir), ElementsAre("checkpoint", "model.ckpt-7.data-00000-of-00001",
                                                "model.ckpt-7.index", "model.ckpt-7.meta"));

    io::CheckpointReader reader(path);
    EXPECT_EQ(reader.GetTensor("step").scalar<int64_t>(), 7);
    EXPECT_EQ(reader.GetTensor("w").flat<float>()[3], 7.f);
    EXPECT_EQ(reader.GetVariableToShapeMap().at("w"), TensorShape({2, 2}));

    m.Set(sess, 1);
    saver.Restore(sess, path);
    EXPECT_THAT(m.W(sess), ElementsAre(7, 7, 7, 7));
    EXPECT_THAT(m.B(sess), ElementsAre(70, 70, 70));
    EXPECT_EQ(m.Step(sess), 7);

    // A fresh session (uninitialized variables) restores too.
    Session fresh(g);
    saver.Restore(fresh, path);
    EXPECT_EQ(m.Step(fresh), 7);
  }
}

TEST(SaverTest, GlobalStepFromTensorAndPadding) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  Saver saver({.pad_step_number = true, .graph = &g});
  Session sess(g);
  m.Init(sess);
  m.Set(sess, 42);
  EXPECT_EQ(saver.Save(sess, dir + "/model.ckpt", m.step), dir + "/model.ckpt-00000042");
  // Without a step the path is used as is.
  EXPECT_EQ(saver.Save(sess, dir + "/plain"), dir + "/plain");
}

// Variables a = 1 (no device) and c = 2 (on `c_device`), saved by a sharded saver into a
// two-shard checkpoint at `dir`/model.ckpt-<step>.
struct TwoShardModel {
  TwoShardModel(const std::string& c_device, const std::string& dir, int step) {
    auto as_default = g.AsDefault();
    a = Variable(Tensor::Scalar<float>(1), {.name = "a"});
    {
      auto device = g.Device(c_device);
      c = Variable(Tensor::Scalar<float>(2), {.name = "c"});
    }
    saver = std::make_unique<Saver>(SaverOptions{.sharded = true, .graph = &g});
    Session sess(g);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
    path = saver->Save(sess, dir + "/model.ckpt", step);
  }
  Graph g;
  Variable a, c;
  std::unique_ptr<Saver> saver;
  std::string path;
};

TEST(SaverTest, TwoShardsOnTwoDevicesMerge) {
  TwoShardModel m("/job:localhost/replica:0/task:0/device:CPU:0", testing::MakeTempDir("saver"), 3);
  EXPECT_TRUE(FileExists(m.path + ".data-00000-of-00002"));
  EXPECT_TRUE(FileExists(m.path + ".data-00001-of-00002"));
  Session fresh(m.g);
  m.saver->Restore(fresh, m.path);
  EXPECT_EQ(fresh.Run({}, {m.a.value(), m.c.value()}, {})[1].scalar<float>(), 2.f);
}

TEST(SaverTest, VarMapSavesUnderOtherNames) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  Saver saver({.var_map = {{"dense/kernel", m.w}}, .graph = &g});
  Session sess(g);
  m.Init(sess);
  const std::string path = saver.Save(sess, dir + "/model.ckpt", 1);
  io::CheckpointReader reader(path);
  EXPECT_TRUE(reader.HasTensor("dense/kernel"));
  EXPECT_FALSE(reader.HasTensor("w"));
}

TEST(SaverTest, RetentionKeepsMaxToKeepAndDeletesOnePerSave) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  Saver saver({.max_to_keep = 2, .graph = &g});
  Session sess(g);
  m.Init(sess);
  for (int step = 1; step <= 4; ++step) saver.Save(sess, dir + "/model.ckpt", step);
  EXPECT_THAT(saver.last_checkpoints(), ElementsAre(dir + "/model.ckpt-3", dir + "/model.ckpt-4"));
  EXPECT_FALSE(CheckpointExists(dir + "/model.ckpt-1"));
  EXPECT_FALSE(FileExists(dir + "/model.ckpt-1.meta"));
  EXPECT_FALSE(CheckpointExists(dir + "/model.ckpt-2"));
  EXPECT_TRUE(CheckpointExists(dir + "/model.ckpt-3"));
  auto state = GetCheckpointState(dir);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->model_checkpoint_path(), dir + "/model.ckpt-4");
  EXPECT_EQ(state->all_model_checkpoint_paths_size(), 2);
  // Saving the same path again moves it to the end instead of duplicating it.
  saver.Save(sess, dir + "/model.ckpt", 3);
  EXPECT_THAT(saver.last_checkpoints(), ElementsAre(dir + "/model.ckpt-4", dir + "/model.ckpt-3"));
}

TEST(SaverTest, MaxToKeepZeroKeepsAllButListsOnlyLatest) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  Saver saver({.max_to_keep = 0, .graph = &g});
  Session sess(g);
  m.Init(sess);
  for (int step = 1; step <= 3; ++step) saver.Save(sess, dir + "/model.ckpt", step);
  EXPECT_TRUE(CheckpointExists(dir + "/model.ckpt-1"));
  EXPECT_TRUE(saver.last_checkpoints().empty());
  auto state = GetCheckpointState(dir);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->all_model_checkpoint_paths_size(), 1);
  EXPECT_EQ(state->all_model_checkpoint_paths(0), dir + "/model.ckpt-3");
}

TEST(SaverTest, KeepCheckpointEveryNHoursPreservesOld) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  // 1e-6 hours = 3.6 ms: every checkpoint pushed out is older than the next preservation time.
  Saver saver({.max_to_keep = 1, .keep_checkpoint_every_n_hours = 1e-6, .graph = &g});
  Session sess(g);
  m.Init(sess);
  for (int step = 1; step <= 3; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    saver.Save(sess, dir + "/model.ckpt", step);
  }
  EXPECT_TRUE(CheckpointExists(dir + "/model.ckpt-1"));
  EXPECT_TRUE(CheckpointExists(dir + "/model.ckpt-2"));
  EXPECT_THAT(saver.last_checkpoints(), ElementsAre(dir + "/model.ckpt-3"));
}

TEST(SaverTest, RecoverLastCheckpointsDropsMissing) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  Saver saver({.max_to_keep = 2, .graph = &g});
  Session sess(g);
  m.Init(sess);
  saver.Save(sess, dir + "/model.ckpt", 1);
  saver.Save(sess, dir + "/model.ckpt", 2);
  Saver restarted({.max_to_keep = 2, .graph = &g});
  restarted.RecoverLastCheckpoints({dir + "/model.ckpt-0", dir + "/model.ckpt-1", dir + "/model.ckpt-2"});
  EXPECT_THAT(restarted.last_checkpoints(), ElementsAre(dir + "/model.ckpt-1", dir + "/model.ckpt-2"));
  restarted.Save(sess, dir + "/model.ckpt", 3);
  EXPECT_FALSE(CheckpointExists(dir + "/model.ckpt-1"));
}

TEST(SaverTest, SaveErrors) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  Saver saver({.graph = &g});
  Session sess(g);
  m.Init(sess);
  try {
    saver.Save(sess, dir + "/missing/model.ckpt", 1);
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("Parent directory of " + dir + "/missing/model.ckpt doesn't exist, can't save."));
  }
  EXPECT_THROW(saver.Save(sess, dir + "/model.ckpt", 1, "sub/checkpoint"), InvalidArgumentError);
  EXPECT_THROW(saver.Save(sess, dir + "/checkpoint"), InvalidArgumentError);

  Graph empty_graph;
  EXPECT_THROW(Saver({.graph = &empty_graph}), InvalidArgumentError);
  Saver empty({.allow_empty = true, .graph = &empty_graph});
  Session empty_sess(empty_graph);
  EXPECT_EQ(empty.Save(empty_sess, dir + "/empty", 1), "");
  EXPECT_TRUE(FileExists(dir + "/empty-1.meta"));  // the meta graph is written even when empty
  empty.Restore(empty_sess, dir + "/nothing");     // no-op
}

TEST(SaverTest, UninitializedVariableFailsSave) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  Saver saver({.graph = &g});
  Session sess(g);
  try {
    saver.Save(sess, dir + "/model.ckpt", 1);
    FAIL() << "expected an error";
  } catch (const FailedPreconditionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Attempting to use uninitialized value"));
  }
  EXPECT_FALSE(CheckpointExists(dir + "/model.ckpt-1"));
  EXPECT_FALSE(GetCheckpointState(dir).has_value());
}

// Saves the Model at step 5 and returns the checkpoint path.
std::string SaveModel(const std::string& dir, int step = 5) {
  Graph g;
  Model m(g);
  Saver saver({.graph = &g});
  Session sess(g);
  m.Init(sess);
  m.Set(sess, step);
  return saver.Save(sess, dir + "/model.ckpt", step);
}

TEST(SaverTest, RestoreMissingVariableIsNotFoundNamingIt) {
  const std::string path = SaveModel(testing::MakeTempDir("saver"));
  Graph g;
  auto as_default = g.AsDefault();
  Variable w(Tensor::FromVector<float>({0, 0, 0, 0}, TensorShape({2, 2})), {.name = "w"});
  Variable extra(Tensor::Scalar<float>(1), {.name = "extra"});
  Saver saver({.graph = &g});
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
  try {
    saver.Restore(sess, path);
    FAIL() << "expected NotFound";
  } catch (const NotFoundError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Key extra not found in checkpoint"));
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("variable 'extra'"));
  }
  // Nothing was assigned.
  EXPECT_EQ(sess.Run({}, {w.value()}, {})[0].flat<float>()[0], 0.f);
}

TEST(SaverTest, RestoreShapeOrDtypeMismatchNamesVariableAndShapes) {
  const std::string path = SaveModel(testing::MakeTempDir("saver"));
  {
    Graph g;
    auto as_default = g.AsDefault();
    Variable b(Tensor::FromVector<float>({0, 0}), {.name = "b"});
    Saver saver({.graph = &g});
    Session sess(g);
    try {
      saver.Restore(sess, path);
      FAIL() << "expected InvalidArgument";
    } catch (const InvalidArgumentError& e) {
      EXPECT_THAT(
          e.what(),
          HasSubstr("Assign requires shapes of both tensors to match. lhs shape= [2] rhs shape= [3]"));
      EXPECT_THAT(e.what(), HasSubstr("variable 'b'"));
    }
  }
  {
    Graph g;
    auto as_default = g.AsDefault();
    Variable b(Tensor::FromVector<double>({0, 0, 0}), {.name = "b"});
    Saver saver({.graph = &g});
    Session sess(g);
    try {
      saver.Restore(sess, path);
      FAIL() << "expected InvalidArgument";
    } catch (const InvalidArgumentError& e) {
      EXPECT_THAT(e.what(), HasSubstr("expected dtype double does not equal original dtype float"));
      EXPECT_THAT(e.what(), HasSubstr("variable 'b'"));
    }
  }
  EXPECT_THROW(
      {
        Graph g;
        Model m(g);
        Saver saver({.graph = &g});
        Session sess(g);
        saver.Restore(sess, path + "-nope");
      },
      InvalidArgumentError);
}

TEST(SaverTest, RestoreV2OpErrorsNameKeyAndCheckpoint) {
  const std::string path = SaveModel(testing::MakeTempDir("saver"));
  Graph g;
  auto as_default = g.AsDefault();
  Output prefix = ops::Const(Tensor::Scalar<std::string>(path));
  std::vector<Output> out = ops::RestoreV2(prefix, {"w", "nope"}, {"", ""}, {DT_FLOAT, DT_FLOAT});
  std::vector<Output> wrong_type = ops::RestoreV2(prefix, {"w"}, {""}, {DT_INT32});
  Session sess(g);
  try {
    sess.Run({}, {out[1]}, {});
    FAIL() << "expected NotFound";
  } catch (const NotFoundError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Key nope not found in checkpoint"));
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
  EXPECT_THROW(sess.Run({}, {wrong_type[0]}, {}), InvalidArgumentError);
}

void FlipByte(const std::string& path, int64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c;
  f.read(&c, 1);
  c ^= 0x10;
  f.seekp(offset);
  f.write(&c, 1);
}

TEST(SaverTest, DamagedCheckpointIsDataLossAndChangesNothing) {
  const std::string dir = testing::MakeTempDir("saver");
  const std::string path = SaveModel(dir);
  const std::string data = path + ".data-00000-of-00001";
  for (int damage = 0; damage < 3; ++damage) {
    SCOPED_TRACE(damage);
    const std::string copy = StrCat(dir, "/copy", damage);
    std::filesystem::copy_file(path + ".index", copy + ".index");
    std::filesystem::copy_file(data, copy + ".data-00000-of-00001");
    if (damage == 0) FlipByte(copy + ".data-00000-of-00001", 20);
    if (damage == 1) std::filesystem::resize_file(copy + ".data-00000-of-00001", 10);
    if (damage == 2) FlipByte(copy + ".index", 3);
    Graph g;
    Model m(g);
    Saver saver({.graph = &g});
    Session sess(g);
    m.Init(sess);
    try {
      saver.Restore(sess, copy);
      FAIL() << "expected DataLoss";
    } catch (const DataLossError& e) {
      EXPECT_THAT(e.what(), HasSubstr(copy));
    }
    EXPECT_THAT(m.W(sess), ElementsAre(1, 2, 3, 4));
    EXPECT_EQ(m.Step(sess), 0);
  }
}

// Restores of more than a few MB map the fresh output pages on a second thread while the reads
// fill them (RestoreV2's PrefaultAhead): values arrive intact, and a damaged tensor found late
// stops that thread before the outputs are freed, leaving the variables as they were.
TEST(SaverTest, LargeRestoreIntoFreshMemoryAndDamageFoundLate) {
  constexpr int kVariables = 3;
  constexpr int32_t kFloats = 1 << 20;  // 4 MB each: 12 MB, enough to start the thread
  Graph g;
  std::vector<Variable> vars;
  Operation set_others;
  {
    auto as_default = g.AsDefault();
    std::vector<Operation> sets;
    for (int i = 0; i < kVariables; ++i) {
      // A ramp, so that a misplaced page would show.
      Tensor ramp(DT_FLOAT, TensorShape({kFloats}));
      for (int32_t k = 0; k < kFloats; ++k)
        ramp.flat<float>()[k] = static_cast<float>(k) + 1000.0f * static_cast<float>(i);
      vars.emplace_back(ramp, VariableOptions{.name = StrCat("big_", i)});
      sets.push_back(vars.back().Assign(ops::Fill(ops::Const<int32_t>({kFloats}), ops::Const(-1.0f))).op());
    }
    set_others = ops::Group(sets);
  }
  Saver saver({.graph = &g});
  const std::string dir = testing::MakeTempDir("saver");
  std::string path;
  {
    Session sess(g);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
    path = saver.Save(sess, dir + "/model.ckpt");
  }
  auto value_at = [&](Session& sess, int var, int64_t index) {
    return sess.Run({}, {vars[var].value()}, {})[0].flat<float>()[index];
  };
  {
    ReleaseCachedMemory();  // the restore's outputs come from the system, as at a process's start
    Session sess(g);
    saver.Restore(sess, path);
    for (int i = 0; i < kVariables; ++i) {
      for (int64_t index :
           {int64_t{0}, int64_t{4095}, int64_t{4096}, int64_t{kFloats / 2}, int64_t{kFloats - 1}}) {
        EXPECT_EQ(value_at(sess, i, index), static_cast<float>(index) + 1000.0f * static_cast<float>(i));
      }
    }
  }
  // Damage the last tensor's last bytes: found only after the other two were read.
  const std::string data = io::DataFilename(path, 0, 1);
  FlipByte(data, static_cast<int64_t>(std::filesystem::file_size(data)) - 3);
  ReleaseCachedMemory();
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
  sess.Run({}, {}, {set_others});
  EXPECT_THROW(saver.Restore(sess, path), DataLossError);
  for (int i = 0; i < kVariables; ++i) EXPECT_EQ(value_at(sess, i, kFloats - 1), -1.0f);
}

TEST(SaverTest, DamagedShardIsVerifiedBeforeAnyAssign) {
  TwoShardModel m("/device:CPU:0", testing::MakeTempDir("saver"), 1);
  FlipByte(m.path + ".data-00001-of-00002", 0);
  Operation set_a;
  {
    auto as_default = m.g.AsDefault();
    set_a = m.a.Assign(ops::Const(9.0f)).op();
  }
  Session fresh(m.g);
  fresh.Run({}, {}, {ops::GlobalVariablesInitializer(&m.g)});
  fresh.Run({}, {}, {set_a});
  EXPECT_THROW(m.saver->Restore(fresh, m.path), DataLossError);
  EXPECT_EQ(fresh.Run({}, {m.a.value()}, {})[0].scalar<float>(), 9.f);
}

// Saves dir/model.ckpt-1..3 of `m` (its values set to the step) and damages ckpt-3's data.
void SaveThreeWithTheNewestDamaged(Model& m, Saver& saver, Session& sess, const std::string& dir) {
  m.Init(sess);
  for (int step = 1; step <= 3; ++step) {
    m.Set(sess, step);
    saver.Save(sess, dir + "/model.ckpt", step);
  }
  FlipByte(dir + "/model.ckpt-3.data-00000-of-00001", 4);
}

TEST(SaverTest, RestoreLatestFallsBackToNewestIntact) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  Saver saver({.graph = &g});
  Session sess(g);
  SaveThreeWithTheNewestDamaged(m, saver, sess, dir);
  std::filesystem::remove(dir + "/model.ckpt-2.index");

  Session fresh(g);
  std::optional<std::string> restored = saver.RestoreLatest(fresh, dir);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(*restored, dir + "/model.ckpt-1");
  EXPECT_EQ(m.Step(fresh), 1);
  EXPECT_THAT(m.W(fresh), ElementsAre(1, 1, 1, 1));

  // TF's behaviour on request: the latest is damaged, so restoring fails.
  Session strict(g);
  EXPECT_THROW(saver.RestoreLatest(strict, dir, {.fall_back_to_intact = false}), DataLossError);

  // Nothing intact at all.
  FlipByte(dir + "/model.ckpt-1.data-00000-of-00001", 0);
  try {
    saver.RestoreLatest(strict, dir);
    FAIL() << "expected DataLoss";
  } catch (const DataLossError& e) {
    EXPECT_THAT(e.what(), HasSubstr("model.ckpt-3"));
    EXPECT_THAT(e.what(), HasSubstr("model.ckpt-2"));
    EXPECT_THAT(e.what(), HasSubstr("model.ckpt-1"));
  }
  // No checkpoint state: nothing to restore.
  EXPECT_FALSE(saver.RestoreLatest(strict, testing::MakeTempDir("empty")).has_value());
}

// A state file that is garbage, names no checkpoint or names only missing ones: the newest
// intact checkpoint in the directory is restored, not none (a restart from step 0) nor an error.
TEST(SaverTest, RestoreLatestFallsBackToTheDirectoryWhenTheStateFileIsUnusable) {
  const std::string dir = testing::MakeTempDir("saver");
  Graph g;
  Model m(g);
  Saver saver({.graph = &g});
  Session sess(g);
  SaveThreeWithTheNewestDamaged(m, saver, sess, dir);
  for (const std::string& state : {std::string("\x89garbage{{{"), std::string(""),
                                   std::string("model_checkpoint_path: \"model.ckpt-77\"\n"
                                               "all_model_checkpoint_paths: \"model.ckpt-77\"\n")}) {
    WriteFileAtomically(dir + "/checkpoint", state);
    Session fresh(g);
    std::optional<std::string> restored = saver.RestoreLatest(fresh, dir);
    ASSERT_TRUE(restored.has_value()) << state;
    EXPECT_EQ(*restored, dir + "/model.ckpt-2") << state;  // 3 is damaged
    EXPECT_EQ(m.Step(fresh), 2);
    // TF's behaviour on request: a garbage state file is no checkpoint, a missing one too.
    Session strict(g);
    if (state.empty()) {
      EXPECT_THROW(saver.RestoreLatest(strict, dir, {.fall_back_to_intact = false}), InvalidArgumentError);
    } else {
      EXPECT_FALSE(saver.RestoreLatest(strict, dir, {.fall_back_to_intact = false}).has_value()) << state;
    }
  }
  // Without a state file there is no checkpoint, as in TF.
  std::filesystem::remove(dir + "/checkpoint");
  Session fresh(g);
  EXPECT_FALSE(saver.RestoreLatest(fresh, dir).has_value());
}

// A Save removes what killed saves left in its directory once it is old enough.
TEST(SaverTest, SaveRemovesStaleTemporariesOfInterruptedSaves) {
  const std::string dir = testing::MakeTempDir("saver");
  const std::string debris = dir + "/model.ckpt-1_temp_" + std::string(32, 'c');
  CreateDirectories(debris);
  WriteFileAtomically(debris + "/part-00000-of-00001.index", "x");
  WriteFileAtomically(dir + "/checkpoint.tmp" + std::string(32, 'd'), "x");
  for (const std::string& path :
       {debris + "/part-00000-of-00001.index", debris, dir + "/checkpoint.tmp" + std::string(32, 'd')}) {
    std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) - std::chrono::minutes(5));
  }
  Graph g;
  Model m(g);
  Saver saver({.sharded = true, .graph = &g});
  Session sess(g);
  m.Init(sess);
  saver.Save(sess, dir + "/model.ckpt", 2);
  EXPECT_THAT(ListDirectory(dir), ElementsAre("checkpoint", "model.ckpt-2.data-00000-of-00001",
                                              "model.ckpt-2.index", "model.ckpt-2.meta"));
}

TEST(SaverTest, RestoresTensorFlowCheckpoint) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  // The variables of TF's Estimator fixture (tf.layers.dense x2).
  Graph g;
  auto as_default = g.AsDefault();
  Variable kernel(Tensor(DT_FLOAT, TensorShape({2, 4})), {.name = "dense/kernel"});
  Variable bias(Tensor(DT_FLOAT, TensorShape({4})), {.name = "dense/bias"});
  Variable step(Tensor::Scalar<int64_t>(0), {.name = "global_step", .trainable = false});
  Saver saver({.graph = &g});
  Session sess(g);
  saver.Restore(sess, testing::FixturePath("tf1_estimator_model_dir/model.ckpt-2000"));
  EXPECT_EQ(sess.Run({}, {step.value()}, {})[0].scalar<int64_t>(), 2000);
  io::CheckpointReader reader(testing::FixturePath("tf1_estimator_model_dir/model.ckpt-2000"));
  Tensor expected = reader.GetTensor("dense/kernel");
  Tensor got = sess.Run({}, {kernel.value()}, {})[0];
  for (int i = 0; i < 8; ++i) EXPECT_EQ(got.flat<float>()[i], expected.flat<float>()[i]);
}

TEST(SaverTest, SavesBytesLikeTensorFlow) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  // Re-saving the fixture's values gives a checkpoint whose files equal TF's byte for byte
  // when the same tensors are saved in the same order: by Save, sharded or not, and by
  // WriteSnapshot of a snapshot taken before the variables changed.
  const std::string fixture = testing::FixturePath("tf1_estimator_model_dir/model.ckpt-2000");
  io::CheckpointReader reader(fixture);
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<Variable> vars;
  std::vector<Operation> zero;
  for (const auto& [name, dtype] : reader.GetVariableToDataTypeMap()) {
    vars.emplace_back(reader.GetTensor(name), VariableOptions{.name = name});
    zero.push_back(vars.back().Assign(ops::ZerosLike(vars.back().value())).op());
  }
  for (bool sharded : {false, true}) {
    Saver saver({.var_list = vars, .sharded = sharded, .graph = &g});
    Session sess(g);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
    const std::string dir = testing::MakeTempDir("saver");
    std::filesystem::create_directories(dir + "/snapshot");
    const std::string saved = saver.Save(sess, dir + "/model.ckpt", 2000, "checkpoint", "meta", false);
    const CheckpointSnapshot snapshot =
        saver.TakeSnapshot(sess, dir + "/snapshot/model.ckpt", 2000, "checkpoint", false);
    sess.Run({}, {}, zero);
    const std::string written = saver.WriteSnapshot(snapshot);
    for (const std::string& path : {saved, written}) {
      EXPECT_EQ(ReadFileToString(path + ".index"), ReadFileToString(fixture + ".index")) << path;
      EXPECT_EQ(ReadFileToString(path + ".data-00000-of-00001"),
                ReadFileToString(fixture + ".data-00000-of-00001"))
          << path;
    }
  }
}

TEST(SaverTest, MetaGraphRoundTrip) {
  const std::string dir = testing::MakeTempDir("saver");
  std::string path;
  {
    Graph g;
    Model m(g);
    auto as_default = g.AsDefault();
    Output y = ops::Identity(m.w, "y");
    g.AddToCollection(GraphKeys::kTrainOp, y.op());
    g.AddToCollection("my_tensors", y);
    g.AddToCollection(GraphKeys::kGlobalStep, m.step);
    auto saver = GetSaverOrDefault(g);
    EXPECT_EQ(GetSaverOrDefault(g), saver);
    Session sess(g);
    m.Init(sess);
    m.Set(sess, 3);
    path = saver->Save(sess, dir + "/model.ckpt", 3);
    tensorflow::MetaGraphDef meta;
    ASSERT_TRUE(meta.ParseFromString(ReadFileToString(path + ".meta")));
    EXPECT_EQ(meta.meta_info_def().tensorflow_version(), "1.15.0");
    EXPECT_EQ(meta.saver_def().filename_tensor_name(), "save/Const:0");
    EXPECT_TRUE(meta.saver_def().sharded());
    bool has_save_v2 = false;
    for (const auto& op : meta.meta_info_def().stripped_op_list().op()) has_save_v2 |= op.name() == "SaveV2";
    EXPECT_TRUE(has_save_v2);
    const auto& vars = meta.collection_def().at("variables").bytes_list();
    ASSERT_EQ(vars.value_size(), 3);
    tensorflow::VariableDef vdef;
    ASSERT_TRUE(vdef.ParseFromString(vars.value(0)));
    EXPECT_EQ(vdef.variable_name(), "w:0");
    EXPECT_EQ(vdef.initializer_name(), "w/Assign");
    EXPECT_EQ(vdef.snapshot_name(), "w/read:0");
    EXPECT_EQ(vdef.initial_value_name(), "w/initial_value:0");
    EXPECT_TRUE(vdef.trainable());
    EXPECT_EQ(meta.collection_def().at("train_op").node_list().value(0), "y");
    EXPECT_EQ(meta.collection_def().at("my_tensors").node_list().value(0), "y:0");
    EXPECT_EQ(meta.collection_def().at("savers").bytes_list().value_size(), 1);
  }
  Graph g2;
  std::shared_ptr<Saver> saver = ImportMetaGraph(path + ".meta", &g2);
  ASSERT_NE(saver, nullptr);
  EXPECT_EQ(ops::GlobalVariables(&g2).size(), 3u);
  EXPECT_EQ(ops::TrainableVariables(&g2).size(), 2u);
  EXPECT_EQ(g2.GetCollection<Operation>(GraphKeys::kTrainOp).at(0).name(), "y");
  EXPECT_EQ(g2.GetCollection<std::shared_ptr<Saver>>(GraphKeys::kSavers).size(), 1u);
  Session sess(g2);
  saver->Restore(sess, path);
  EXPECT_EQ(sess.Run({}, {g2.GetTensorByName("y:0")}, {})[0].flat<float>()[0], 3.f);
  // The imported saver saves too.
  const std::string again = saver->Save(sess, dir + "/again", 4);
  EXPECT_EQ(io::CheckpointReader(again).GetTensor("w").flat<float>()[0], 3.f);
}

TEST(SaverTest, TensorFlowSaverDefDrivesImportedSubgraph) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  // The fixture's SaverDef names nodes of TF's graph; a Saver from it finds them in a graph
  // holding those nodes (here, ours built with the same names).
  tensorflow::MetaGraphDef meta;
  ASSERT_TRUE(meta.ParseFromString(
      ReadFileToString(testing::FixturePath("tf1_estimator_model_dir/model.ckpt-2000.meta"))));
  EXPECT_EQ(meta.saver_def().save_tensor_name(), "save/Identity:0");
  Graph g;
  Model m(g);
  Saver built({.sharded = true, .graph = &g});
  Saver from_def(g, meta.saver_def());
  EXPECT_EQ(from_def.saver_def().restore_op_name(), "save/restore_all");
  const std::string dir = testing::MakeTempDir("saver");
  Session sess(g);
  m.Init(sess);
  m.Set(sess, 9);
  const std::string path = from_def.Save(sess, dir + "/model.ckpt", 9);
  Session fresh(g);
  from_def.Restore(fresh, path);
  EXPECT_EQ(m.Step(fresh), 9);
}

}  // namespace
}  // namespace flowtrain::train
