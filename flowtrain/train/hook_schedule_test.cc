// Tests of hook schedules (beyond TF): a hook that is not due is neither called nor adds a
// fetch, the built-in hooks fire on the same steps as with TF's every-run calls, and
// HookScheduling::kEveryRun calls every hook around every run.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/early_stopping_hook.h"
#include "flowtrain/train/hooks_test_model.h"
#include "flowtrain/train/monitored_session.h"
#include "flowtrain/train/profiler_hook.h"
#include "flowtrain/train/session_creator.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using Model = HooksTestModel;

// A session that records how many tensors each Run fetched.
class FetchCountingSession : public SessionInterface {
 public:
  FetchCountingSession(std::unique_ptr<SessionInterface> inner, std::vector<size_t>* fetches)
      : inner_(std::move(inner)), fetches_(fetches) {}
  std::vector<Tensor> Run(const FeedList& feeds, const FetchList& fetches,
                          const std::vector<Operation>& targets, const RunOptions* options,
                          RunMetadata* metadata) override {
    fetches_->push_back(fetches.size());
    return inner_->Run(feeds, fetches, targets, options, metadata);
  }
  Graph& graph() const override { return inner_->graph(); }
  void Close() override { inner_->Close(); }

 private:
  std::unique_ptr<SessionInterface> inner_;
  std::vector<size_t>* fetches_;
};

class FetchCountingCreator : public SessionCreator {
 public:
  FetchCountingCreator(Model& m, std::vector<size_t>* fetches)
      : m_(m), fetches_(fetches), chief_(std::make_shared<ChiefSessionCreator>(m.Chief())) {}
  std::unique_ptr<SessionInterface> CreateSession() override {
    return std::make_unique<FetchCountingSession>(chief_->CreateSession(), fetches_);
  }
  Graph& graph() const override { return m_.graph; }

 private:
  Model& m_;
  std::vector<size_t>* fetches_;
  std::shared_ptr<ChiefSessionCreator> chief_;
};

// Counts its calls and the runs it saw; its schedule is whatever `next_due` returns.
class CountingHook : public SessionRunHook {
 public:
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override {
    ++before;
    iterations.push_back(context.iteration());
    global_steps.push_back(context.global_step().value_or(-1));
    if (fetch) return SessionRunArgs{{fetch}, {}, {}, std::nullopt};
    return std::nullopt;
  }
  void AfterRun(SessionRunContext&, const SessionRunValues&) override {
    ++after;
    if (advance) advance();
  }
  void End(SessionInterface&) override { ++ends; }
  HookSchedule NextDue() const override { return next_due; }

  HookSchedule next_due = HookSchedule::EveryRun();
  std::function<void()> advance;
  Output fetch;
  int before = 0, after = 0, ends = 0;
  std::vector<int64_t> iterations, global_steps;
};

TEST(HookSchedule, AHookThatIsNotDueIsNotCalledAndAddsNoFetch) {
  Model m;
  std::vector<size_t> fetches;
  auto every_ten = std::make_shared<CountingHook>();
  every_ten->fetch = m.loss;
  every_ten->next_due = HookSchedule{.global_step = 10};
  every_ten->advance = [&] { every_ten->next_due.global_step = *every_ten->next_due.global_step + 10; };
  MonitoredSession sess(std::make_shared<FetchCountingCreator>(m, &fetches), {every_ten});
  const size_t runs_at_creation = fetches.size();
  for (int i = 0; i < 30; ++i) sess.Run({m.train_op});
  EXPECT_EQ(every_ten->before, 3);
  EXPECT_EQ(every_ten->after, 3);
  // Called on the runs that bring the step to 10, 20 and 30: the step before them is 9, 19, 29.
  EXPECT_EQ(every_ten->global_steps, (std::vector<int64_t>{9, 19, 29}));
  EXPECT_EQ(every_ten->iterations, (std::vector<int64_t>{9, 19, 29}));
  // Each run fetches the global step; only the three due runs add the hook's fetch.
  const std::vector<size_t> runs(fetches.begin() + runs_at_creation, fetches.end());
  ASSERT_EQ(runs.size(), 30u);
  EXPECT_EQ(std::count(runs.begin(), runs.end(), 1u), 27);
  EXPECT_EQ(std::count(runs.begin(), runs.end(), 2u), 3);
  EXPECT_EQ(sess.hook_timings()[0].calls, 6);
  sess.Close();
  EXPECT_EQ(every_ten->ends, 1);
}

