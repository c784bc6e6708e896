// Tests of the standard hooks and the beyond-TF ones, each through a MonitoredSession.
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/summary/file_writer_cache.h"
#include "flowtrain/summary/summary.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/early_stopping_hook.h"
#include "flowtrain/train/hook_timer.h"
#include "flowtrain/train/hooks_test_model.h"
#include "flowtrain/train/monitored_session.h"
#include "flowtrain/train/profiler_hook.h"
#include "flowtrain/train/progress_bar_hook.h"
#include "flowtrain/train/session_creator.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using Model = HooksTestModel;

TEST(HookTimer, ValidatesAndTriggers) {
  EXPECT_THROW(SecondOrStepTimer(std::nullopt, std::nullopt), InvalidArgumentError);
  try {
    SecondOrStepTimer(1.0, 5);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "Can not provide both every_secs and every_steps.");
  }
  SecondOrStepTimer timer(std::nullopt, 10);
  EXPECT_TRUE(timer.ShouldTriggerForStep(0));
  EXPECT_FALSE(timer.UpdateLastTriggeredStep(0).first.has_value());
  EXPECT_FALSE(timer.ShouldTriggerForStep(0));
  EXPECT_FALSE(timer.ShouldTriggerForStep(9));
  EXPECT_TRUE(timer.ShouldTriggerForStep(10));
  EXPECT_EQ(timer.UpdateLastTriggeredStep(10).second, 10);
}

TEST(StopAtStepHook, LastStepAndNumSteps) {
  Model m;
  {
    auto sess = m.Session({std::make_shared<StopAtStepHook>(LastStep{7})});
    EXPECT_EQ(m.RunUntilStop(*sess), 7);
    sess->Close();
  }
  // num_steps counts from the step at session creation; a new session restarts at 0 here.
  auto hook = std::make_shared<StopAtStepHook>(NumSteps{4});
  auto sess = m.Session({hook});
  EXPECT_EQ(m.RunUntilStop(*sess), 4);
  EXPECT_EQ(hook->last_step(), 4);
}

TEST(StopAtStepHook, AtLeastOneStepRunsAndGlobalStepIsRequired) {
  Model m;
  auto sess = m.Session({std::make_shared<StopAtStepHook>(LastStep{0})});
  EXPECT_EQ(m.RunUntilStop(*sess), 1);
  Graph no_step;
  {
    auto as_default = no_step.AsDefault();
    ops::Const(1.0f);
  }
  ChiefSessionCreatorOptions options;
  options.graph = &no_step;
  auto as_default = no_step.AsDefault();
  try {
    MonitoredSession bad(std::make_shared<ChiefSessionCreator>(options),
                         {std::make_shared<StopAtStepHook>(LastStep{3})});
    FAIL();
  } catch (const FailedPreconditionError& e) {
    EXPECT_STREQ(e.what(), "Global step should be created to use StopAtStepHook.");
  }
}

TEST(StepCounterHook, WritesGlobalStepPerSec) {
  Model m;
  const std::string dir = testing::MakeTempDir("counter");
  StepCounterHook::Options options;
  options.every_n_steps = 5;
  options.output_dir = dir;
  auto counter = std::make_shared<StepCounterHook>(options);
  auto sess = m.Session({counter, std::make_shared<StopAtStepHook>(LastStep{20})});
  m.RunUntilStop(*sess);
  sess->Close();
  int rates = 0;
  for (const auto& e : ReadEvents(dir)) {
    for (const auto& v : e.summary().value()) {
      if (v.tag() == "global_step/sec") {
        ++rates;
        EXPECT_GT(v.simple_value(), 0.0f);
      }
    }
  }
  EXPECT_EQ(rates, 3);  // at 10, 15, 20: the first trigger (step 5) only arms the timer
  EXPECT_TRUE(counter->last_rate().has_value());
  EXPECT_THROW(StepCounterHook(StepCounterHook::Options{.every_n_steps = 5, .every_n_secs = 1.0}),
               InvalidArgumentError);
}

