#include "flowtrain/train/monitored_session.h"

#include <atomic>
#include <cctype>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/data_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/summary/file_writer_cache.h"
#include "flowtrain/summary/summary.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/monitored_training_session.h"
#include "flowtrain/train/queue_runner.h"
#include "flowtrain/train/session_creator.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

// Fails with Aborted while the counter is positive (a lost parameter server).
std::atomic<int> g_aborts_left{0};
FT_REGISTER_OP("MonitoredTestMaybeAbort")
    .Input("x: int64")
    .Output("y: int64")
    .SetIsStateful()
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

// Yields g_inputs_left values, then fails: with OutOfRange "End of sequence" (an exhausted
// input) unless g_input_corrupt, then with InvalidArgument "corrupt record" (a bad record).
std::atomic<int> g_inputs_left{0};
std::atomic<bool> g_input_corrupt{false};
FT_REGISTER_OP("MonitoredTestInput").Output("y: float").SetIsStateful().SetShapeFn(shape_fns::ScalarShape);
class InputKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    if (g_inputs_left.fetch_sub(1) <= 0) {
      if (g_input_corrupt) InvalidArgument("corrupt record");
      OutOfRange("End of sequence");
    }
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
  void AfterRecovery(const RecoveryInfo& info) override {
    log_->push_back(id_ + ".recovered");
    recoveries.push_back(info);
  }
  HookSchedule NextDue() const override { return schedule; }

  Output fetch;
  Tensor last_value;
  int stop_after_runs = 0;
  int runs = 0;
  HookSchedule schedule = HookSchedule::EveryRun();
  std::vector<RecoveryInfo> recoveries;

 private:
  std::string id_;
  std::vector<std::string>* log_;
};

