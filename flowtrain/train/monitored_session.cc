#include "flowtrain/train/monitored_session.h"

#include <algorithm>
#include <thread>
#include <unordered_set>
#include <utility>

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/train/queue_runner.h"

namespace flowtrain::train {
namespace {

bool IsPreemption(const Error& e) { return e.code() == Code::kAborted || e.code() == Code::kUnavailable; }

// An exception raised inside a hook, carried through the session layers so that the
// recoverable layer never retries it; unwrapped before it reaches the caller.
struct HookFailure {
  std::exception_ptr error;
};

// The session hooks are handed: the raw session, noting the preemption errors its calls raise.
// A hook that saves a checkpoint or reads the global step on a lost parameter server fails
// with the session's preemption, not its own, so that failure is recovered like the step's.
class SessionSeenByHooks : public SessionInterface {
 public:
  explicit SessionSeenByHooks(SessionInterface* raw) : raw_(raw) {}

  std::vector<Tensor> Run(const FeedList& feeds, const FetchList& fetches,
                          const std::vector<Operation>& targets, const RunOptions* run_options,
                          RunMetadata* run_metadata) override {
    try {
      return raw_->Run(feeds, fetches, targets, run_options, run_metadata);
    } catch (const Error& e) {
      if (IsPreemption(e)) preempted_ = true;
      throw;
    }
  }
  Graph& graph() const override { return raw_->graph(); }
  void Close() override { raw_->Close(); }

  // Whether a call since the last TakePreemption() raised a preemption error.
  bool TakePreemption() { return std::exchange(preempted_, false); }

 private:
  SessionInterface* raw_;
  bool preempted_ = false;
};

// Calls a hook. What it raises is a HookFailure, never retried, unless it is a preemption
// error after the hook's own use of `session` raised one: then it propagates as the
// session's failure, which the recoverable layer recovers from.
template <typename Fn>
auto CallHook(SessionSeenByHooks* session, Fn&& fn) -> decltype(fn()) {
  if (session != nullptr) session->TakePreemption();
  try {
    return fn();
  } catch (const Error& e) {
    if (session != nullptr && session->TakePreemption() && IsPreemption(e)) throw;
    throw HookFailure{std::current_exception()};
  } catch (...) {
    throw HookFailure{std::current_exception()};
  }
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string FeedConflicts(const std::vector<Output>& conflicts) {
  std::vector<std::string> names;
  for (const Output& o : conflicts) names.push_back(StrCat("'", o.name(), "'"));
  return StrCat("[", StrJoin(names, ", "), "]");
}

}  // namespace

void StepContext::RequestStop() { throw StopIteration{}; }

struct MonitoredSession::Impl {
  // One underlying session with its coordinator: TF's _CoordinatedSession around a
  // _HookedSession around the raw session.
  struct Stack {
    std::unique_ptr<SessionInterface> raw;
    std::unique_ptr<SessionSeenByHooks> seen_by_hooks;  // `raw`, as hooks are handed it
    std::unique_ptr<Coordinator> coord;
    ThreadList threads;
    bool hooked_stop = false;
  };

  std::shared_ptr<SessionCreator> creator;
  HookList hooks;
  MonitoredSessionOptions options;
  bool should_recover = true;
  Graph* graph = nullptr;
  bool graph_was_finalized = false;
  int uncaught_at_construction = 0;

  std::unique_ptr<Stack> stack;
  bool closed = false;
  bool stop_requested = false;   // by a step function's RequestStop
  bool input_exhausted = false;  // a Run ended in OutOfRange under OnOutOfRange::kStop
  int recoveries = 0;
  int consecutive_failures = 0;
  std::vector<HookTiming> timings;
  std::vector<HookSchedule> schedules;  // each hook's NextDue(), refreshed after its calls
  bool step_scheduled = false;          // some schedule follows the global step
  int64_t iteration = 0;                // runs completed (SessionRunContext::iteration)

  Output global_step;  // the global step variable (its ref), when the graph has one
  // After the last run or session creation; nullopt when that run did not fetch it.
  std::optional<int64_t> last_global_step;

  // Scratch reused by every run, so a run allocates nothing of its own.
  std::vector<char> due;
  FetchList run_fetches;
  std::vector<std::pair<size_t, size_t>> fetch_ranges;