TEST(SummarySaverHook, WritesStartAndSummaries) {
  Model m;
  const std::string dir = testing::MakeTempDir("summaries");
  SummarySaverHookOptions options;
  options.every_n_steps = 3;
  options.output_dir = dir;
  options.summary_op = m.LossSummary();
  auto sess =
      m.Session({std::make_shared<SummarySaverHook>(options), std::make_shared<StopAtStepHook>(LastStep{7})});
  m.RunUntilStop(*sess);
  sess->Close();
  std::vector<int64_t> steps;
  int starts = 0;
  for (const auto& e : ReadEvents(dir)) {
    if (e.has_session_log() && e.session_log().status() == tensorflow::SessionLog::START) ++starts;
    for (const auto& v : e.summary().value()) {
      if (v.tag() == "train_loss") steps.push_back(e.step());
    }
  }
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 4, 7}));  // first step always, then every 3
  EXPECT_THROW(SummarySaverHook(SummarySaverHookOptions{.every_n_steps = 1}), InvalidArgumentError);
}

TEST(LoggingTensorHook, LogsEveryNIterationsAndAtEnd) {
  Model m;
  std::vector<std::string> lines;
  SetLogSink([&](LogSeverity, const std::string& line) { lines.push_back(line); });
  Output one, two;
  {
    auto as_default = m.graph.AsDefault();
    one = ops::Const(1.0f);
    two = ops::Const(int64_t{2});
  }
  {
    auto hook =
        std::make_shared<LoggingTensorHook>(std::map<std::string, Output>{{"z_two", two}, {"a_one", one}},
                                            LoggingTensorHook::Every{.every_n_steps = 2, .at_end = true});
    auto sess = m.Session({hook, std::make_shared<StopAtStepHook>(LastStep{4})});
    m.RunUntilStop(*sess);
    sess->Close();
  }
  SetLogSink(nullptr);
  std::vector<std::string> logged;
  for (const std::string& l : lines) {
    if (l.find("a_one = ") != std::string::npos) logged.push_back(l.substr(l.find("] ") + 2));
  }
  ASSERT_EQ(logged.size(), 3u);                  // iterations 0 and 2, and at end
  EXPECT_EQ(logged[0], "a_one = 1, z_two = 2");  // sorted tags; iteration 0 logs
  EXPECT_NE(logged[1].find(" sec)"), std::string::npos);
  EXPECT_THROW(LoggingTensorHook(LoggingTensorHook::Tensors{}, LoggingTensorHook::Every{}),
               InvalidArgumentError);
  EXPECT_THROW(LoggingTensorHook(LoggingTensorHook::Tensors{}, LoggingTensorHook::Every{.every_n_steps = 0}),
               InvalidArgumentError);
}

// The hooks built with their arguments as TF users write them, braced and through
// std::make_shared; the periods reach the hooks.
TEST(HookConstruction, TakesTensorFlowsArguments) {
  Model m;
  const std::string dir = testing::MakeTempDir("hook_construction");
  std::vector<std::string> lines;
  SetLogSink([&](LogSeverity, const std::string& line) { lines.push_back(line); });
  {
    LoggingTensorHook braced({{"loss", m.loss}}, 2);  // TF: LoggingTensorHook({"loss": loss}, 2)
    (void)braced;
    auto logging = std::make_shared<LoggingTensorHook>(LoggingTensorHook::Tensors{{"loss", m.loss}}, 2);
    auto from_map = std::make_shared<LoggingTensorHook>(std::map<std::string, Output>{{"loss", m.loss}}, 50);
    auto counter = std::make_shared<StepCounterHook>();
    auto counter_every_10 = std::make_shared<StepCounterHook>(10, dir);
    auto checkpoints =
        std::make_shared<CheckpointSaverHook>(dir, CheckpointSaverHookOptions{.every_n_steps = 3});
    auto summaries = std::make_shared<SummarySaverHook>(
        SummarySaverHookOptions{.every_n_steps = 2, .output_dir = dir, .summary_op = m.LossSummary()});
    auto stop = std::make_shared<StopAtStepHook>(NumSteps{4});
    auto nan = std::make_shared<NanTensorHook>(m.loss);
    auto sess = m.Session({logging, from_map, counter, counter_every_10, checkpoints, summaries, stop, nan});
    EXPECT_EQ(m.RunUntilStop(*sess), 4);
    sess->Close();
  }
  SetLogSink(nullptr);
  int logged = 0;
  for (const std::string& l : lines) logged += l.find("loss = ") != std::string::npos;
  EXPECT_EQ(logged, 2 + 1);  // every 2 iterations of 4 (0, 2), and the map one's iteration 0
  EXPECT_EQ(LatestCheckpoint(dir), JoinPath(dir, "model.ckpt-4"));
  testing::ExpectInvalidArgument([&] { LoggingTensorHook({{"loss", m.loss}}, 0); }, {"every_n_iter=0"});
  testing::ExpectInvalidArgument(
      [&] { StepCounterHook(StepCounterHook::Options{.every_n_steps = std::nullopt}); },
      {"Either every_secs or every_steps should be provided."});
}

