// MonitoredSession: a session that takes care of session creation (initialising or restoring
// the model), hooks, queue-runner threads and — beyond a plain Session — recovery from a lost
// parameter server or worker, as TF's tf.train.MonitoredSession. Its layers are TF's:
//
//   MonitoredSession
//     └ recoverable session   re-creates the session on Aborted/Unavailable and re-runs the step
//        └ coordinated session   Coordinator for threads; their errors surface
//           └ hooked session        hooks' fetches/feeds merged into every Run
//              └ Session            made by a SessionCreator (ChiefSessionCreator by default)
//
//   train::MonitoredSession sess(std::make_shared<train::ChiefSessionCreator>(scaffold_options),
//                                {std::make_shared<train::StopAtStepHook>(train::LastStep{1000})});
//   while (!sess.ShouldStop()) sess.Run({}, {}, {train_op});  // ends too when the input does
//   sess.Close();   // runs hooks' End (the destructor does too, unless an exception is unwinding)
//
// End of input (TF's `with MonitoredSession(...)` swallowing OutOfRangeError): by default
// (OnOutOfRange::kStop) a Run that raises OutOfRange — an exhausted dataset iterator or a
// closed, empty queue, from the run or from a hook — returns one empty Tensor per fetch and
// ShouldStop() becomes true, so the loop above ends without a try block; a later Run throws
// OutOfRangeError. MonitoredSessionOptions::on_out_of_range = OnOutOfRange::kThrow raises
// the OutOfRangeError from Run instead, for callers that want to see where the input ended.
//
// Decisions on TF's quirks (docs/tf_behaviour.md §3):
// - Hooks: Begin once; AfterCreateSession after every (re)creation; BeforeRun/AfterRun in list
//   order; a stop requested in BeforeRun or AfterRun takes effect after the run, so at least one
//   step always runs. A recovery forgets stop requests made on the old session (TF does too).
// - Close(): hooks' End, then the wrappers close; Aborted/Unavailable while closing are logged
//   and swallowed; an exception a thread reported to the Coordinator surfaces from Close().
//   A second Close() is a no-op here (TF raises "Session is already closed.").
// - Destruction while an exception unwinds closes without hooks' End (TF's `__exit__` for any
//   exception but OutOfRange); catch OutOfRangeError inside the loop to end cleanly.
// - ShouldStop() never throws on MonitoredSession; thread errors surface from Close().
//   SingularMonitoredSession::ShouldStop() re-throws them, as TF.
// - Recovery (beyond TF, see RecoveryOptions): bounded retries with exponential backoff by
//   default; errors raised inside hooks are never retried; hooks are told about each recovery
//   and how many global steps it rolled back. RecoveryOptions::TensorFlow() restores TF's
//   unbounded, immediate retries.
// - Close() makes the graph mutable again only if it was mutable when the session was built.
// - Hook schedules (beyond TF; MonitoredSessionOptions::hook_scheduling, HookSchedule): TF
//   calls every hook around every run, and each periodic hook fetches the global step to learn
//   whether it is due — on most runs only to find it is not. Here each hook declares when it
//   is next due (every run, a global step, an iteration, a time; NextDue()) and the hooked
//   session calls BeforeRun/AfterRun only on those runs. To know when step-scheduled hooks are
//   due, the session reads the global step once at each session creation and adds one fetch
//   of the global step variable to every run while some hook's schedule follows the global
//   step (and to runs some hook is due for) — its ref, read by the executor after the run:
//   exact rather than stale, and no op runs for it when the train op updates the step. Runs
//   no hook needs the step for fetch nothing extra. Hooks that are due behave exactly as TF's:
//   they fetch the step's read tensor and re-read it when their "stale + 1" estimate triggers,
//   so the built-in hooks fire on the same steps and write the same things as TF's when the
//   train op adds 1 to the global step per run. Where they can differ, and the defaults:
//     StopAtStepHook, CheckpointSaverHook, SummarySaverHook, StepCounterHook, ProfilerHook,
//     EarlyStoppingHook: due at their next global step (or time); ProgressBarHook, time-based
//     LoggingTensorHook: at their next time; LoggingTensorHook every_n_iter: at its next
//     iteration; FinalOpsHook, an at_end-only LoggingTensorHook, GlobalStepWaiterHook once
//     started: never (they work in AfterCreateSession/End); NanTensorHook, FeedFnHook, and any
//     hook that does not override NextDue(): every run.
//     - When other workers advance a shared global step, the session sees their steps at the
//       end of each run, so a step-scheduled hook can be called one run later than TF's stale
//       read would have fired it.
//     - StepCounterHook's "global step has not been increased" warning compares the step
//       between its calls (at most its period in runs apart), not between consecutive runs.
//   HookScheduling::kEveryRun restores TF's calls exactly.
#ifndef FLOWTRAIN_TRAIN_MONITORED_SESSION_H_
#define FLOWTRAIN_TRAIN_MONITORED_SESSION_H_