  // ---- _CoordinatedSessionCreator.create_session ----
  std::unique_ptr<Stack> CreateStack() {
    auto s = std::make_unique<Stack>();
    s->raw = creator->CreateSession();
    s->seen_by_hooks = std::make_unique<SessionSeenByHooks>(s->raw.get());
    // No exception code is a clean stop: even OutOfRange from a thread is re-raised.
    s->coord = std::make_unique<Coordinator>(std::vector<Code>{});
    try {
      if (!graph->GetCollectionItems(GraphKeys::kQueueRunners).empty()) {
        s->threads = StartQueueRunners(*s->raw, *s->coord);
      }
      for (auto& hook : hooks) {
        CallHook(s->seen_by_hooks.get(), [&] { hook->AfterCreateSession(*s->seen_by_hooks, *s->coord); });
      }
      last_global_step.reset();
      if (global_step) {
        try {
          last_global_step = s->raw->Run({}, {global_step}, {})[0].scalar<int64_t>();
        } catch (const Error& e) {
          if (IsPreemption(e)) throw;
          // Not readable (e.g. uninitialised by a custom creator): hooks scheduled on global
          // steps are then called until a run reports the step.
        }
      }
    } catch (...) {
      // The queue runners' threads must stop before the session they run in goes away.
      CloseStackQuietly(std::move(s));
      throw;
    }
    RefreshSchedules();
    return s;
  }

  // ---- hook schedules (beyond TF) ----
  void RefreshSchedule(size_t i) {
    schedules[i] = options.hook_scheduling == HookScheduling::kEveryRun
                       ? HookSchedule::EveryRun()
                       : CallHook(nullptr, [&] { return hooks[i]->NextDue(); });
  }

  void UpdateStepScheduled() {
    step_scheduled = std::any_of(schedules.begin(), schedules.end(),
                                 [](const HookSchedule& s) { return s.global_step.has_value(); });
  }

  void RefreshSchedules() {
    for (size_t i = 0; i < hooks.size(); ++i) RefreshSchedule(i);
    UpdateStepScheduled();
  }

  bool IsDue(const HookSchedule& s, std::optional<HookSchedule::Clock::time_point>& now) const {
    if (s.every_run) return true;
    // "+ 1": the step this run is expected to reach, TF's stale + 1 estimate.
    if (s.global_step && (!last_global_step || *last_global_step + 1 >= *s.global_step)) return true;
    if (s.iteration && iteration >= *s.iteration) return true;
    if (s.time) {
      if (!now) now = HookSchedule::Clock::now();
      if (*now >= *s.time) return true;
    }
    return false;
  }

  // ---- _RecoverableSession._create_session, with bounded retries and backoff ----
  std::unique_ptr<Stack> CreateStackWithRetry() {
    while (true) {
      try {
        return CreateStack();
      } catch (const Error& e) {
        if (!should_recover || !IsPreemption(e)) throw;
        WaitBeforeRetry(e);
      } catch (const HookFailure& failure) {
        std::rethrow_exception(failure.error);
      }
    }
  }

  void WaitBeforeRetry(const Error& e) {
    ++consecutive_failures;
    const RecoveryOptions& r = options.recovery;
    if (r.max_consecutive_failures >= 0 && consecutive_failures > r.max_consecutive_failures) {
      FT_LOG(ERROR) << "Giving up after " << consecutive_failures - 1
                    << " consecutive recoveries: " << e.ToString();
      ThrowError(e.code(), e.what());
    }
    FT_LOG(INFO) << "An error was raised while a session was being created or run. This may be "
                    "due to a preemption in a connected worker or parameter server. A new "
                    "session will be created. Error: "
                 << e.ToString();
    double backoff_ms = static_cast<double>(r.initial_backoff.count());
    for (int i = 1; i < consecutive_failures; ++i) backoff_ms *= r.backoff_multiplier;
    backoff_ms = std::min(backoff_ms, static_cast<double>(r.max_backoff.count()));
    if (backoff_ms > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(backoff_ms * 1000)));
    }
  }

  void EnsureStack() {
    if (stack == nullptr) stack = CreateStackWithRetry();
  }