TEST(HookSchedule, RunsNoHookNeedsTheGlobalStepForFetchNothingExtra) {
  Model m;
  std::vector<size_t> fetches;
  auto timed = std::make_shared<CountingHook>();
  timed->next_due = HookSchedule{.time = HookSchedule::Clock::now() + std::chrono::hours(1)};
  auto never = std::make_shared<CountingHook>();
  never->next_due = HookSchedule::Never();
  MonitoredSession sess(std::make_shared<FetchCountingCreator>(m, &fetches), {timed, never});
  const size_t runs_at_creation = fetches.size();
  for (int i = 0; i < 5; ++i) sess.Run({m.train_op});
  EXPECT_EQ(std::vector<size_t>(fetches.begin() + runs_at_creation, fetches.end()),
            std::vector<size_t>(5, 0));
  EXPECT_EQ(timed->before + never->before, 0);
}

TEST(HookSchedule, IterationTimeAndNever) {
  Model m;
  auto every_four = std::make_shared<CountingHook>();
  every_four->next_due = HookSchedule{.iteration = 0};
  every_four->advance = [&] { every_four->next_due.iteration = *every_four->next_due.iteration + 4; };
  auto timed = std::make_shared<CountingHook>();
  const auto start = HookSchedule::Clock::now();
  const auto due_time = start + std::chrono::seconds(1);
  timed->next_due = HookSchedule{.time = due_time};
  auto never = std::make_shared<CountingHook>();
  never->next_due = HookSchedule::Never();
  auto sess = m.Session({every_four, timed, never});
  for (int i = 0; i < 10; ++i) sess->Run({m.eval_op});  // runs that do not move the step
  EXPECT_EQ(every_four->iterations, (std::vector<int64_t>{0, 4, 8}));
  // Not called before its time (unless a very loaded machine took a second for ten runs).
  if (HookSchedule::Clock::now() < due_time) {
    EXPECT_EQ(timed->before, 0);
  }
  std::this_thread::sleep_until(due_time);
  const int before = timed->before;
  sess->Run({m.eval_op});
  EXPECT_EQ(timed->before, before + 1);  // due on every run once its time has come
  EXPECT_EQ(never->before, 0);
  sess->Close();
  EXPECT_EQ(never->ends, 1);  // End is not scheduled
}

TEST(HookSchedule, EveryRunModeCallsEveryHookAroundEveryRun) {
  Model m;
  auto every_ten = std::make_shared<CountingHook>();
  every_ten->next_due = HookSchedule{.global_step = 10};
  auto never = std::make_shared<CountingHook>();
  never->next_due = HookSchedule::Never();
  auto sess = m.Session({every_ten, never}, HookScheduling::kEveryRun);
  for (int i = 0; i < 12; ++i) sess->Run({m.train_op});
  EXPECT_EQ(every_ten->before, 12);
  EXPECT_EQ(every_ten->after, 12);
  EXPECT_EQ(never->before, 12);
  EXPECT_EQ(every_ten->iterations.back(), 11);
  EXPECT_EQ(every_ten->global_steps.back(), 11);
}

// What the built-in hooks did in one training run.
struct Observed {
  std::vector<int64_t> checkpoints, summaries, rates, evaluations;
  std::vector<float> logged;
  std::vector<std::string> timelines;
  int steps = 0;
  int64_t final_step = -1;
  std::map<std::string, int64_t> calls;  // per hook
};

class SaveRecorder : public CheckpointSaverListener {
 public:
  explicit SaveRecorder(std::vector<int64_t>* steps) : steps_(steps) {}
  void BeforeSave(SessionInterface&, int64_t step) override { steps_->push_back(step); }

 private:
  std::vector<int64_t>* steps_;
};

Observed Train(HookScheduling scheduling) {
  Model m;
  Observed seen;
  const std::string dir = testing::MakeTempDir("schedule");
  CheckpointSaverHookOptions checkpoints;
  checkpoints.every_n_steps = 7;
  checkpoints.listeners = {std::make_shared<SaveRecorder>(&seen.checkpoints)};
  SummarySaverHookOptions summaries;
  summaries.every_n_steps = 5;
  summaries.output_dir = dir;
  summaries.summary_op = m.LossSummary();
  StepCounterHook::Options counter;
  counter.every_n_steps = 6;
  counter.output_dir = dir;
  auto final_ops = std::make_shared<FinalOpsHook>(std::vector<Output>{m.step.value()});
  HookList hooks = {
      std::make_shared<CheckpointSaverHook>(dir, checkpoints),
      std::make_shared<SummarySaverHook>(summaries),
      std::make_shared<StepCounterHook>(counter),
      std::make_shared<LoggingTensorHook>(LoggingTensorHook::Tensors{{"loss", m.loss}},
                                          LoggingTensorHook::Every{.every_n_steps = 4},
                                          [&](const std::vector<std::pair<std::string, Tensor>>& values) {
                                            seen.logged.push_back(values[0].second.scalar<float>());
                                            return std::string("logged");
                                          }),
      std::make_shared<ProfilerHook>(ProfilerHook::Options{.every_n_steps = 8, .output_dir = dir}),
      std::make_shared<EarlyStoppingHook>(EarlyStoppingHook::Options{
          .metric =
              [&](SessionInterface& s) {
                seen.evaluations.push_back(s.Run({}, {m.step.value()}, {})[0].scalar<int64_t>());
                return 1.0;
              },
          .every_n_steps = 9,
          .patience = 100}),
      std::make_shared<NanTensorHook>(m.loss),
      final_ops,
      std::make_shared<StopAtStepHook>(LastStep{40})};
  {
    auto sess = m.Session(hooks, scheduling);
    seen.steps = m.RunUntilStop(*sess);
    sess->Close();
    for (const HookTiming& t : sess->hook_timings()) seen.calls[t.hook] = t.calls;
  }
  seen.final_step = (*final_ops->final_ops_values())[0].scalar<int64_t>();
  for (const tensorflow::Event& e : ReadEvents(dir)) {
    for (const auto& v : e.summary().value()) {
      if (v.tag() == "train_loss") seen.summaries.push_back(e.step());
      if (v.tag() == "global_step/sec") seen.rates.push_back(e.step());
    }
  }
  for (const std::string& name : ListDirectory(dir)) {
    if (name.rfind("timeline-", 0) == 0) seen.timelines.push_back(name);
  }
  std::sort(seen.timelines.begin(), seen.timelines.end());
  return seen;
}