// A graph with a global step and a train op that increments it.
struct Model {
  Model() {
    auto as_default = graph.AsDefault();
    step = GetOrCreateGlobalStep(&graph);
    w = Variable(Tensor::FromVector<float>({1, 2}), {.name = "w"});
    train_op = step.AssignAdd(ops::Const(int64_t{1})).op();
  }
  // The global step, read through an op that fails with Aborted while g_aborts_left > 0.
  Output Guarded() {
    auto as_default = graph.AsDefault();
    return NodeBuilder("MonitoredTestMaybeAbort").Input(step.value()).Finalize();
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

// A recoverable session on `m` with a CheckpointSaverHook saving every `save_steps` steps into
// `dir` (where the creator restores from), then `recorder`.
std::unique_ptr<MonitoredSession> CheckpointingSession(Model& m, const std::string& dir, int64_t save_steps,
                                                       std::shared_ptr<RecordingHook> recorder) {
  CheckpointSaverHookOptions checkpoints;
  checkpoints.every_n_steps = save_steps;
  return std::make_unique<MonitoredSession>(
      std::make_shared<ChiefSessionCreator>(m.Chief(dir)),
      HookList{std::make_shared<CheckpointSaverHook>(dir, checkpoints), std::move(recorder)}, Fast());
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
  const std::vector<std::string> expected = {"a.begin",  "b.begin", "a.create", "b.create", "a.before",
                                             "b.before", "a.after", "b.after",  "a.before", "b.before",
                                             "a.after",  "b.after", "a.end",    "b.end"};
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

TEST(MonitoredSession, OutOfRangeStopsTheLoopWithoutATryBlockAndRunsEnd) {
  Model m;
  Output input;
  {
    auto as_default = m.graph.AsDefault();
    input = NodeBuilder("MonitoredTestInput").Finalize();
  }
  std::vector<std::string> log;
  auto hook = std::make_shared<RecordingHook>("h", &log);
  g_inputs_left = 3;
  int values = 0;
  {
    MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {hook}, Fast());
    while (!sess.ShouldStop()) {
      std::vector<Tensor> out = sess.Run({}, {input});
      ASSERT_EQ(out.size(), 1u);
      if (out[0].IsInitialized()) ++values;
    }
    EXPECT_TRUE(sess.ShouldStop());
    // A step function meeting the end of the input returns a default value, as for a stop.
    const std::vector<Tensor> from_step_fn =
        sess.RunStepFn([&](StepContext& ctx) { return ctx.RunWithHooks({}, {input}); });
    EXPECT_TRUE(from_step_fn.empty());
    // Once stopped at the end of its input, a Run says so instead of running.
    EXPECT_THROW(sess.Run({}, {input}), OutOfRangeError);
  }  // destroyed normally: End runs
  EXPECT_EQ(values, 3);
  EXPECT_EQ(log.back(), "h.end");
}

TEST(MonitoredSession, OutOfRangeIsThrownWhenAskedAndEndStillRuns) {
  Model m;
  Output input;
  {
    auto as_default = m.graph.AsDefault();
    input = NodeBuilder("MonitoredTestInput").Finalize();
  }
  std::vector<std::string> log;
  auto hook = std::make_shared<RecordingHook>("h", &log);
  g_inputs_left = 3;
  MonitoredSessionOptions options = Fast();
  options.on_out_of_range = OnOutOfRange::kThrow;
  int steps = 0;
  {
    MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {hook}, options);
    try {
      while (!sess.ShouldStop()) {
        sess.Run({}, {input});
        ++steps;
      }
      FAIL() << "the exhausted input should have thrown";
    } catch (const OutOfRangeError&) {
      // input exhausted
    }
    EXPECT_FALSE(sess.ShouldStop());
    EXPECT_THROW(sess.RunStepFn([&](StepContext& ctx) { return ctx.RunWithHooks({}, {input}); }),
                 OutOfRangeError);
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

// A hook reading through the session it is handed (the global step on a lost parameter
// server, say) fails with the session's preemption: that is recovered like the step's own.
class ReadingHook : public SessionRunHook {
 public:
  explicit ReadingHook(Output read, bool on_create = false) : read_(read), on_create_(on_create) {}
  void AfterCreateSession(SessionInterface& session, Coordinator&) override {
    if (on_create_) values.push_back(session.Run({}, {read_}, {})[0].scalar<int64_t>());
  }
  void AfterRun(SessionRunContext& context, const SessionRunValues&) override {
    if (!on_create_) values.push_back(context.session().Run({}, {read_}, {})[0].scalar<int64_t>());
  }
  std::vector<int64_t> values;

 private:
  Output read_;
  bool on_create_;
};

TEST(MonitoredSession, APreemptionOfTheSessionAHookUsesIsRecovered) {
  Model m;
  const std::string dir = testing::MakeTempDir("hook_preempted");
  auto reader = std::make_shared<ReadingHook>(m.Guarded());
  std::vector<std::string> log;
  auto recorder = std::make_shared<RecordingHook>("r", &log);
  CheckpointSaverHookOptions checkpoints;
  checkpoints.every_n_steps = 2;
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief(dir)),
                        {std::make_shared<CheckpointSaverHook>(dir, checkpoints), reader, recorder}, Fast());
  for (int i = 0; i < 3; ++i) sess.Run({m.train_op});  // step 3; checkpoints at 0 and 2
  g_aborts_left = 1;                                   // the step runs, then the hook's own read fails
  sess.Run({m.train_op});
  EXPECT_EQ(sess.recoveries(), 1);
  EXPECT_EQ(std::count(log.begin(), log.end(), "r.create"), 2);
  // Steps 1-3 read; step 4 was checkpointed (the saver hook runs first) but its read was lost
  // with the session; the new session restored step 4 and the retried run made it 5.
  EXPECT_EQ(reader->values, (std::vector<int64_t>{1, 2, 3, 5}));
  sess.Close();
}

TEST(MonitoredSession, APreemptionInAfterCreateSessionIsRetried) {
  Model m;
  auto reader = std::make_shared<ReadingHook>(m.Guarded(), /*on_create=*/true);
  g_aborts_left = 2;
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {reader}, Fast());
  EXPECT_EQ(reader->values, (std::vector<int64_t>{0}));  // the third session's read
  sess.Run({m.train_op});
  sess.Close();
}