  // Replaces a session that failed with a preemption error, and tells the hooks.
  void Recover(const Error& e) {
    CloseStackQuietly();
    WaitBeforeRetry(e);
    ++recoveries;
    RecoveryInfo info;
    info.attempt = recoveries;
    info.error = e.ToString();
    info.global_step_before = last_global_step;
    stack = CreateStackWithRetry();
    info.global_step_after = last_global_step;  // read by CreateStack on the new session
    if (info.steps_rolled_back()) {
      FT_LOG(WARNING) << "Session recovered from the latest checkpoint; " << *info.steps_rolled_back()
                      << " step(s) rolled back (global step " << *info.global_step_before << " -> "
                      << *info.global_step_after << ")";
    }
    for (auto& hook : hooks) CallHook(nullptr, [&] { hook->AfterRecovery(info); });
    RefreshSchedules();
  }

  // ---- _HookedSession.run, calling only the hooks that are due ----
  std::vector<Tensor> HookedRun(const FeedList& feeds, const FetchList& fetches,
                                const std::vector<Operation>& targets, const RunOptions* run_options,
                                RunMetadata* run_metadata) {
    Stack& s = *stack;
    if (s.hooked_stop) FailedPrecondition("Run called even after should_stop requested.");
    bool any_due = false;
    std::optional<HookSchedule::Clock::time_point> now;
    for (size_t i = 0; i < hooks.size(); ++i) {
      due[i] = IsDue(schedules[i], now);
      any_due = any_due || due[i];
    }
    if (!any_due) return RunWithoutHooks(feeds, fetches, targets, run_options, run_metadata);

    SessionRunContext context(SessionRunArgs{fetches, targets, feeds, std::nullopt}, s.seen_by_hooks.get(),
                              iteration, last_global_step);
    RunOptions merged = run_options != nullptr ? *run_options : RunOptions{};
    run_fetches = fetches;
    std::vector<Operation> hook_targets;
    FeedList hook_feeds;
    for (size_t i = 0; i < hooks.size(); ++i) {
      fetch_ranges[i] = {0, 0};
      if (!due[i]) continue;
      const int64_t start = NowNanos();
      std::optional<SessionRunArgs> args =
          CallHook(s.seen_by_hooks.get(), [&] { return hooks[i]->BeforeRun(context); });
      timings[i].total_nanos += NowNanos() - start;
      ++timings[i].calls;
      if (!args) continue;
      fetch_ranges[i] = {run_fetches.size(), args->fetches.size()};
      run_fetches.Append(args->fetches);
      hook_targets.insert(hook_targets.end(), args->targets.begin(), args->targets.end());
      std::vector<Output> conflicts;
      for (const auto& [tensor, value] : args->feeds) {
        for (const auto& [existing, unused] : hook_feeds) {
          if (existing == tensor) conflicts.push_back(tensor);
        }
      }
      if (!conflicts.empty()) {
        InvalidArgument("Same tensor is fed by two hooks. Conflict(s): ", FeedConflicts(conflicts));
      }
      hook_feeds.insert(hook_feeds.end(), args->feeds.begin(), args->feeds.end());
      if (args->options) {
        merged.trace_level = std::max(merged.trace_level, args->options->trace_level);
        merged.timeout_in_ms = std::max(merged.timeout_in_ms, args->options->timeout_in_ms);
      }
    }
    FeedList merged_feeds;
    if (!hook_feeds.empty()) {
      std::vector<Output> conflicts;
      for (const auto& [tensor, value] : hook_feeds) {
        for (const auto& [user, unused] : feeds) {
          if (user == tensor) conflicts.push_back(tensor);
        }
      }
      if (!conflicts.empty()) {
        InvalidArgument("Same tensor is fed by a SessionRunHook and user. Conflict(s): ",
                        FeedConflicts(conflicts));
      }
      merged_feeds.reserve(feeds.size() + hook_feeds.size());
      merged_feeds.insert(merged_feeds.end(), feeds.begin(), feeds.end());
      merged_feeds.insert(merged_feeds.end(), hook_feeds.begin(), hook_feeds.end());
    }
    std::vector<Operation> merged_targets;
    if (!hook_targets.empty()) {
      merged_targets.reserve(targets.size() + hook_targets.size());
      merged_targets.insert(merged_targets.end(), targets.begin(), targets.end());
      merged_targets.insert(merged_targets.end(), hook_targets.begin(), hook_targets.end());
    }
    const size_t global_step_index = run_fetches.size();
    if (global_step) run_fetches.push_back(global_step);
    RunMetadata local_metadata;
    RunMetadata* metadata = run_metadata != nullptr ? run_metadata : &local_metadata;
    std::vector<Tensor> outputs =
        s.raw->Run(hook_feeds.empty() ? feeds : merged_feeds, run_fetches,
                   hook_targets.empty() ? targets : merged_targets, &merged, metadata);
    if (global_step) last_global_step = outputs[global_step_index].scalar<int64_t>();
    ++iteration;
    SessionRunValues values;
    values.options = merged;
    values.run_metadata = metadata;
    values.hook_timings = &timings;
    for (size_t i = 0; i < hooks.size(); ++i) {
      if (!due[i]) continue;
      const auto [begin, count] = fetch_ranges[i];
      values.results.assign(outputs.begin() + begin, outputs.begin() + begin + count);
      const int64_t start = NowNanos();
      CallHook(s.seen_by_hooks.get(), [&] { hooks[i]->AfterRun(context, values); });
      timings[i].total_nanos += NowNanos() - start;
      ++timings[i].calls;
      RefreshSchedule(i);
    }
    UpdateStepScheduled();
    s.hooked_stop = s.hooked_stop || context.stop_requested();
    outputs.resize(fetches.size());
    return outputs;
  }