#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flowtrain/runtime/session.h"
#include "flowtrain/train/coordinator.h"
#include "flowtrain/train/session_creator.h"
#include "flowtrain/train/session_run_hook.h"

namespace flowtrain::train {

using HookList = std::vector<std::shared_ptr<SessionRunHook>>;

// How the recoverable session reacts to Aborted/Unavailable (a lost ps or worker).
struct RecoveryOptions {
  // Session (re)creations that may fail in a row before the error is raised; -1 = unbounded.
  // Default: 10, so a task that never comes back ends training with its error after about
  // 2 minutes instead of retrying forever.
  int max_consecutive_failures = 10;
  // Wait before the first retry, doubled after each consecutive failure up to max_backoff.
  std::chrono::milliseconds initial_backoff{100};
  double backoff_multiplier = 2.0;
  std::chrono::milliseconds max_backoff{30000};

  // TF's behaviour: retry forever, immediately.
  static RecoveryOptions TensorFlow() {
    return RecoveryOptions{-1, std::chrono::milliseconds(0), 1.0, std::chrono::milliseconds(0)};
  }
};

// Which runs hooks' BeforeRun/AfterRun are called around (beyond TF).
enum class HookScheduling {
  // Default: a hook is called only on the runs its NextDue() declares (see HookSchedule);
  // a hook that is not due costs nothing on that run.
  kWhenDue,
  // TF's behaviour: every hook around every run, whatever it declares.
  kEveryRun,
};

// What Run does when the run raises OutOfRange (the input is exhausted).
enum class OnOutOfRange {
  // Default, TF's `with` block: Run returns empty Tensors and ShouldStop() becomes true.
  kStop,
  // Run throws the OutOfRangeError (the session stays usable until closed, as after any error).
  kThrow,
};

struct MonitoredSessionOptions {
  std::chrono::nanoseconds stop_grace_period = std::chrono::seconds(120);
  RecoveryOptions recovery;
  HookScheduling hook_scheduling = HookScheduling::kWhenDue;
  OnOutOfRange on_out_of_range = OnOutOfRange::kStop;
  // Called at the end of Close() when the session had finished — a hook or RequestStop asked
  // it to stop, or its input ran out — and closed without error (not after a failure, so that
  // a restarted chief finds its cluster still up). MonitoredTrainingSession's chief ends its
  // cluster's job from here. What it throws, Close() throws.
  std::function<void()> on_finished;
};

// Given to RunStepFn's function: the raw session (runs bypass hooks), a Run that goes through
// the hooks, and RequestStop, which ends the step function (TF raises StopIteration) and makes
// ShouldStop() true.
class StepContext {
 public:
  StepContext(
      SessionInterface* raw,
      std::function<std::vector<Tensor>(const FeedList&, const FetchList&, const std::vector<Operation>&)>
          run_with_hooks)
      : raw_(raw), run_with_hooks_(std::move(run_with_hooks)) {}
  SessionInterface& session() const { return *raw_; }
  std::vector<Tensor> RunWithHooks(const FeedList& feeds, const FetchList& fetches,
                                   const std::vector<Operation>& targets = {}) {
    return run_with_hooks_(feeds, fetches, targets);
  }
  [[noreturn]] void RequestStop();

 private:
  SessionInterface* raw_;
  std::function<std::vector<Tensor>(const FeedList&, const FetchList&, const std::vector<Operation>&)>
      run_with_hooks_;
};

// Thrown by StepContext::RequestStop and caught by RunStepFn.
struct StopIteration {};

class MonitoredSession {
 public:
  // `creator` null means ChiefSessionCreator() on the default graph.
  explicit MonitoredSession(std::shared_ptr<SessionCreator> creator = nullptr, HookList hooks = {},
                            MonitoredSessionOptions options = {});
  virtual ~MonitoredSession();
  MonitoredSession(const MonitoredSession&) = delete;
  MonitoredSession& operator=(const MonitoredSession&) = delete;
  MonitoredSession(MonitoredSession&&) noexcept;