// A hook's SessionRunArgs fetches an Operation as Session::Run does: it runs, and the
// hook's result for it is empty.
TEST(SessionRunArgs, FetchedOperationRunsAndHasAnEmptyResult) {
  Model m;
  class EvalOpHook : public SessionRunHook {
   public:
    explicit EvalOpHook(Operation op, Output loss) : op_(op), loss_(loss) {}
    std::optional<SessionRunArgs> BeforeRun(SessionRunContext&) override {
      return SessionRunArgs{.fetches = {op_, loss_}};
    }
    void AfterRun(SessionRunContext&, const SessionRunValues& values) override {
      ASSERT_EQ(values.results.size(), 2u);
      op_result_empty = !values.results[0].IsInitialized();
      loss_seen = values.results[1].scalar<float>();
    }
    bool op_result_empty = false;
    float loss_seen = 0;

   private:
    Operation op_;
    Output loss_;
  };
  auto hook = std::make_shared<EvalOpHook>(m.train_op, m.loss);
  auto sess = m.Session({hook});
  // The caller's own fetches mix an Operation and a tensor as well.
  std::vector<Tensor> out = sess->Run({}, {m.eval_op, m.loss});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].IsInitialized());
  EXPECT_FLOAT_EQ(out[1].scalar<float>(), 4.0f);
  EXPECT_TRUE(hook->op_result_empty);
  // The hook's fetched train_op ran: the next run reads the step it advanced.
  EXPECT_EQ(sess->Run({}, {m.step})[0].scalar<int64_t>(), 1);
  sess->Close();
}

TEST(NanTensorHook, FailsOrStops) {
  Model m;
  Output nan_loss;
  {
    auto as_default = m.graph.AsDefault();
    nan_loss = ops::RealDiv(ops::Const(0.0f), ops::Const(0.0f));
  }
  {
    auto sess = m.Session({std::make_shared<NanTensorHook>(nan_loss, true)});
    try {
      sess->Run({m.train_op});
      FAIL();
    } catch (const NanLossDuringTrainingError& e) {
      EXPECT_STREQ(e.what(), "NaN loss during training.");
    }
  }
  auto sess = m.Session({std::make_shared<NanTensorHook>(nan_loss, false)});
  EXPECT_EQ(m.RunUntilStop(*sess), 1);
}

TEST(FinalOpsAndFeedFnHooks, Work) {
  Model m;
  Output x;
  Output doubled;
  {
    auto as_default = m.graph.AsDefault();
    x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
    doubled = x * ops::Const(2.0f);
  }
  auto final_ops = std::make_shared<FinalOpsHook>(std::vector<Output>{m.step.value()});
  int calls = 0;
  auto feeder = std::make_shared<FeedFnHook>([&] {
    ++calls;
    return FeedList{{x, Tensor::Scalar<float>(static_cast<float>(calls))}};
  });
  auto sess = m.Session({final_ops, feeder, std::make_shared<StopAtStepHook>(LastStep{3})});
  float last = 0;
  while (!sess->ShouldStop()) last = sess->Run({}, {doubled}, {m.train_op})[0].scalar<float>();
  EXPECT_EQ(last, 6.0f);
  EXPECT_FALSE(final_ops->final_ops_values().has_value());
  sess->Close();
  ASSERT_TRUE(final_ops->final_ops_values().has_value());
  EXPECT_EQ((*final_ops->final_ops_values())[0].scalar<int64_t>(), 3);
}

