// Tests of Scaffold's defaults and of SessionManager: prepare (initialise or restore), recover,
// and wait for a chief.
#include "flowtrain/train/session_manager.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/summary/summary.h"
#include "flowtrain/train/saver.h"
#include "flowtrain/train/scaffold.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

// A global variable w, a local variable, a summary, and an op setting w to 7.
struct Model {
  Model() {
    auto as_default = graph.AsDefault();
    w = Variable(Tensor::Scalar<float>(1.0f), {.name = "w"});
    local = Variable(Tensor::Scalar<float>(0.0f),
                     {.name = "local", .trainable = false, .collections = {GraphKeys::kLocalVariables}});
    summary::Scalar("w_value", w.value());
    set_w = w.Assign(ops::Const(7.0f)).op();
  }
  // A SessionManager with the finalized scaffold's readiness checks and local init.
  SessionManager Manager() {
    scaffold.Finalize(graph);
    SessionManagerOptions options;
    options.local_init_op = scaffold.local_init_op;
    options.ready_op = scaffold.ready_op;
    options.ready_for_local_init_op = scaffold.ready_for_local_init_op;
    options.recovery_wait = std::chrono::milliseconds(20);  // TF: 30 s
    return SessionManager(graph, options);
  }
  PrepareSessionOptions Prepare(const std::string& checkpoint_dir, int* init_fn_calls) {
    PrepareSessionOptions options;
    options.init_op = scaffold.init_op;
    options.saver = scaffold.saver;
    options.checkpoint_dir = checkpoint_dir;
    options.init_fn = [this, init_fn_calls](SessionInterface& session) {
      ++*init_fn_calls;
      session.Run({}, {}, {set_w});
    };
    return options;
  }
  float W(SessionInterface& session) { return session.Run({}, {w.value()}, {})[0].scalar<float>(); }

  Graph graph;
  Variable w, local;
  Operation set_w;
  Scaffold scaffold;
};

TEST(Scaffold, FinalizeFillsTensorFlowsDefaultsAndReusesCollections) {
  Model m;
  Scaffold& s = m.scaffold;
  s.Finalize(m.graph);
  EXPECT_TRUE(s.finalized());
  EXPECT_TRUE(m.graph.finalized());
  EXPECT_EQ(s.init_op.name(), "group_deps");
  // TF's report_uninitialized_variables ends in a boolean_mask: ".../boolean_mask/GatherV2".
  EXPECT_EQ(s.ready_op.op().name(), "report_uninitialized_variables/boolean_mask/GatherV2");
  EXPECT_EQ(s.ready_for_local_init_op.op().name(), "report_uninitialized_variables_1/boolean_mask/GatherV2");
  EXPECT_EQ(s.local_init_op.name(), "group_deps_1");
  EXPECT_TRUE(static_cast<bool>(s.summary_op));  // the merged SUMMARIES collection
  ASSERT_NE(s.saver, nullptr);
  // The defaults went into the collections, so another scaffold on the graph shares them.
  m.graph.Unfinalize();
  Scaffold again;
  again.Finalize(m.graph);
  EXPECT_EQ(again.init_op, s.init_op);
  EXPECT_EQ(again.ready_op, s.ready_op);
  EXPECT_EQ(again.local_init_op, s.local_init_op);
  EXPECT_EQ(again.summary_op, s.summary_op);
  EXPECT_EQ(again.saver, s.saver);
  // ready_op names what is not initialised yet: globals and locals.
  Session sess(m.graph);
  const Tensor before = sess.Run({}, {s.ready_op}, {})[0];
  EXPECT_EQ(before.NumElements(), 2);
  sess.Run({}, {}, {s.init_op, s.local_init_op});
  EXPECT_EQ(sess.Run({}, {s.ready_op}, {})[0].NumElements(), 0);
}

TEST(SessionManager, PrepareSessionInitialisesThenRestores) {
  Model m;
  SessionManager manager = m.Manager();
  const std::string dir = testing::MakeTempDir("session_manager");
  int init_fn_calls = 0;
  {
    auto sess = manager.PrepareSession(m.Prepare(dir, &init_fn_calls));  // nothing to restore
    EXPECT_EQ(init_fn_calls, 1);
    EXPECT_EQ(m.W(*sess), 7.0f);
    EXPECT_FALSE(manager.RecoverSession(m.Prepare(dir, &init_fn_calls)).second);  // no checkpoint
    m.scaffold.saver->Save(*sess, JoinPath(dir, "model.ckpt"), int64_t{3});
  }
  auto restored = manager.PrepareSession(m.Prepare(dir, &init_fn_calls));
  EXPECT_EQ(init_fn_calls, 1);  // restored: no init
  EXPECT_EQ(m.W(*restored), 7.0f);
  auto [recovered, ready] = manager.RecoverSession(m.Prepare(dir, &init_fn_calls));
  EXPECT_TRUE(ready);
  EXPECT_EQ(m.W(*recovered), 7.0f);
  // Nothing to initialise with: TF's error.
  SessionManager bare(m.graph, {.ready_op = m.scaffold.ready_op});
  try {
    bare.PrepareSession(PrepareSessionOptions{});
    FAIL();
  } catch (const FailedPreconditionError& e) {
    EXPECT_STREQ(e.what(), "Model is not initialized and no init_op or init_fn or local_init_op was given");
  }
}

TEST(SessionManager, WaitForSessionWaitsForTheChiefAndLogsWhatIsNotReady) {
  Model m;
  SessionManager manager = m.Manager();
  std::vector<std::string> waiting;
  SetLogSink([&](LogSeverity, const std::string& line) {
    if (line.find("Waiting for model to be ready.") != std::string::npos) waiting.push_back(line);
  });
  // A target of its own (inproc state lives as long as the process, e.g. across --gtest_repeat).
  static int runs = 0;
  const std::string master = StrCat("inproc://session_manager_wait_", ++runs);
  std::unique_ptr<SessionInterface> chief;
  std::thread chief_thread([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    int init_fn_calls = 0;
    PrepareSessionOptions options = m.Prepare("", &init_fn_calls);
    options.master = master;
    chief = manager.PrepareSession(options);
  });
  auto worker = manager.WaitForSession(master, ConfigProto{}, std::chrono::seconds(30));
  chief_thread.join();
  SetLogSink(nullptr);
  EXPECT_EQ(m.W(*worker), 7.0f);  // the chief's initialisation, seen through the shared store
  ASSERT_FALSE(waiting.empty());
  EXPECT_NE(waiting[0].find("Variables not initialized: w"), std::string::npos) << waiting[0];
}

}  // namespace
}  // namespace flowtrain::train
