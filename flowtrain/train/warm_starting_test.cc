#include "flowtrain/train/warm_starting.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/variable_scope.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/saver.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using testing::ExpectError;
using testing::ExpectInvalidArgument;
using testing::Values;

// A checkpoint (our Saver's) of old/w = [1, 2], old/b = [3, 4, 5] and c = [6], in a fresh
// directory whose state file names it; returns the directory.
std::string SaveOldModel() {
  const std::string dir = testing::MakeTempDir("warm_start");
  Graph g;
  auto as_default = g.AsDefault();
  Variable w(ops::Const<float>({1, 2}), {.name = "old/w"});
  Variable b(ops::Const<float>({3, 4, 5}), {.name = "old/b"});
  Variable c(ops::Const<float>({6}), {.name = "c"});
  Saver saver;
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  saver.Save(sess, dir + "/model.ckpt", 7);
  return dir;
}

// A float variable `name` of `n` elements, all `fill` (built in the default graph).
Variable Filled(const std::string& name, int n, float fill, bool trainable = true) {
  return Variable(ops::Const<float>(std::vector<float>(n, fill), TensorShape({n})),
                  {.name = name, .trainable = trainable});
}

// Runs the graph's init op and returns `v`'s value.
std::vector<float> Initialized(Graph& g, const std::vector<Variable>& vars, int which) {
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
  return Values<float>(sess.Run({}, {vars[which].value()}, {})[0]);
}