TEST(GlobalStepWaiterHook, WaitsForTheStep) {
  Model m;
  // Another session on the same in-process target advances the step while the waiter waits.
  ChiefSessionCreatorOptions options;
  options.graph = &m.graph;
  options.master = "inproc://waiter_test";
  auto as_default = m.graph.AsDefault();
  MonitoredSession chief(std::make_shared<ChiefSessionCreator>(options), {});
  std::thread advancer([&] {
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      chief.Run({m.train_op});
    }
  });
  m.graph.Unfinalize();
  auto waiter = std::make_shared<GlobalStepWaiterHook>(5, std::chrono::milliseconds(10));
  WorkerSessionCreatorOptions worker;
  worker.graph = &m.graph;
  worker.master = "inproc://waiter_test";
  MonitoredSession sess(std::make_shared<WorkerSessionCreator>(worker), {waiter});
  const Tensor step = sess.Run({}, {m.step.value()})[0];
  advancer.join();
  EXPECT_GE(step.scalar<int64_t>(), 5);
}

class CountingListener : public CheckpointSaverListener {
 public:
  void Begin() override { ++begins; }
  void BeforeSave(SessionInterface&, int64_t step) override { before.push_back(step); }
  bool AfterSave(SessionInterface&, int64_t step) override {
    after.push_back(step);
    return step >= stop_at;
  }
  void End(SessionInterface&, int64_t step) override { end_step = step; }
  int begins = 0;
  std::vector<int64_t> before, after;
  int64_t end_step = -1;
  int64_t stop_at = 1 << 30;
};

TEST(CheckpointSaverHook, SavesAtCreationEveryNStepsAndAtEndWithListeners) {
  Model m;
  const std::string dir = testing::MakeTempDir("ckpt");
  auto listener = std::make_shared<CountingListener>();
  listener->stop_at = 6;
  CheckpointSaverHookOptions options;
  options.every_n_steps = 3;
  options.listeners = {listener};
  auto sess = m.Session({std::make_shared<CheckpointSaverHook>(dir, options)});
  EXPECT_EQ(m.RunUntilStop(*sess), 6);  // the listener asked to stop after saving step 6
  sess->Close();
  EXPECT_EQ(listener->begins, 1);
  EXPECT_EQ(listener->before, (std::vector<int64_t>{0, 3, 6}));  // no duplicate save at end
  EXPECT_EQ(listener->end_step, 6);
  EXPECT_TRUE(FileExists(JoinPath(dir, "model.ckpt-6.index")));
  EXPECT_TRUE(FileExists(JoinPath(dir, "graph.pbtxt")));
  EXPECT_THROW(CheckpointSaverHook(dir, CheckpointSaverHookOptions{.every_n_steps = 1, .every_n_secs = 1.0}),
               InvalidArgumentError);
}

// A session restored from the checkpoint of its step does not write that checkpoint again
// (TF does): its files keep their bytes and times, and the listeners hear of no save.
TEST(CheckpointSaverHook, ARestoredStepIsNotSavedAgainAtCreation) {
  Model m;
  const std::string dir = testing::MakeTempDir("ckpt_resave");
  {
    auto sess = m.Session(
        {std::make_shared<CheckpointSaverHook>(dir, CheckpointSaverHookOptions{.every_n_steps = 100}),
         std::make_shared<StopAtStepHook>(LastStep{4})});
    EXPECT_EQ(m.RunUntilStop(*sess), 4);
    sess->Close();
  }
  const std::string index = JoinPath(dir, "model.ckpt-4.index");
  const std::string before = ReadFileToString(index);
  struct stat first {};
  ASSERT_EQ(::stat(index.c_str(), &first), 0);
  auto listener = std::make_shared<CountingListener>();
  ChiefSessionCreatorOptions chief = m.Chief();
  chief.checkpoint_dir = dir;
  MonitoredSessionOptions options;
  auto as_default = m.graph.AsDefault();
  MonitoredSession sess(std::make_shared<ChiefSessionCreator>(chief),
                        {std::make_shared<CheckpointSaverHook>(
                            dir, CheckpointSaverHookOptions{.every_n_steps = 100, .listeners = {listener}})},
                        options);
  EXPECT_EQ(sess.Run({}, {m.step.value()})[0].scalar<int64_t>(), 4);
  EXPECT_TRUE(listener->before.empty());
  struct stat second {};
  ASSERT_EQ(::stat(index.c_str(), &second), 0);
  EXPECT_EQ(first.st_mtim.tv_nsec, second.st_mtim.tv_nsec);
  EXPECT_EQ(first.st_mtim.tv_sec, second.st_mtim.tv_sec);
  EXPECT_EQ(ReadFileToString(index), before);
}

