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
#ifndef FLOWTRAIN_TRAIN_SESSION_RUN_HOOK_H_
#define FLOWTRAIN_TRAIN_SESSION_RUN_HOOK_H_

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
  std::vector<Output> fetches;
  std::vector<Operation> targets;
  FeedList feeds;
  std::optional<RunOptions> options;
};

// The step being run: the caller's own arguments, the raw session (runs through it bypass the
// hooks), and the stop flag hooks may raise.
class SessionRunContext {
 public:
  SessionRunContext(SessionRunArgs original_args, SessionInterface* session)
      : original_args_(std::move(original_args)), session_(session) {}
  const SessionRunArgs& original_args() const { return original_args_; }
  SessionInterface& session() const { return *session_; }
  void RequestStop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }

 private:
  SessionRunArgs original_args_;
  SessionInterface* session_;
  bool stop_requested_ = false;
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
  int attempt = 0;                 // recoveries so far in this MonitoredSession
  std::string error;               // the error that caused it
  std::optional<int64_t> global_step_before;  // the last global step seen before the error
  std::optional<int64_t> global_step_after;   // the global step restored from the checkpoint
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
  virtual std::optional<SessionRunArgs> BeforeRun(SessionRunContext& run_context) {
    return std::nullopt;
  }
  virtual void AfterRun(SessionRunContext& run_context, const SessionRunValues& run_values) {}
  virtual void End(SessionInterface& session) {}
  // Beyond TF: called after the session was recreated (before AfterCreateSession).
  virtual void AfterRecovery(const RecoveryInfo& info) {}
  // A name for logs and profiles; defaults to the class name.
  virtual std::string name() const;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_SESSION_RUN_HOOK_H_