TEST(MonitoredSession, AHookTurningTheSessionsPreemptionIntoItsOwnErrorIsNotRetried) {
  Model m;
  class TranslatingHook : public SessionRunHook {
   public:
    explicit TranslatingHook(Output read) : read_(read) {}
    void AfterRun(SessionRunContext& context, const SessionRunValues&) override {
      try {
        context.session().Run({}, {read_}, {});
      } catch (const AbortedError&) {
        InvalidArgument("the hook gave up");
      }
    }

   private:
    Output read_;
  };
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()),
                        {std::make_shared<TranslatingHook>(m.Guarded())}, Fast());
  g_aborts_left = 1;
  EXPECT_THROW(sess.Run({m.train_op}), InvalidArgumentError);
  EXPECT_EQ(sess.recoveries(), 0);
  g_aborts_left = 0;
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
    MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {std::make_shared<ThreadHook>()},
                          Fast());
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
  const Output guarded = m.Guarded();
  std::vector<std::string> log;
  auto recorder = std::make_shared<RecordingHook>("r", &log);
  auto sess = CheckpointingSession(m, dir, 3, recorder);
  for (int i = 0; i < 5; ++i) sess->Run({m.train_op});  // step 5; checkpoints at 0 and 3
  g_aborts_left = 2;                                    // two failures, then success
  const Tensor step = sess->Run({}, {guarded})[0];
  EXPECT_EQ(step.scalar<int64_t>(), 3);  // resumed from model.ckpt-3
  EXPECT_EQ(sess->recoveries(), 2);
  EXPECT_EQ(std::count(log.begin(), log.end(), "r.create"), 3);
  ASSERT_EQ(recorder->recoveries.size(), 2u);
  EXPECT_EQ(recorder->recoveries[0].global_step_before, 5);
  EXPECT_EQ(recorder->recoveries[0].global_step_after, 3);
  EXPECT_EQ(recorder->recoveries[0].steps_rolled_back(), 2);
  EXPECT_EQ(recorder->recoveries[1].attempt, 2);
  EXPECT_EQ(recorder->recoveries[1].global_step_before, 3);  // the second failure lost nothing
  EXPECT_EQ(recorder->recoveries[1].steps_rolled_back(), 0);
  EXPECT_NE(recorder->recoveries[0].error.find("the parameter server went away"), std::string::npos);
  // Told after the new session's AfterCreateSession.
  const auto created = std::find(log.rbegin(), log.rend(), "r.create");
  const auto recovered = std::find(log.rbegin(), log.rend(), "r.recovered");
  EXPECT_LT(recovered - log.rbegin(), created - log.rbegin());
  // The checkpoint hook re-armed at the restored step 3 (it saved it again): next save at 6.
  for (int i = 0; i < 3; ++i) sess->Run({m.train_op});  // 4, 5, 6
  EXPECT_TRUE(FileExists(JoinPath(dir, "model.ckpt-6.index")));
  sess->Close();
}

TEST(MonitoredSession, RecoveryInfoLacksTheStepBeforeWhenNoHookFollowedIt) {
  Model m;
  const std::string dir = testing::MakeTempDir("recover_untracked");
  const Output guarded = m.Guarded();
  std::vector<std::string> log;
  auto recorder = std::make_shared<RecordingHook>("r", &log);
  recorder->schedule = HookSchedule::Never();
  CheckpointSaverHookOptions checkpoints;
  checkpoints.every_n_secs = 3600;  // saves at creation only: no hook follows the global step
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief(dir)),
                        {std::make_shared<CheckpointSaverHook>(dir, checkpoints), recorder}, Fast());
  for (int i = 0; i < 4; ++i) sess.Run({m.train_op});  // runs that fetch nothing extra
  g_aborts_left = 1;
  EXPECT_EQ(sess.Run({}, {guarded})[0].scalar<int64_t>(), 0);
  ASSERT_EQ(recorder->recoveries.size(), 1u);
  EXPECT_FALSE(recorder->recoveries[0].global_step_before.has_value());
  EXPECT_EQ(recorder->recoveries[0].global_step_after, 0);
  EXPECT_FALSE(recorder->recoveries[0].steps_rolled_back().has_value());
  sess.Close();
}

TEST(MonitoredSession, RunStepFnIsReRunAfterARecoveryAndHooksAreTold) {
  Model m;
  const std::string dir = testing::MakeTempDir("recover_step_fn");
  const Output guarded = m.Guarded();
  std::vector<std::string> log;
  auto recorder = std::make_shared<RecordingHook>("r", &log);
  auto sess = CheckpointingSession(m, dir, 2, recorder);
  for (int i = 0; i < 3; ++i) sess->Run({m.train_op});  // step 3; checkpoints at 0 and 2
  g_aborts_left = 1;
  int calls = 0;
  const int64_t seen = sess->RunStepFn([&](StepContext& ctx) {
    ++calls;
    return ctx.RunWithHooks({}, {guarded})[0].scalar<int64_t>();
  });
  EXPECT_EQ(calls, 2);  // the whole function again, on the new session
  EXPECT_EQ(seen, 2);
  ASSERT_EQ(recorder->recoveries.size(), 1u);
  EXPECT_EQ(recorder->recoveries[0].global_step_before, 3);
  EXPECT_EQ(recorder->recoveries[0].global_step_after, 2);
  EXPECT_EQ(recorder->recoveries[0].steps_rolled_back(), 1);
  sess->Close();
}