  // A run no hook is due for: the caller's arguments as they are, plus the global step while
  // some hook's schedule follows it.
  std::vector<Tensor> RunWithoutHooks(const FeedList& feeds, const FetchList& fetches,
                                      const std::vector<Operation>& targets, const RunOptions* run_options,
                                      RunMetadata* run_metadata) {
    SessionInterface& raw = *stack->raw;
    if (!global_step || !step_scheduled) {
      std::vector<Tensor> outputs = raw.Run(feeds, fetches, targets, run_options, run_metadata);
      last_global_step.reset();
      ++iteration;
      return outputs;
    }
    run_fetches = fetches;
    run_fetches.push_back(global_step);
    std::vector<Tensor> outputs = raw.Run(feeds, run_fetches, targets, run_options, run_metadata);
    last_global_step = outputs.back().scalar<int64_t>();
    outputs.pop_back();
    ++iteration;
    return outputs;
  }

  // ---- _CoordinatedSession.run ----
  std::vector<Tensor> CoordinatedRun(const FeedList& feeds, const FetchList& fetches,
                                     const std::vector<Operation>& targets, const RunOptions* run_options,
                                     RunMetadata* run_metadata) {
    try {
      return HookedRun(feeds, fetches, targets, run_options, run_metadata);
    } catch (const HookFailure&) {
      throw;
    } catch (const Error& e) {
      if (IsPreemption(e)) throw;
      // A thread's preemption error is the root cause; any other recorded error loses to
      // the error of the run itself.
      try {
        stack->coord->RaiseRequestedException();
      } catch (const Error& root) {
        if (IsPreemption(root)) throw;
      } catch (...) {
      }
      throw;
    }
  }

  // ---- _RecoverableSession.run ----
  std::vector<Tensor> RecoverableRun(const FeedList& feeds, const FetchList& fetches,
                                     const std::vector<Operation>& targets, const RunOptions* run_options,
                                     RunMetadata* run_metadata) {
    while (true) {
      EnsureStack();
      try {
        std::vector<Tensor> out = CoordinatedRun(feeds, fetches, targets, run_options, run_metadata);
        consecutive_failures = 0;
        return out;
      } catch (const Error& e) {
        if (!should_recover || !IsPreemption(e)) throw;
        Recover(e);
      }
    }
  }

  // ---- _CoordinatedSession._check_stop ----
  bool CoordinatorCheckStop() {
    stack->coord->RaiseRequestedException();
    return stack->coord->ShouldStop();
  }

  // ---- _CoordinatedSession.close (and the raw session's) ----
  void CloseStack() { CloseStack(std::move(stack)); }

