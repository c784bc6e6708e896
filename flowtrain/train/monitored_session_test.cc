#include "flowtrain/train/monitored_session.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/kernels/op_kernel.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/summary/file_writer_cache.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/monitored_training_session.h"
#include "flowtrain/train/session_creator.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

// Fails with Aborted while the counter is positive (a lost parameter server).
std::atomic<int> g_aborts_left{0};
FT_REGISTER_OP("MonitoredTestMaybeAbort").Input("x: int64").Output("y: int64").SetIsStateful()
    .SetShapeFn(shape_fns::UnchangedShape);
class MaybeAbortKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    if (g_aborts_left.fetch_sub(1) > 0) Aborted("the parameter server went away");
    ctx->set_output(0, ctx->input(0));
  }
};
FT_REGISTER_KERNEL("MonitoredTestMaybeAbort", MaybeAbortKernel);

// Fails with OutOfRange once the counter reaches zero (an exhausted input).
std::atomic<int> g_inputs_left{0};
FT_REGISTER_OP("MonitoredTestInput").Output("y: float").SetIsStateful().SetShapeFn(shape_fns::ScalarShape);
class InputKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    if (g_inputs_left.fetch_sub(1) <= 0) OutOfRange("End of sequence");
    ctx->set_output(0, Tensor::Scalar<float>(1.0f));
  }
};
FT_REGISTER_KERNEL("MonitoredTestInput", InputKernel);

// Records every callback, in order.
class RecordingHook : public SessionRunHook {
 public:
  explicit RecordingHook(std::string id, std::vector<std::string>* log) : id_(std::move(id)), log_(log) {}
  void Begin() override { log_->push_back(id_ + ".begin"); }
  void AfterCreateSession(SessionInterface&, Coordinator&) override { log_->push_back(id_ + ".create"); }
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext&) override {
    log_->push_back(id_ + ".before");
    if (fetch) return SessionRunArgs{{fetch}, {}, {}, std::nullopt};
    return std::nullopt;
  }
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override {
    log_->push_back(id_ + ".after");
    if (fetch) last_value = values.results.at(0);
    if (stop_after_runs > 0 && ++runs >= stop_after_runs) context.RequestStop();
  }
  void End(SessionInterface&) override { log_->push_back(id_ + ".end"); }
  void AfterRecovery(const RecoveryInfo& info) override { recoveries.push_back(info); }

  Output fetch;
  Tensor last_value;
  int stop_after_runs = 0;
  int runs = 0;
  std::vector<RecoveryInfo> recoveries;

 private:
  std::string id_;
  std::vector<std::string>* log_;
};

// A graph with a global step and a train op that increments it.
struct Model {
  Model() {
    auto as_default = graph.AsDefault();
    step = Variable(Tensor::Scalar<int64_t>(0),
                    {.name = "global_step", .trainable = false,
                     .collections = {GraphKeys::kGlobalVariables, GraphKeys::kGlobalStep}});
    w = Variable(Tensor::FromVector<float>({1, 2}), {.name = "w"});
    train_op = step.AssignAdd(ops::Const(int64_t{1})).op();
  }
  ChiefSessionCreatorOptions Chief(std::string checkpoint_dir = "") {
    ChiefSessionCreatorOptions options;
    options.graph = &graph;
    options.checkpoint_dir = std::move(checkpoint_dir);
    options.config.inter_op_parallelism_threads = 1;  // deterministic stale reads
    return options;
  }
  Graph graph;
  Variable step, w;
  Operation train_op;
};

MonitoredSessionOptions Fast() {
  MonitoredSessionOptions options;
  options.recovery.initial_backoff = std::chrono::milliseconds(0);
  options.stop_grace_period = std::chrono::seconds(5);
  return options;
}