TEST(HookSchedule, BuiltInHooksFireOnTheSameStepsAsWithEveryRunCalls) {
  const Observed tf = Train(HookScheduling::kEveryRun);
  const Observed scheduled = Train(HookScheduling::kWhenDue);
  // TF's trigger points (stale + 1 estimates, re-read when they trigger).
  EXPECT_EQ(tf.steps, 40);
  EXPECT_EQ(tf.checkpoints, (std::vector<int64_t>{0, 7, 14, 21, 28, 35, 40}));
  EXPECT_EQ(tf.summaries, (std::vector<int64_t>{1, 6, 11, 16, 21, 26, 31, 36}));
  EXPECT_EQ(tf.rates, (std::vector<int64_t>{7, 13, 19, 25, 31, 37}));  // armed at step 1
  EXPECT_EQ(tf.logged.size(), 10u);                                    // iterations 0, 4, ..., 36
  EXPECT_EQ(tf.timelines,
            (std::vector<std::string>{"timeline-16.json", "timeline-24.json", "timeline-32.json",
                                      "timeline-40.json", "timeline-8.json"}));  // armed at 0
  EXPECT_EQ(tf.evaluations, (std::vector<int64_t>{9, 18, 27, 36}));
  EXPECT_EQ(tf.final_step, 40);
  // The same with schedules.
  EXPECT_EQ(scheduled.steps, tf.steps);
  EXPECT_EQ(scheduled.checkpoints, tf.checkpoints);
  EXPECT_EQ(scheduled.summaries, tf.summaries);
  EXPECT_EQ(scheduled.rates, tf.rates);
  EXPECT_EQ(scheduled.logged, tf.logged);
  EXPECT_EQ(scheduled.timelines, tf.timelines);
  EXPECT_EQ(scheduled.evaluations, tf.evaluations);
  EXPECT_EQ(scheduled.final_step, tf.final_step);
  // With far fewer calls: twice per run in TF's way, about twice per firing with schedules.
  for (const auto& [hook, calls] : tf.calls) {
    EXPECT_EQ(calls, 2 * tf.steps) << hook;
    const int64_t with_schedule = scheduled.calls.at(hook);
    if (hook == "NanTensorHook") {
      EXPECT_EQ(with_schedule, calls) << hook;  // it checks every loss
    } else if (hook == "FinalOpsHook") {
      EXPECT_EQ(with_schedule, 0) << hook;
    } else {
      EXPECT_LE(with_schedule, calls / 4) << hook;
    }
  }
}

TEST(HookSchedule, StepCounterStillWarnsWhenTheGlobalStepDoesNotMove) {
  Model m;
  std::vector<std::string> warnings;
  SetLogSink([&](LogSeverity severity, const std::string& line) {
    if (severity == LogSeverity::kWarning && line.find("has not been increased") != std::string::npos) {
      warnings.push_back(line);
    }
  });
  StepCounterHook::Options counter;
  counter.every_n_steps = 100;
  auto hook = std::make_shared<StepCounterHook>(counter);
  {
    auto sess = m.Session({hook});
    for (int i = 0; i < 250; ++i) sess->Run({m.eval_op});
    EXPECT_LE(sess->hook_timings()[0].calls, 2 * 3);  // runs 0, 100 and 200
    sess->Close();
  }
  SetLogSink(nullptr);
  EXPECT_EQ(warnings.size(), 2u);
}

}  // namespace
}  // namespace flowtrain::train