  // Runs one step through the hooks. Returns one Tensor per fetch (empty for a fetched
  // Operation, as Session::Run; all empty when the input ran out under OnOutOfRange::kStop).
  // Throws FailedPrecondition once closed, OutOfRange after the input ran out, and the run's
  // or a hook's error otherwise (see RecoveryOptions for the ones it recovers from).
  std::vector<Tensor> Run(const FeedList& feeds, const FetchList& fetches,
                          const std::vector<Operation>& targets = {}, const RunOptions* run_options = nullptr,
                          RunMetadata* run_metadata = nullptr);
  // Shorthands: run ops only; fetch tensors only.
  void Run(const std::vector<Operation>& targets, const FeedList& feeds = {}) { Run(feeds, {}, targets); }

  // Calls `step_fn(step_context)` once; returns its result (or a default value when it called
  // RequestStop, or when the input ran out under OnOutOfRange::kStop). A recovery re-runs the
  // whole function on the new session.
  template <typename StepFn>
  auto RunStepFn(StepFn&& step_fn) -> decltype(step_fn(std::declval<StepContext&>()));

  // True once a hook or the step function requested a stop, the input ran out (with
  // OnOutOfRange::kStop), a thread failed, or the session was closed. Never throws (see
  // SingularMonitoredSession).
  virtual bool ShouldStop();
  // Runs hooks' End (unless already closed) and closes; may throw a thread's recorded error.
  void Close();
  bool closed() const;

  Graph& graph() const;
  // Time spent in each hook so far, in hook order.
  std::vector<HookTiming> hook_timings() const;
  // Recoveries so far.
  int recoveries() const;

 protected:
  struct Impl;
  MonitoredSession(std::shared_ptr<SessionCreator> creator, HookList hooks, MonitoredSessionOptions options,
                   bool should_recover);
  std::vector<Tensor> RunWithHooksForStepFn(const FeedList& feeds, const FetchList& fetches,
                                            const std::vector<Operation>& targets);
  SessionInterface* CurrentRawSession();
  void MarkStopRequested();
  // For RunStepFn under OnOutOfRange::kStop: marks the input exhausted and returns true;
  // false under kThrow.
  bool StopAtEndOfInput();
  // For RunStepFn: recovers from a preemption error (true) or leaves it to propagate (false).
  bool RecoverFromStepFnError(const Error& error);
  std::unique_ptr<Impl> impl_;
};

// A MonitoredSession without recovery, always on a ChiefSessionCreator built from its
// arguments, whose raw session is accessible (TF's SingularMonitoredSession).
class SingularMonitoredSession : public MonitoredSession {
 public:
  SingularMonitoredSession(ChiefSessionCreatorOptions creator_options = {}, HookList hooks = {},
                           MonitoredSessionOptions options = {});
  // Re-throws a thread's recorded error instead of returning true.
  bool ShouldStop() override;
  SessionInterface& raw_session() const;
};

template <typename StepFn>
auto MonitoredSession::RunStepFn(StepFn&& step_fn) -> decltype(step_fn(std::declval<StepContext&>())) {
  using Result = decltype(step_fn(std::declval<StepContext&>()));
  while (true) {
    // A retried function gets the new raw session (TF passes the stale one it captured).
    StepContext context(CurrentRawSession(),
                        [this](const FeedList& f, const FetchList& o, const std::vector<Operation>& t) {
                          return RunWithHooksForStepFn(f, o, t);
                        });
    try {
      return step_fn(context);
    } catch (const StopIteration&) {
      MarkStopRequested();
      if constexpr (!std::is_void_v<Result>) {
        return Result{};
      } else {
        return;
      }
    } catch (const OutOfRangeError&) {
      if (!StopAtEndOfInput()) throw;
      if constexpr (!std::is_void_v<Result>) {
        return Result{};
      } else {
        return;
      }
    } catch (const Error& e) {
      if (!RecoverFromStepFnError(e)) throw;
    }
  }
}

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_MONITORED_SESSION_H_