TEST(MonitoredSession, HooksAreCalledInTensorFlowsOrder) {
  Model m;
  std::vector<std::string> log;
  auto a = std::make_shared<RecordingHook>("a", &log);
  auto b = std::make_shared<RecordingHook>("b", &log);
  b->stop_after_runs = 2;
  {
    auto as_default = m.graph.AsDefault();
    b->fetch = m.step.value();
  }
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {a, b}, Fast());
  EXPECT_TRUE(m.graph.finalized());
  int steps = 0;
  while (!sess.ShouldStop()) {
    sess.Run({m.train_op});
    ++steps;
  }
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(b->last_value.scalar<int64_t>(), 1);  // fetched with the second step, stale by one
  sess.Close();
  EXPECT_FALSE(m.graph.finalized());  // was mutable before the session
  const std::vector<std::string> expected = {
      "a.begin", "b.begin", "a.create", "b.create", "a.before", "b.before", "a.after", "b.after",
      "a.before", "b.before", "a.after", "b.after", "a.end", "b.end"};
  EXPECT_EQ(log, expected);
  EXPECT_THROW(sess.Run({m.train_op}), FailedPreconditionError);
  EXPECT_EQ(sess.hook_timings().size(), 2u);
  EXPECT_EQ(sess.hook_timings()[0].calls, 4);
}

TEST(MonitoredSession, RunAfterStopRequestIsAnError) {
  Model m;
  std::vector<std::string> log;
  auto hook = std::make_shared<RecordingHook>("h", &log);
  hook->stop_after_runs = 1;
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {hook}, Fast());
  sess.Run({m.train_op});
  EXPECT_TRUE(sess.ShouldStop());
  try {
    sess.Run({m.train_op});
    FAIL();
  } catch (const FailedPreconditionError& e) {
    EXPECT_STREQ(e.what(), "Run called even after should_stop requested.");
  }
}

TEST(MonitoredSession, FeedConflictsAreErrors) {
  Model m;
  Output x;
  {
    auto as_default = m.graph.AsDefault();
    x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  }
  auto feeder = [&] { return FeedList{{x, Tensor::Scalar<float>(1)}}; };
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()),
                        {std::make_shared<FeedFnHook>(feeder), std::make_shared<FeedFnHook>(feeder)}, Fast());
  try {
    sess.Run({}, {x});
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "Same tensor is fed by two hooks. Conflict(s): ['x:0']");
  }
}

TEST(MonitoredSession, OutOfRangeEndsCleanlyAndRunsEnd) {
  Model m;
  Output input;
  {
    auto as_default = m.graph.AsDefault();
    input = NodeBuilder("MonitoredTestInput").Finalize();
  }
  std::vector<std::string> log;
  auto hook = std::make_shared<RecordingHook>("h", &log);
  g_inputs_left = 3;
  int steps = 0;
  {
    MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {hook}, Fast());
    try {
      while (!sess.ShouldStop()) {
        sess.Run({}, {input});
        ++steps;
      }
    } catch (const OutOfRangeError&) {
      // input exhausted
    }
  }  // destroyed normally: End runs
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(log.back(), "h.end");
}

TEST(MonitoredSession, ExceptionInAHookSkipsEndAndIsNotRetried) {
  Model m;
  class ThrowingHook : public SessionRunHook {
   public:
    void AfterRun(SessionRunContext&, const SessionRunValues&) override {
      Aborted("raised inside a hook");  // a preemption code, but from a hook: not retried
    }
  };
  std::vector<std::string> log;
  auto recorder = std::make_shared<RecordingHook>("r", &log);
  try {
    MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()),
                          {std::make_shared<ThrowingHook>(), recorder}, Fast());
    sess.Run({m.train_op});
    FAIL();
  } catch (const AbortedError& e) {
    EXPECT_STREQ(e.what(), "raised inside a hook");
  }
  EXPECT_EQ(std::count(log.begin(), log.end(), "r.create"), 1);  // no recovery
  EXPECT_EQ(std::count(log.begin(), log.end(), "r.end"), 0);     // unwinding: no End
}