  void CloseStack(std::unique_ptr<Stack> s) {
    if (s == nullptr) return;
    s->coord->RequestStop();
    std::exception_ptr join_error;
    try {
      s->coord->Join(s->threads, options.stop_grace_period, /*ignore_live_threads=*/true);
    } catch (...) {
      join_error = std::current_exception();
    }
    try {
      s->raw->Close();
    } catch (const Error& e) {
      if (IsPreemption(e)) {
        FT_LOG(WARNING) << "An error occurred while closing the session: " << e.ToString();
      }
      // Other errors while closing are silenced: the join above already reported.
    }
    if (join_error != nullptr) std::rethrow_exception(join_error);
  }

  void CloseStackQuietly() { CloseStackQuietly(std::move(stack)); }

  void CloseStackQuietly(std::unique_ptr<Stack> s) {
    try {
      CloseStack(std::move(s));
    } catch (const std::exception& e) {
      FT_LOG(WARNING) << "Error while closing a failed session: " << e.what();
    }
  }
};

MonitoredSession::MonitoredSession(std::shared_ptr<SessionCreator> creator, HookList hooks,
                                   MonitoredSessionOptions options)
    : MonitoredSession(std::move(creator), std::move(hooks), std::move(options), true) {}

MonitoredSession::MonitoredSession(std::shared_ptr<SessionCreator> creator, HookList hooks,
                                   MonitoredSessionOptions options, bool should_recover)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.uncaught_at_construction = std::uncaught_exceptions();
  m.creator = creator != nullptr ? std::move(creator) : std::make_shared<ChiefSessionCreator>();
  m.hooks = std::move(hooks);
  m.options = std::move(options);
  m.should_recover = should_recover;
  m.graph = &m.creator->graph();
  m.graph_was_finalized = m.graph->finalized();
  for (const auto& hook : m.hooks) {
    if (hook == nullptr) InvalidArgument("MonitoredSession: a hook is null");
    m.timings.push_back(HookTiming{hook->name(), 0, 0});
  }
  m.schedules.assign(m.hooks.size(), HookSchedule::EveryRun());
  m.due.assign(m.hooks.size(), 0);
  m.fetch_ranges.assign(m.hooks.size(), {0, 0});
  // Hooks build their ops (e.g. the global step read) into the session's graph.
  auto as_default = m.graph->AsDefault();
  for (auto& hook : m.hooks) hook->Begin();
  const std::vector<Variable> steps = m.graph->GetCollection<Variable>(GraphKeys::kGlobalStep);
  if (steps.size() == 1 && steps[0].dtype() == DT_INT64) m.global_step = steps[0].ref();
  try {
    if (should_recover) {
      m.stack = m.CreateStackWithRetry();
    } else {
      m.stack = m.CreateStack();
    }
  } catch (const HookFailure& failure) {
    std::rethrow_exception(failure.error);
  }
}

MonitoredSession::MonitoredSession(MonitoredSession&&) noexcept = default;

MonitoredSession::~MonitoredSession() {
  if (impl_ == nullptr || impl_->closed) return;
  // While an exception unwinds, TF's __exit__ closes without running hooks' End.
  const bool unwinding = std::uncaught_exceptions() > impl_->uncaught_at_construction;
  try {
    if (unwinding) {
      impl_->closed = true;
      impl_->CloseStackQuietly();
      if (!impl_->graph_was_finalized) impl_->graph->Unfinalize();
    } else {
      Close();
    }
  } catch (const std::exception& e) {
    FT_LOG(ERROR) << "Error while closing a MonitoredSession in its destructor: " << e.what();
  }
}

std::vector<Tensor> MonitoredSession::Run(const FeedList& feeds, const FetchList& fetches,
                                          const std::vector<Operation>& targets,
                                          const RunOptions* run_options, RunMetadata* run_metadata) {
  Impl& m = *impl_;
  if (m.closed) FailedPrecondition("Run called on a closed MonitoredSession.");
  if (m.input_exhausted) {
    OutOfRange("Run called after the MonitoredSession stopped at the end of its input.");
  }
  try {
    try {
      if (m.should_recover) return m.RecoverableRun(feeds, fetches, targets, run_options, run_metadata);
      return m.CoordinatedRun(feeds, fetches, targets, run_options, run_metadata);
    } catch (const HookFailure& failure) {
      std::rethrow_exception(failure.error);
    }
  } catch (const OutOfRangeError&) {
    if (m.options.on_out_of_range == OnOutOfRange::kThrow) throw;
  }
  // TF's `with` block: the input is exhausted, a clean end of training.
  StopAtEndOfInput();
  return std::vector<Tensor>(fetches.size());
}