TEST(CheckpointSaverHook, AsyncSavesReportEachCheckpointOnceWrittenAndEndWaits) {
  Model m;
  const std::string dir = testing::MakeTempDir("ckpt_async");
  auto listener = std::make_shared<CountingListener>();
  CheckpointSaverHookOptions options;
  options.every_n_steps = 3;
  options.listeners = {listener};
  options.async_save = true;
  auto sess = m.Session(
      {std::make_shared<CheckpointSaverHook>(dir, options), std::make_shared<StopAtStepHook>(LastStep{10})});
  EXPECT_EQ(m.RunUntilStop(*sess), 10);
  sess->Close();
  EXPECT_EQ(listener->before, (std::vector<int64_t>{0, 3, 6, 9, 10}));
  EXPECT_EQ(listener->after, (std::vector<int64_t>{0, 3, 6, 9, 10}));  // each once, in order
  EXPECT_EQ(listener->end_step, 10);
  EXPECT_EQ(LatestCheckpoint(dir), JoinPath(dir, "model.ckpt-10"));
  // Each checkpoint holds the model of its own step, though training went on during the write.
  for (int64_t step : {6, 9, 10}) {
    io::CheckpointReader reader(JoinPath(dir, StrCat("model.ckpt-", step)));
    EXPECT_EQ(reader.GetTensor("global_step").scalar<int64_t>(), step);
    EXPECT_FLOAT_EQ(reader.GetTensor("loss_var").scalar<float>(), 4.0f / static_cast<float>(1 << step));
  }
  EXPECT_TRUE(FileExists(JoinPath(dir, "model.ckpt-10.meta")));
}

TEST(ProfilerHook, WritesChromeTraces) {
  Model m;
  const std::string dir = testing::MakeTempDir("profile");
  auto sess =
      m.Session({std::make_shared<ProfilerHook>(ProfilerHook::Options{.every_n_steps = 2, .output_dir = dir}),
                 std::make_shared<StopAtStepHook>(LastStep{5})});
  m.RunUntilStop(*sess);
  sess->Close();
  std::vector<std::string> traces;
  for (const std::string& name : ListDirectory(dir)) {
    if (name.rfind("timeline-", 0) == 0) traces.push_back(name);
  }
  ASSERT_FALSE(traces.empty());
  EXPECT_EQ(traces[0], "timeline-2.json");  // never the first run; then every 2 steps, as TF
  const std::string json = ReadFileToString(JoinPath(dir, traces[0]));
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("global_step"), std::string::npos);
  EXPECT_NE(json.find("StopAtStepHook"), std::string::npos);  // hook timings ride along
}

// The number after `"key":` in the first JSON object that names `name`.
int64_t TraceNumber(const std::string& json, const std::string& name, const std::string& key) {
  const size_t at = json.find(StrCat("\"name\":\"", name, "\""));
  if (at == std::string::npos) return -1;
  const size_t end = json.find('\n', at);
  const size_t field = json.find(StrCat("\"", key, "\":"), at);
  if (field == std::string::npos || field > end) return -1;
  return std::stoll(json.substr(field + key.size() + 3));
}

TEST(ProfilerHook, ReportsTheTimeSpentInEachHook) {
  Model m;
  const std::string dir = testing::MakeTempDir("hook_times");
  class SlowHook : public SessionRunHook {
   public:
    void AfterRun(SessionRunContext&, const SessionRunValues&) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  };
  auto sess =
      m.Session({std::make_shared<SlowHook>(),
                 std::make_shared<ProfilerHook>(ProfilerHook::Options{.every_n_steps = 3, .output_dir = dir}),
                 std::make_shared<StopAtStepHook>(LastStep{6})});
  EXPECT_EQ(m.RunUntilStop(*sess), 6);
  const std::vector<HookTiming> timings = sess->hook_timings();
  ASSERT_EQ(timings.size(), 3u);
  EXPECT_EQ(timings[0].hook, "SlowHook");
  EXPECT_EQ(timings[0].calls, 12);  // BeforeRun and AfterRun of six runs
  EXPECT_GE(timings[0].total_nanos, 6 * 2'000'000);
  // Schedules: the profiler on runs 1 (arming), 3 and 6, StopAtStepHook on run 6 only.
  EXPECT_EQ(timings[1].calls, 6);
  EXPECT_EQ(timings[2].calls, 2);
  sess->Close();
  // The trace of step 6 shows the time so far: SlowHook's six AfterRuns (it runs first).
  const std::string json = ReadFileToString(JoinPath(dir, "timeline-6.json"));
  EXPECT_EQ(TraceNumber(json, "SlowHook", "calls"), 12);
  EXPECT_GE(TraceNumber(json, "SlowHook", "dur"), 6 * 2000);  // microseconds
  EXPECT_EQ(TraceNumber(json, "ProfilerHook", "calls"), 5);   // its AfterRun is under way
  EXPECT_EQ(TraceNumber(json, "StopAtStepHook", "calls"), 1);
}