TEST(MonitoredSession, AbortedWithoutRecoveryPropagatesAndSkipsEnd) {
  Model m;
  const Output guarded = m.Guarded();
  std::vector<std::string> log;
  auto recorder = std::make_shared<RecordingHook>("r", &log);
  g_aborts_left = 1;
  try {
    SingularMonitoredSession sess(m.Chief(), {recorder}, Fast());
    sess.Run({}, {guarded});
    FAIL();
  } catch (const AbortedError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the parameter server went away", 0), 0u) << e.what();
  }
  g_aborts_left = 0;
  EXPECT_EQ(std::count(log.begin(), log.end(), "r.create"), 1);
  EXPECT_EQ(std::count(log.begin(), log.end(), "r.after"), 0);  // the run failed
  EXPECT_EQ(std::count(log.begin(), log.end(), "r.end"), 0);    // unwinding: no End
  EXPECT_TRUE(recorder->recoveries.empty());
}

TEST(MonitoredSession, ExceptionInABeforeRunSkipsTheRunAndEnd) {
  Model m;
  class ThrowingHook : public SessionRunHook {
   public:
    std::optional<SessionRunArgs> BeforeRun(SessionRunContext&) override {
      Unavailable("raised before the run");
    }
  };
  std::vector<std::string> log;
  auto recorder = std::make_shared<RecordingHook>("r", &log);
  try {
    MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()),
                          {recorder, std::make_shared<ThrowingHook>()}, Fast());
    sess.Run({m.train_op});
    FAIL();
  } catch (const UnavailableError& e) {
    EXPECT_STREQ(e.what(), "raised before the run");
  }
  const std::vector<std::string> expected = {"r.begin", "r.create", "r.before"};
  EXPECT_EQ(log, expected);  // no AfterRun, no recovery, no End
}

TEST(MonitoredSession, QueueRunnerErrorStopsTrainingAndSurfacesAtClose) {
  Model m;
  std::vector<Output> batch;
  {
    auto as_default = m.graph.AsDefault();
    ops::FIFOQueue queue(4, {DT_FLOAT});
    const Output record = NodeBuilder("MonitoredTestInput").Finalize();
    AddQueueRunner(QueueRunner(queue, {queue.Enqueue({record})}));
    batch = queue.Dequeue();
  }
  std::vector<std::string> log;
  auto recorder = std::make_shared<RecordingHook>("r", &log);
  g_inputs_left = 5;
  g_input_corrupt = true;
  MonitoredSessionOptions options = Fast();
  options.on_out_of_range = OnOutOfRange::kThrow;  // to tell a closed queue from a stop
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {recorder}, options);
  int steps = 0;
  bool input_ended = false;
  try {
    while (!sess.ShouldStop() && steps < 100) {
      sess.Run({}, batch);
      ++steps;
    }
  } catch (const OutOfRangeError&) {
    input_ended = true;  // the queue was closed when the coordinator stopped
  } catch (const CancelledError&) {
    input_ended = true;  // or a dequeue in flight was cancelled
  }
  EXPECT_LE(steps, 5);  // five records were read before the corrupt one
  EXPECT_TRUE(input_ended || sess.ShouldStop());
  try {
    sess.Close();
    FAIL() << "the reader's error should surface from Close()";
  } catch (const InvalidArgumentError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("corrupt record", 0), 0u) << e.what();  // + the node
  }
  EXPECT_EQ(log.back(), "r.end");  // Close() still ran the hooks' End before the error surfaced
  g_input_corrupt = false;
}