TEST(MonitoredSession, ThreadErrorsStopAndSurfaceAtClose) {
  Model m;
  class ThreadHook : public SessionRunHook {
   public:
    void AfterCreateSession(SessionInterface&, Coordinator& coord) override {
      auto thread = std::make_shared<CoordinatedThread>("failing", [&coord] {
        try {
          InvalidArgument("a queue runner failed");
        } catch (...) {
          coord.RequestStop(std::current_exception());
        }
      });
      coord.RegisterThread(thread);
      thread->Start();
      thread->Join();
    }
  };
  {
    MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()),
                          {std::make_shared<ThreadHook>()}, Fast());
    EXPECT_TRUE(sess.ShouldStop());  // never throws on MonitoredSession
    EXPECT_THROW(sess.Close(), InvalidArgumentError);
  }
  Model m2;
  SingularMonitoredSession singular(m2.Chief(), {std::make_shared<ThreadHook>()}, Fast());
  EXPECT_THROW(singular.ShouldStop(), InvalidArgumentError);
}

TEST(MonitoredSession, AbortedRunIsRecoveredFromTheLatestCheckpoint) {
  Model m;
  const std::string dir = testing::MakeTempDir("recover");
  Output guarded;
  {
    auto as_default = m.graph.AsDefault();
    guarded = NodeBuilder("MonitoredTestMaybeAbort").Input(m.step.value()).Finalize();
  }
  std::vector<std::string> log;
  auto recorder = std::make_shared<RecordingHook>("r", &log);
  CheckpointSaverHookOptions checkpoints;
  checkpoints.save_steps = 3;
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief(dir)),
                        {std::make_shared<CheckpointSaverHook>(dir, checkpoints), recorder}, Fast());
  for (int i = 0; i < 5; ++i) sess.Run({m.train_op});  // step 5; checkpoints at 0 and 3
  g_aborts_left = 2;                                   // two failures, then success
  const Tensor step = sess.Run({}, {guarded})[0];
  EXPECT_EQ(step.scalar<int64_t>(), 3);                // resumed from model.ckpt-3
  EXPECT_EQ(sess.recoveries(), 2);
  EXPECT_EQ(std::count(log.begin(), log.end(), "r.create"), 3);
  ASSERT_EQ(recorder->recoveries.size(), 2u);
  EXPECT_EQ(recorder->recoveries[0].global_step_before, 5);
  EXPECT_EQ(recorder->recoveries[0].global_step_after, 3);
  EXPECT_EQ(recorder->recoveries[0].steps_rolled_back(), 2);
  sess.Close();
}

TEST(MonitoredSession, RecoveryGivesUpAfterItsBudget) {
  Model m;
  Output guarded;
  {
    auto as_default = m.graph.AsDefault();
    guarded = NodeBuilder("MonitoredTestMaybeAbort").Input(m.step.value()).Finalize();
  }
  MonitoredSessionOptions options = Fast();
  options.recovery.max_consecutive_failures = 3;
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {}, options);
  g_aborts_left = 100;
  EXPECT_THROW(sess.Run({}, {guarded}), AbortedError);
  EXPECT_EQ(sess.recoveries(), 3);
  g_aborts_left = 0;
}

TEST(MonitoredSession, RunStepFnAndRequestStop) {
  Model m;
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {}, Fast());
  const int64_t value = sess.RunStepFn([&](StepContext& ctx) {
    ctx.RunWithHooks({}, {}, {m.train_op});
    return ctx.session().Run({}, {m.step.value()}, {})[0].scalar<int64_t>();
  });
  EXPECT_EQ(value, 1);
  EXPECT_FALSE(sess.ShouldStop());
  sess.RunStepFn([&](StepContext& ctx) { ctx.RequestStop(); });
  EXPECT_TRUE(sess.ShouldStop());
}

