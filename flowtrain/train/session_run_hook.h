// SessionRunHook: code that runs around every step of a MonitoredSession, as TF's
// tf.train.SessionRunHook. A hook can add fetches, feeds and run options to each step
// (BeforeRun), see their values afterwards (AfterRun), and ask the session to stop.
//
//   class PrintLossHook : public train::SessionRunHook {
//    public:
//     explicit PrintLossHook(Output loss) : loss_(loss) {}
//     std::optional<train::SessionRunArgs> BeforeRun(train::SessionRunContext&) override {
//       return train::SessionRunArgs{.fetches = {loss_}};
//     }
//     void AfterRun(train::SessionRunContext& ctx, const train::SessionRunValues& v) override {
//       if (v.results[0].scalar<float>() < 0.01f) ctx.RequestStop();
//     }
//    private:
//     Output loss_;
//   };
//
// Call order (TF's): Begin once before the session exists (the graph is still mutable);
// AfterCreateSession after every (re)creation of the underlying session; BeforeRun/AfterRun
// around each Run, in hook list order; End at a clean close. AfterRun is skipped for a step
// whose Run failed; End is skipped when any error other than OutOfRange ends the session.
//
// Beyond TF, a hook declares when it is due (NextDue(), see HookSchedule) and MonitoredSession
// calls its BeforeRun/AfterRun only on those runs; the default, EveryRun, is TF's behaviour.
#ifndef FLOWTRAIN_TRAIN_SESSION_RUN_HOOK_H_
#define FLOWTRAIN_TRAIN_SESSION_RUN_HOOK_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain::train {

class Coordinator;

// What a hook adds to a step: TF's SessionRunArgs(fetches, feed_dict, options), with targets
// (operations to run) kept apart from fetched tensors as C++ Run takes them.
struct SessionRunArgs {
  // Tensors and operations, as Session::Run's fetches: a fetched Operation runs and its slot
  // in SessionRunValues::results is an empty Tensor (TF's None).
  FetchList fetches;
  std::vector<Operation> targets;
  FeedList feeds;
  std::optional<RunOptions> options;
};

// The step being run: the caller's own arguments, the raw session (runs through it bypass the
// hooks), and the stop flag hooks may raise. Beyond TF it also says which run this is and the
// global step the session saw after the previous run, so a hook that was not called on the
// runs in between (HookSchedule) can catch up without a read of its own.
class SessionRunContext {
 public:
  SessionRunContext(SessionRunArgs original_args, SessionInterface* session, int64_t iteration = 0,
                    std::optional<int64_t> global_step = std::nullopt)
      : original_args_(std::move(original_args)),
        session_(session),
        iteration_(iteration),
        global_step_(global_step) {}
  const SessionRunArgs& original_args() const { return original_args_; }
  SessionInterface& session() const { return *session_; }
  void RequestStop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }
  // Runs of this MonitoredSession completed before this one (a re-run after a recovery keeps
  // its number): TF's LoggingTensorHook iteration count.
  int64_t iteration() const { return iteration_; }
  // The global step after the previous run (or at session creation), as the monitored session
  // tracked it; nullopt when the graph has no global step or that run did not fetch it (no
  // hook needed it).
  std::optional<int64_t> global_step() const { return global_step_; }

 private:
  SessionRunArgs original_args_;
  SessionInterface* session_;
  int64_t iteration_;
  std::optional<int64_t> global_step_;
  bool stop_requested_ = false;
};

// When a hook next needs its BeforeRun/AfterRun (beyond TF). MonitoredSession asks the hook's
// NextDue() after AfterCreateSession, after AfterRecovery and after each of its AfterRun, and
// until the hook is due it calls neither BeforeRun nor AfterRun: a hook that is not due costs a
// few comparisons on that run — no call, no fetch. The conditions are alternatives; the hook is
// due on a run when any holds:
//   every_run    always: TF's behaviour and the default NextDue();
//   global_step  the run is expected to bring the global step to at least this value: the
//                step after the previous run + 1 >= global_step (TF's "stale + 1" estimate),
//                or the session does not know the step;
//   iteration    SessionRunContext::iteration() of the run >= this (local run count);
//   time         the run starts at or after this time.
// With none set the hook is never due (it works in Begin, AfterCreateSession and End only).
//
//   HookSchedule NextDue() const override {           // every 1000 global steps
//     return {.global_step = last_saved_step_ + 1000};
//   }
struct HookSchedule {
  using Clock = std::chrono::steady_clock;
  bool every_run = false;
  std::optional<int64_t> global_step;
  std::optional<int64_t> iteration;
  std::optional<Clock::time_point> time;

  static HookSchedule EveryRun() { return HookSchedule{.every_run = true}; }
  static HookSchedule Never() { return HookSchedule{}; }
};

// Time spent in one hook's BeforeRun/AfterRun so far (beyond TF; ProfilerHook reports it).
struct HookTiming {
  std::string hook;
  int64_t calls = 0;
  int64_t total_nanos = 0;
};

// What AfterRun sees: the values of the hook's own fetches (in its order), the merged run
// options actually used, and the run's metadata (traces when a hook asked for them).
struct SessionRunValues {
  std::vector<Tensor> results;
  RunOptions options;
  const RunMetadata* run_metadata = nullptr;
  // Time spent in every hook so far, in hook order (beyond TF).
  const std::vector<HookTiming>* hook_timings = nullptr;
};

// Beyond TF: what a hook is told when the monitored session recreated its session after a
// preemption error (Aborted/Unavailable).
struct RecoveryInfo {
  int attempt = 0;    // recoveries so far in this MonitoredSession
  std::string error;  // the error that caused it
  // The global step after the last successful run, known when that run fetched it: while some
  // hook's schedule follows the global step (MonitoredTrainingSession's chief hooks do) or when
  // some hook was due on it (with HookScheduling::kEveryRun every hook is due on every run);
  // otherwise nullopt.
  std::optional<int64_t> global_step_before;
  std::optional<int64_t> global_step_after;  // the global step restored from the checkpoint
  // Steps lost: global_step_before - global_step_after, when both are known.
  std::optional<int64_t> steps_rolled_back() const {
    if (!global_step_before || !global_step_after) return std::nullopt;
    return *global_step_before - *global_step_after;
  }
};

class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;
  virtual void Begin() {}
  virtual void AfterCreateSession(SessionInterface& session, Coordinator& coord) {}
  virtual std::optional<SessionRunArgs> BeforeRun(SessionRunContext& run_context) { return std::nullopt; }
  virtual void AfterRun(SessionRunContext& run_context, const SessionRunValues& run_values) {}
  virtual void End(SessionInterface& session) {}
  // Beyond TF: called after the session was recreated, once every hook's AfterCreateSession
  // has run on the new session.
  virtual void AfterRecovery(const RecoveryInfo& info) {}
  // Beyond TF: the runs this hook needs to see next (see HookSchedule); asked after
  // AfterCreateSession, AfterRecovery and each AfterRun of this hook.
  virtual HookSchedule NextDue() const { return HookSchedule::EveryRun(); }
  // A name for logs and profiles; defaults to the class name.
  virtual std::string name() const;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_SESSION_RUN_HOOK_H_