TEST(MonitoredSession, RecoveryGivesUpAfterItsBudget) {
  Model m;
  const Output guarded = m.Guarded();
  MonitoredSessionOptions options = Fast();
  options.recovery.max_consecutive_failures = 3;
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {}, options);
  g_aborts_left = 100;
  EXPECT_THROW(sess.Run({}, {guarded}), AbortedError);
  EXPECT_EQ(sess.recoveries(), 3);
  g_aborts_left = 0;
}

TEST(MonitoredSession, RecoveryBacksOffExponentiallyAndTensorFlowsRetriesForever) {
  Model m;
  const Output guarded = m.Guarded();
  MonitoredSessionOptions options = Fast();
  options.recovery.initial_backoff = std::chrono::milliseconds(20);
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(m.Chief()), {}, options);
  g_aborts_left = 3;
  const auto start = std::chrono::steady_clock::now();
  sess.Run({}, {guarded});
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20 + 40 + 80));
  EXPECT_EQ(sess.recoveries(), 3);
  // TF's way: no budget, no wait; more failures than the default budget of 10 are survived.
  options.recovery = RecoveryOptions::TensorFlow();
  MonitoredSession tf(std::make_shared<ChiefSessionCreator>(m.Chief()), {}, options);
  g_aborts_left = 15;
  tf.Run({}, {guarded});
  EXPECT_EQ(tf.recoveries(), 15);
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
  worker_sess =
      std::make_unique<MonitoredSession>(std::make_shared<WorkerSessionCreator>(worker), HookList{}, Fast());
  worker_sess->Run({m.train_op});
  chief_sess.Run({m.train_op});
  const Tensor step = worker_sess->Run({}, {m.step.value()})[0];
  EXPECT_EQ(step.scalar<int64_t>(), 3);
}

TEST(MonitoredTrainingSession, ChiefAndWorkerShareVariablesAndOnlyTheChiefGetsDefaultHooks) {
  Model m;
  const std::string dir = testing::MakeTempDir("chief_worker");
  MonitoredTrainingSessionOptions chief;
  chief.graph = &m.graph;
  chief.master = "inproc://mts_chief_and_worker";
  chief.checkpoint_dir = dir;
  chief.chief_only_hooks = {std::make_shared<StopAtStepHook>(LastStep{1000})};
  auto chief_sess = MonitoredTrainingSession(chief);
  chief_sess->Run({m.train_op});
  MonitoredTrainingSessionOptions worker = chief;
  worker.is_chief = false;
  worker.max_wait = std::chrono::seconds(10);
  auto worker_sess = MonitoredTrainingSession(worker);
  // The chief's chief-only hook, step counter, summary saver and checkpoint saver; none on the
  // worker.
  std::vector<std::string> chief_hooks;
  for (const HookTiming& t : chief_sess->hook_timings()) chief_hooks.push_back(t.hook);
  EXPECT_EQ(chief_hooks, (std::vector<std::string>{"StopAtStepHook", "StepCounterHook", "SummarySaverHook",
                                                   "CheckpointSaverHook"}));
  EXPECT_TRUE(worker_sess->hook_timings().empty());
  worker_sess->Run({m.train_op});
  worker_sess->Run({m.train_op});
  chief_sess->Run({m.train_op});
  EXPECT_EQ(chief_sess->Run({}, {m.step.value()})[0].scalar<int64_t>(), 4);
  EXPECT_EQ(worker_sess->Run({}, {m.step.value()})[0].scalar<int64_t>(), 4);
  worker_sess->Close();
  chief_sess->Close();
  EXPECT_EQ(LatestCheckpoint(dir), JoinPath(dir, "model.ckpt-4"));  // the chief's final save
}