TEST(MonitoredSession, ChiefAndWorkerShareOneVariableStore) {
  Model m;
  ChiefSessionCreatorOptions chief = m.Chief();
  chief.master = "inproc://chief_and_worker";
  WorkerSessionCreatorOptions worker;
  worker.graph = &m.graph;
  worker.master = "inproc://chief_and_worker";
  worker.max_wait = std::chrono::seconds(10);
  // The worker waits for the chief: start it first in another thread.
  std::unique_ptr<MonitoredSession> worker_sess;
  MonitoredSession chief_sess(std::make_shared<ChiefSessionCreator>(chief), {}, Fast());
  chief_sess.Run({m.train_op});
  worker_sess = std::make_unique<MonitoredSession>(std::make_shared<WorkerSessionCreator>(worker),
                                                   HookList{}, Fast());
  worker_sess->Run({m.train_op});
  chief_sess.Run({m.train_op});
  const Tensor step = worker_sess->Run({}, {m.step.value()})[0];
  EXPECT_EQ(step.scalar<int64_t>(), 3);
}

TEST(MonitoredSession, WorkerTimesOutWithoutAChief) {
  Model m;
  SessionManagerOptions options;
  options.ready_op = ops::ReportUninitializedVariables(std::nullopt, "ready", &m.graph);
  options.recovery_wait = std::chrono::milliseconds(100);  // poll quickly (TF: 30 s)
  SessionManager manager(m.graph, options);
  try {
    manager.WaitForSession("inproc://no_chief_here", ConfigProto{}, std::chrono::seconds(1));
    FAIL();
  } catch (const DeadlineExceededError& e) {
    EXPECT_STREQ(e.what(), "Session was not ready after waiting 1 secs.");
  }
}

TEST(MonitoredTrainingSession, WritesATensorFlowShapedModelDirAndResumes) {
  const std::string dir = testing::MakeTempDir("mts");
  for (int run = 0; run < 2; ++run) {
    Model m;
    MonitoredTrainingSessionOptions options;
    options.graph = &m.graph;
    options.checkpoint_dir = dir;
    options.hooks = {std::make_shared<StopAtStepHook>(LastStep{run == 0 ? 10 : 25})};
    auto sess = MonitoredTrainingSession(options);
    int steps = 0;
    while (!sess->ShouldStop()) {
      sess->Run({m.train_op});
      ++steps;
    }
    EXPECT_EQ(steps, run == 0 ? 10 : 15);  // the second run resumed at step 10
    sess->Close();
  }
  EXPECT_TRUE(FileExists(JoinPath(dir, "checkpoint")));
  EXPECT_TRUE(FileExists(JoinPath(dir, "graph.pbtxt")));
  EXPECT_TRUE(FileExists(JoinPath(dir, "model.ckpt-0.index")));
  EXPECT_TRUE(FileExists(JoinPath(dir, "model.ckpt-25.index")));
  EXPECT_TRUE(FileExists(JoinPath(dir, "model.ckpt-25.meta")));
  EXPECT_EQ(LatestCheckpoint(dir), JoinPath(dir, "model.ckpt-25"));
  // The event files hold the graph, START and CHECKPOINT session logs.
  summary::FileWriterCache::Get(dir)->Flush();
  int graphs = 0, starts = 0, checkpoints = 0;
  for (const std::string& file : io::ListEventFiles(dir)) {
    io::EventFileReader reader(file);
    tensorflow::Event event;
    while (reader.ReadEvent(&event)) {
      if (event.has_graph_def() || !event.graph_def().empty()) ++graphs;
      if (event.has_session_log() && event.session_log().status() == tensorflow::SessionLog::START) ++starts;
      if (event.has_session_log() && event.session_log().status() == tensorflow::SessionLog::CHECKPOINT) ++checkpoints;
    }
  }
  EXPECT_GE(graphs, 2);
  EXPECT_EQ(starts, 2);
  EXPECT_GE(checkpoints, 4);
}

TEST(MonitoredTrainingSession, BothPeriodsForOneHookIsAnError) {
  Model m;
  MonitoredTrainingSessionOptions options;
  options.graph = &m.graph;
  options.checkpoint_dir = testing::MakeTempDir("both");
  options.save_summaries_steps = int64_t{100};
  options.save_summaries_secs = 0.0;
  try {
    MonitoredTrainingSession(options);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "Can not provide both every_secs and every_steps.");
  }
}

}  // namespace
}  // namespace flowtrain::train
