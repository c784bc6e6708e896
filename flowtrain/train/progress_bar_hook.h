// ProgressBarHook (beyond TF): shows training progress — a bar with the step, steps/s, the
// ETA and chosen tensors (loss, accuracy) — redrawn in place when stderr is a terminal, or as
// plain log lines every `plain_interval` otherwise (CI logs, files).
//
//   hooks.push_back(std::make_shared<ProgressBarHook>(ProgressBarHook::Options{
//       .last_step = 2000, .tensors = {{"loss", loss}}}));
//
//   [=================>            ] 1200/2000  60%  loss 0.3451  85.2 steps/s  ETA 9s
//
// Tensors are fetched only on the steps that redraw, and the hook declares the time of its next
// redraw (NextDue), so MonitoredSession does not call it at all on the others.
#ifndef FLOWTRAIN_TRAIN_PROGRESS_BAR_HOOK_H_
#define FLOWTRAIN_TRAIN_PROGRESS_BAR_HOOK_H_

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "flowtrain/train/session_run_hook.h"

namespace flowtrain::train {

class ProgressBarHook : public SessionRunHook {
 public:
  struct Options {
    std::optional<int64_t> last_step;  // the bar's end; without it only counts are shown
    std::optional<int64_t> num_steps;  // or: this many steps after the first session's step
    std::vector<std::pair<std::string, Output>> tensors;
    std::chrono::milliseconds redraw_interval{100};   // on a terminal
    std::chrono::milliseconds plain_interval{10000};  // otherwise
    FILE* stream = stderr;
    std::optional<bool> force_tty;  // for tests; default: isatty(stream)
  };
  explicit ProgressBarHook(Options options);
  void Begin() override;
  void AfterCreateSession(SessionInterface& session, Coordinator& coord) override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(SessionInterface& session) override;
  HookSchedule NextDue() const override;  // the next redraw's time
  // The last line drawn, for tests.
  const std::string& last_line() const { return last_line_; }

 private:
  void Draw(int64_t step, const std::vector<std::pair<std::string, Tensor>>& values, bool final);

  Options options_;
  bool tty_ = false;
  Output read_;
  bool due_ = false;
  std::optional<int64_t> start_step_;
  std::chrono::steady_clock::time_point start_time_;
  std::chrono::steady_clock::time_point last_draw_;
  int64_t last_step_seen_ = 0;
  std::string last_line_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_PROGRESS_BAR_HOOK_H_