TEST(MonitoredTrainingSession, AsyncCheckpointsSurviveARecoveryMidWrite) {
  Model m;
  const std::string dir = testing::MakeTempDir("mts_async");
  MonitoredTrainingSessionOptions options;
  options.graph = &m.graph;
  options.checkpoint_dir = dir;
  options.save_checkpoint_steps = int64_t{2};
  options.save_summaries_steps = std::nullopt;
  options.log_step_count_steps = std::nullopt;
  options.async_checkpoint = true;
  options.recovery.initial_backoff = std::chrono::milliseconds(0);
  const Output guarded = m.Guarded();
  auto sess = MonitoredTrainingSession(options);
  for (int i = 0; i < 4; ++i) sess->Run({m.train_op});  // saves of 2 and 4 start
  g_aborts_left = 1;
  const int64_t restored = sess->Run({}, {guarded})[0].scalar<int64_t>();
  // The newest checkpoint written when the new session restored: 4, or 2 if 4 was still
  // being written.
  EXPECT_TRUE(restored == 4 || restored == 2) << restored;
  EXPECT_EQ(sess->recoveries(), 1);
  for (int i = 0; i < 3; ++i) sess->Run({m.train_op});
  sess->Close();
  const std::string final_checkpoint = JoinPath(dir, StrCat("model.ckpt-", restored + 3));
  EXPECT_EQ(LatestCheckpoint(dir), final_checkpoint);
  EXPECT_EQ(io::CheckpointReader(final_checkpoint).GetTensor("global_step").scalar<int64_t>(), restored + 3);
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
      if (event.has_session_log() && event.session_log().status() == tensorflow::SessionLog::CHECKPOINT)
        ++checkpoints;
    }
  }
  EXPECT_GE(graphs, 2);
  EXPECT_EQ(starts, 2);
  // Saves at 0 and 10 (the end) in the first run; at the end in the second, which was
  // restored from the checkpoint of step 10 and so did not write it again (TF does).
  EXPECT_GE(checkpoints, 3);
}

// What kinds of events a model directory's event files hold: "graph_def", "meta_graph_def",
// "session_log:START", "summary:loss"...
std::set<std::string> EventKinds(const std::string& dir) {
  std::set<std::string> kinds;
  for (const std::string& file : io::ListEventFiles(dir)) {
    io::EventFileReader reader(file);
    tensorflow::Event e;
    while (reader.ReadEvent(&e)) {
      if (!e.file_version().empty()) kinds.insert("file_version");
      if (!e.graph_def().empty()) kinds.insert("graph_def");
      if (!e.meta_graph_def().empty()) kinds.insert("meta_graph_def");
      if (e.has_session_log()) {
        kinds.insert(
            StrCat("session_log:", tensorflow::SessionLog::SessionStatus_Name(e.session_log().status())));
      }
      for (const auto& v : e.summary().value()) kinds.insert(StrCat("summary:", v.tag()));
    }
  }
  return kinds;
}

// A directory's file names with numbers replaced by N and event files' host names dropped.
std::set<std::string> FileShapes(const std::string& dir) {
  std::set<std::string> shapes;
  for (std::string name : ListDirectory(dir)) {
    if (name.rfind("events.out.tfevents.", 0) == 0) name = "events.out.tfevents";
    std::string shape;
    for (size_t i = 0; i < name.size(); ++i) {
      if (std::isdigit(static_cast<unsigned char>(name[i]))) {
        if (shape.empty() || shape.back() != 'N') shape += 'N';
      } else {
        shape += name[i];
      }
    }
    shapes.insert(shape);
  }
  return shapes;
}

// The final save at Close fails (here: a directory sits where its index file goes, as good as
// a full disk for the rename). Close reports it to the caller; the checkpoint saved before
// is still the latest.
TEST(MonitoredTrainingSession, CloseThrowsWhenTheFinalSaveFails) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async checkpoints" : "checkpoints");
    const std::string dir = testing::MakeTempDir("mts_final_save");
    Model m;
    MonitoredTrainingSessionOptions options;
    options.graph = &m.graph;
    options.checkpoint_dir = dir;
    options.async_checkpoint = async;
    options.hooks = {std::make_shared<StopAtStepHook>(LastStep{5})};
    auto sess = MonitoredTrainingSession(options);
    while (!sess->ShouldStop()) sess->Run({m.train_op});
    CreateDirectories(JoinPath(dir, "model.ckpt-5.index"));
    try {
      sess->Close();
      ADD_FAILURE() << "Close() returned although the final checkpoint could not be written";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("model.ckpt-5.index"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(sess->closed());
    EXPECT_EQ(LatestCheckpoint(dir), JoinPath(dir, "model.ckpt-0"));
  }
}