std::vector<Tensor> MonitoredSession::RunWithHooksForStepFn(const FeedList& feeds, const FetchList& fetches,
                                                            const std::vector<Operation>& targets) {
  Impl& m = *impl_;
  m.EnsureStack();
  try {
    return m.CoordinatedRun(feeds, fetches, targets, nullptr, nullptr);
  } catch (const HookFailure& failure) {
    std::rethrow_exception(failure.error);
  }
}

bool MonitoredSession::RecoverFromStepFnError(const Error& error) {
  Impl& m = *impl_;
  if (!m.should_recover || !IsPreemption(error)) return false;
  try {
    m.Recover(error);
  } catch (const HookFailure& failure) {
    std::rethrow_exception(failure.error);
  }
  return true;
}

SessionInterface* MonitoredSession::CurrentRawSession() {
  Impl& m = *impl_;
  if (m.closed) FailedPrecondition("The MonitoredSession is closed.");
  try {
    m.EnsureStack();
  } catch (const HookFailure& failure) {
    std::rethrow_exception(failure.error);
  }
  return m.stack->raw.get();
}

void MonitoredSession::MarkStopRequested() { impl_->stop_requested = true; }

bool MonitoredSession::StopAtEndOfInput() {
  if (impl_->options.on_out_of_range == OnOutOfRange::kThrow) return false;
  impl_->input_exhausted = true;
  return true;
}

bool MonitoredSession::ShouldStop() {
  Impl& m = *impl_;
  if (m.closed || m.stop_requested || m.input_exhausted || m.stack == nullptr) return true;
  try {
    if (m.CoordinatorCheckStop()) return true;
  } catch (const Error& e) {
    if (!m.should_recover || !IsPreemption(e)) return true;
    try {
      m.Recover(e);
    } catch (...) {
      return true;
    }
    return false;
  } catch (...) {
    return true;
  }
  return m.stack->hooked_stop;
}

void MonitoredSession::Close() {
  Impl& m = *impl_;
  if (m.closed) return;
  m.closed = true;
  const bool finished = m.stack != nullptr && (m.stop_requested || m.input_exhausted || m.stack->hooked_stop);
  std::exception_ptr end_error;
  if (m.stack != nullptr) {
    try {
      for (auto& hook : m.hooks) hook->End(*m.stack->seen_by_hooks);
    } catch (...) {
      end_error = std::current_exception();
    }
  }
  std::exception_ptr close_error;
  try {
    m.CloseStack();
  } catch (...) {
    close_error = std::current_exception();
  }
  if (!m.graph_was_finalized) m.graph->Unfinalize();
  if (close_error != nullptr) std::rethrow_exception(close_error);
  if (end_error != nullptr) std::rethrow_exception(end_error);
  if (finished && m.options.on_finished) m.options.on_finished();
}

bool MonitoredSession::closed() const { return impl_->closed; }

Graph& MonitoredSession::graph() const { return *impl_->graph; }

std::vector<HookTiming> MonitoredSession::hook_timings() const { return impl_->timings; }

int MonitoredSession::recoveries() const { return impl_->recoveries; }

// ---- SingularMonitoredSession ----

SingularMonitoredSession::SingularMonitoredSession(ChiefSessionCreatorOptions creator_options, HookList hooks,
                                                   MonitoredSessionOptions options)
    : MonitoredSession(std::make_shared<ChiefSessionCreator>(std::move(creator_options)), std::move(hooks),
                       std::move(options), /*should_recover=*/false) {}

bool SingularMonitoredSession::ShouldStop() {
  Impl& m = *impl_;
  if (m.closed || m.stop_requested || m.input_exhausted || m.stack == nullptr) return true;
  if (m.CoordinatorCheckStop()) return true;  // re-throws a thread's error
  return m.stack->hooked_stop;
}

SessionInterface& SingularMonitoredSession::raw_session() const {
  if (impl_->stack == nullptr) FailedPrecondition("The session is closed.");
  return *impl_->stack->raw;
}

}  // namespace flowtrain::train