TEST(ProgressBarHook, PlainLinesWithRateAndEta) {
  Model m;
  std::FILE* out = std::tmpfile();
  auto bar = std::make_shared<ProgressBarHook>(
      ProgressBarHook::Options{.last_step = 8,
                               .tensors = {{"loss", m.loss}},
                               .plain_interval = std::chrono::milliseconds(0),
                               .stream = out,
                               .force_tty = false});
  auto sess = m.Session({bar, std::make_shared<StopAtStepHook>(LastStep{8})});
  m.RunUntilStop(*sess);
  sess->Close();
  EXPECT_NE(bar->last_line().find("8/8 100%"), std::string::npos) << bar->last_line();
  EXPECT_NE(bar->last_line().find("loss "), std::string::npos);
  EXPECT_NE(bar->last_line().find("steps/s"), std::string::npos);
  std::rewind(out);
  char buffer[4096] = {};
  const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, out);
  EXPECT_GT(n, 0u);
  EXPECT_NE(std::string(buffer).find("ETA"), std::string::npos);
  std::fclose(out);
}

TEST(ProgressBarHook, RedrawsABarInPlaceOnATerminal) {
  Model m;
  std::FILE* out = std::tmpfile();
  auto bar = std::make_shared<ProgressBarHook>(ProgressBarHook::Options{
      .last_step = 4, .redraw_interval = std::chrono::milliseconds(0), .stream = out, .force_tty = true});
  auto sess = m.Session({bar, std::make_shared<StopAtStepHook>(LastStep{4})});
  m.RunUntilStop(*sess);
  sess->Close();
  std::rewind(out);
  char buffer[4096] = {};
  const std::string drawn(buffer, std::fread(buffer, 1, sizeof(buffer) - 1, out));
  std::fclose(out);
  EXPECT_EQ(drawn.rfind("\r[", 0), 0u) << drawn;       // redrawn from the line start
  EXPECT_NE(drawn.find("\033[K"), std::string::npos);  // clearing what was left
  EXPECT_NE(drawn.find("[==============================] 4/4 100%"), std::string::npos) << drawn;
  EXPECT_NE(drawn.find("done in"), std::string::npos);
  EXPECT_EQ(drawn.back(), '\n');  // only the final draw ends the line
  EXPECT_EQ(std::count(drawn.begin(), drawn.end(), '\n'), 1);
}

TEST(EarlyStoppingHook, StopsWhenTheMetricStopsImproving) {
  Model m;
  std::vector<double> metrics = {5, 4, 3, 3.5, 3.2, 3.1, 3.0};
  size_t next = 0;
  auto hook = std::make_shared<EarlyStoppingHook>(EarlyStoppingHook::Options{
      .metric = [&](SessionInterface&) { return metrics[std::min(next++, metrics.size() - 1)]; },
      .every_n_steps = 2,
      .patience = 3});
  auto sess = m.Session({hook});
  const int steps = m.RunUntilStop(*sess, 100);
  EXPECT_EQ(hook->best(), 3.0);
  EXPECT_EQ(hook->history().size(), 6u);  // 5 4 3 | 3.5 3.2 3.1 -> three without improvement
  EXPECT_EQ(steps, 12);
  EXPECT_THROW(EarlyStoppingHook(EarlyStoppingHook::Options{}), InvalidArgumentError);
}

}  // namespace
}  // namespace flowtrain::train