TEST(MonitoredTrainingSession, LeavesADirectoryShapedLikeTensorFlows) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::string fixture = testing::FixturePath("tf1_estimator_model_dir");
  const std::string dir = testing::MakeTempDir("shaped");
  {
    Model m;
    {
      auto as_default = m.graph.AsDefault();
      summary::Scalar("loss", ops::Cast(m.step.value(), DT_FLOAT));
    }
    MonitoredTrainingSessionOptions options;
    options.graph = &m.graph;
    options.checkpoint_dir = dir;
    options.save_checkpoint_steps = int64_t{100};  // the fixture's run saved at 0, 1000, 2000
    options.hooks = {std::make_shared<StopAtStepHook>(LastStep{250})};
    auto sess = MonitoredTrainingSession(options);
    while (!sess->ShouldStop()) sess->Run({m.train_op});
    sess->Close();
  }
  summary::FileWriterCache::Get(dir)->Flush();
  // Every kind of file TF left, except the log its author captured.
  std::set<std::string> want = FileShapes(fixture);
  want.erase("train.log");
  const std::set<std::string> have = FileShapes(dir);
  for (const std::string& shape : want) EXPECT_TRUE(have.count(shape)) << shape;
  EXPECT_TRUE(FileExists(JoinPath(dir, "model.ckpt-250.data-00000-of-00001")));
  EXPECT_EQ(LatestCheckpoint(dir), JoinPath(dir, "model.ckpt-250"));
  // Every kind of event TF wrote: the graph, the meta graph, START and CHECKPOINT session
  // logs, the loss and global_step/sec scalars.
  const std::set<std::string> tf_kinds = EventKinds(fixture);
  const std::set<std::string> kinds = EventKinds(dir);
  for (const std::string& kind : tf_kinds) EXPECT_TRUE(kinds.count(kind)) << kind;
  for (const char* kind : {"graph_def", "meta_graph_def", "session_log:START", "session_log:CHECKPOINT",
                           "summary:loss", "summary:global_step/sec"}) {
    EXPECT_TRUE(tf_kinds.count(kind)) << kind;  // the fixture is what we think it is
  }
}

TEST(MonitoredTrainingSession, BothPeriodsForOneHookIsAnError) {
  Model m;
  MonitoredTrainingSessionOptions options;
  options.graph = &m.graph;
  options.checkpoint_dir = testing::MakeTempDir("both");
  options.save_summaries_steps = 100;
  options.save_summaries_secs = 0;
  try {
    MonitoredTrainingSession(options);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "Can not provide both every_secs and every_steps.");
  }
}

// Period options take values as TF users write them (`save_checkpoint_secs = 60`), keep
// TF's default until set, and reject a fractional step count at compile time.
TEST(MonitoredTrainingSession, PeriodOptionsAssignLikeTensorFlowArguments) {
  static_assert(std::is_assignable_v<Defaulted<double>&, int>);
  static_assert(std::is_assignable_v<Defaulted<double>&, double>);
  static_assert(std::is_assignable_v<Defaulted<int64_t>&, int>);
  static_assert(!std::is_assignable_v<Defaulted<int64_t>&, double>);
  static_assert(!std::is_assignable_v<Defaulted<int64_t>&, bool>);
  MonitoredTrainingSessionOptions options;
  EXPECT_TRUE(options.save_checkpoint_secs.is_default());
  options.save_checkpoint_secs = 60;
  EXPECT_EQ(options.save_checkpoint_secs.value_if_set(), 60.0);
  options.save_checkpoint_secs = std::nullopt;
  EXPECT_TRUE(options.save_checkpoint_secs.disabled());
  EXPECT_EQ(options.save_checkpoint_secs.value_if_set(), std::nullopt);
  options.save_checkpoint_secs = UseDefault{};
  EXPECT_TRUE(options.save_checkpoint_secs.is_default());

  // An int seconds period drives the hook: 3600 s saves only at creation and at the end.
  Model m;
  options.graph = &m.graph;
  options.checkpoint_dir = testing::MakeTempDir("int_secs");
  options.save_checkpoint_secs = 3600;
  options.save_summaries_steps = std::nullopt;
  options.hooks = {std::make_shared<StopAtStepHook>(LastStep{3})};
  auto sess = MonitoredTrainingSession(options);
  while (!sess->ShouldStop()) sess->Run({m.train_op});
  sess->Close();
  EXPECT_EQ(LatestCheckpoint(options.checkpoint_dir), JoinPath(options.checkpoint_dir, "model.ckpt-3"));
  EXPECT_EQ(GetCheckpointState(options.checkpoint_dir)->all_model_checkpoint_paths_size(), 2);  // 0 and 3
}

}  // namespace
}  // namespace flowtrain::train
