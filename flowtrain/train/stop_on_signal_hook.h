// StopOnSignalHook (beyond TF): a preemption-safe stop. While the hook exists, the signals it
// is given (SIGTERM and SIGUSR1 by default: what cluster schedulers send before they preempt a
// job) no longer kill the process; they ask the monitored session to stop after the step in
// flight. The training loop then ends as at a normal stop, and closing the session runs every
// hook's End — MonitoredTrainingSession's CheckpointSaverHook writes the final checkpoint — so
// a preempted run resumes from the step it reached instead of the last periodic save. TF 1.x
// has no such hook: there a SIGTERM kills the job and the steps since the last save are lost.
//
//   auto stop = std::make_shared<train::StopOnSignalHook>();
//   options.hooks.push_back(stop);
//   auto sess = train::MonitoredTrainingSession(options);
//   while (!sess->ShouldStop()) sess->Run({train_op});
//   sess->Close();   // the final checkpoint is written here; throws if that save fails
//   if (stop->signal()) return 128 + *stop->signal();   // "preempted, resumable"
//
// The hook only asks for the stop: whether the final checkpoint was saved is known from
// Close() (the destructor can only log a failed save), so a program reports "saved" only after
// Close() returned.
//
// The signal is noticed within `check_interval` (the hook is called only then, so it costs
// nothing on the runs between) plus the step in flight. A second delivery of the same signal
// kills the process as before: an impatient Ctrl-C or scheduler still wins.
#ifndef FLOWTRAIN_TRAIN_STOP_ON_SIGNAL_HOOK_H_
#define FLOWTRAIN_TRAIN_STOP_ON_SIGNAL_HOOK_H_

#include <csignal>
#include <chrono>
#include <optional>
#include <vector>

#include "flowtrain/train/session_run_hook.h"

namespace flowtrain::train {

class StopOnSignalHook : public SessionRunHook {
 public:
  struct Options {
    std::vector<int> signals = {SIGTERM, SIGUSR1};
    std::chrono::milliseconds check_interval{100};
  };
  // Installs the handlers; InvalidArgument when a signal cannot be caught (SIGKILL, SIGSTOP)
  // or another StopOnSignalHook already handles it.
  StopOnSignalHook() : StopOnSignalHook(Options{}) {}
  explicit StopOnSignalHook(Options options);
  // Restores the handlers that were there before.
  ~StopOnSignalHook() override;
  StopOnSignalHook(const StopOnSignalHook&) = delete;
  StopOnSignalHook& operator=(const StopOnSignalHook&) = delete;

  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  HookSchedule NextDue() const override;

  // One of the hook's signals received since it was installed (the first in the list), if any.
  std::optional<int> signal() const;

 private:
  Options options_;
  std::vector<struct sigaction> previous_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_STOP_ON_SIGNAL_HOOK_H_