TEST(WarmStartingTest, ScopeToScopeLoadsEveryVariableUnderTheScope) {
  const std::string dir = SaveOldModel();
  Graph g;
  auto as_default = g.AsDefault();
  Variable w, b;
  {
    ops::VariableScope scope("new");
    w = ops::GetVariable("w", {2}, DT_FLOAT, ops::ZerosInitializer());
    b = ops::GetVariable("b", {3}, DT_FLOAT, ops::ZerosInitializer(), {.use_resource = true});
  }
  Variable fresh = Filled("fresh", 2, 9);
  InitFromCheckpoint(dir, {{"old/", "new/"}});  // the directory: its latest checkpoint
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(Values<float>(sess.Run({}, {w.value()}, {})[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(Values<float>(sess.Run({}, {b.value()}, {})[0]), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(Values<float>(sess.Run({}, {fresh.value()}, {})[0]), (std::vector<float>{9, 9}));
  // TF's node names: a RestoreV2 per variable in name order (new/b took
  // "checkpoint_initializer"), feeding the variable's own initializer.
  EXPECT_EQ(w.initializer().node()->input(1).node->name(), "checkpoint_initializer_1");
  EXPECT_EQ(w.initializer().node()->input(1).node->type(), "RestoreV2");
}

TEST(WarmStartingTest, SingleVariableAndRootMappings) {
  const std::string dir = SaveOldModel();
  const std::string prefix = dir + "/model.ckpt-7";
  {
    Graph g;
    auto as_default = g.AsDefault();
    std::vector<Variable> vars = {Filled("mine", 2, 0), Filled("new/c", 1, 0)};
    InitFromCheckpoint(prefix, {{"old/w", "mine"}});
    InitFromCheckpoint(prefix, {{"/", "new/"}});  // new/<name> <- <name>
    EXPECT_EQ(Initialized(g, vars, 0), (std::vector<float>{1, 2}));
    EXPECT_EQ(Initialized(g, vars, 1), (std::vector<float>{6}));
  }
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<Variable> vars = {Filled("w", 2, 0), Filled("b", 3, 0)};
  InitFromCheckpoint(prefix, {{"old/", "/"}});  // every <name> <- old/<name>
  EXPECT_EQ(Initialized(g, vars, 0), (std::vector<float>{1, 2}));
  EXPECT_EQ(Initialized(g, vars, 1), (std::vector<float>{3, 4, 5}));
}

TEST(WarmStartingTest, RootToRootNeedsEveryVariableInTheCheckpoint) {
  const std::string dir = SaveOldModel();
  Graph g;
  auto as_default = g.AsDefault();
  Variable w = Filled("w", 2, 0), other = Filled("other/w", 2, 0);
  ExpectError<NotFoundError>(
      [&] {
        InitFromCheckpoint(dir, {{"old/", "/"}});
      },
      {"Tensor old/other/w", "is not found in", dir});
  // Nothing changed: the initializers still assign their own values.
  EXPECT_EQ(Initialized(g, {w}, 0), (std::vector<float>{0, 0}));
}

TEST(WarmStartingTest, MissingTensorAndShapeOrDtypeMismatchAreErrorsNamingThem) {
  const std::string dir = SaveOldModel();
  Graph g;
  auto as_default = g.AsDefault();
  Variable mine = Filled("mine", 5, 0);
  Variable ints(ops::Const<int32_t>({1, 2}), {.name = "ints"});
  ExpectError<NotFoundError>(
      [&] {
        InitFromCheckpoint(dir, {{"old/zzz", "mine"}});
      },
      {"Tensor old/zzz is not found", "mine:0"});
  ExpectInvalidArgument(
      [&] {
        InitFromCheckpoint(dir, {{"old/w", "mine"}});
      },
      {"Shape of variable mine:0 ([5])", "tensor old/w ([2])"});
  ExpectInvalidArgument(
      [&] {
        InitFromCheckpoint(dir, {{"old/w", "ints"}});
      },
      {"ints:0 is int32", "old/w", "float"});
  ExpectInvalidArgument(
      [&] {
        InitFromCheckpoint(dir, {{"old/w", "absent/var"}});
      },
      {"should map to scope only old/w", "absent/var"});
  ExpectError<NotFoundError>(
      [&] {
        InitFromCheckpoint(dir + "/nothing", {{"old/w", "mine"}});
      },
      {"Failed to find any matching files for", "nothing"});
  EXPECT_EQ(Initialized(g, {mine}, 0), (std::vector<float>(5, 0)));
}

TEST(WarmStartingTest, WarmStartTakesTrainableVariablesMatchingTheRegex) {
  const std::string dir = SaveOldModel();
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<Variable> vars = {Filled("old/w", 2, 0), Filled("old/b", 3, 0), Filled("x", 1, 0),
                                Filled("c", 1, 0, /*trainable=*/false)};
  WarmStart(dir, {.vars_to_warm_start = "old/w|x", .var_name_to_prev_var_name = {{"x", "c"}}});
  EXPECT_EQ(Initialized(g, vars, 0), (std::vector<float>{1, 2}));
  EXPECT_EQ(Initialized(g, vars, 1), (std::vector<float>{0, 0, 0}));  // not matched
  EXPECT_EQ(Initialized(g, vars, 2), (std::vector<float>{6}));        // renamed
  EXPECT_EQ(Initialized(g, vars, 3), (std::vector<float>{0}));        // not trainable
}

TEST(WarmStartingTest, WarmStartDefaultsToEveryTrainableVariable) {
  const std::string dir = SaveOldModel();
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<Variable> vars = {Filled("old/w", 2, 0), Filled("old/b", 3, 0),
                                Filled("old/w/Momentum", 2, 0, /*trainable=*/false)};
  WarmStart(dir);
  EXPECT_EQ(Initialized(g, vars, 0), (std::vector<float>{1, 2}));
  EXPECT_EQ(Initialized(g, vars, 1), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(Initialized(g, vars, 2), (std::vector<float>{0, 0}));  // a slot starts fresh
  ExpectInvalidArgument(
      [&] {
        WarmStart(dir, {.var_name_to_prev_var_name = {{"old/q", "c"}}});
      },
      {"var_name_to_prev_var_name that were not used: old/q", "old/b, old/w"});
  ExpectInvalidArgument([&] { WarmStart(dir, {.vars_to_warm_start = "("}); }, "not a regular expression");
}

}  // namespace
}  // namespace flowtrain::train
