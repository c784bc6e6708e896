// ProfilerHook: every N steps or seconds, traces one step and writes its per-op timings as a
// Chrome trace (`<output_dir>/timeline-<step>.json`, open in chrome://tracing or Perfetto) and
// as tagged run metadata ("step_<n>") in the event file, as TF's ProfilerHook. The first step
// is never traced. Beyond TF, each trace also carries the time every hook has spent so far
// ("hooks" process in the trace), so slow hooks show up next to slow ops.
//
//   hooks.push_back(std::make_shared<ProfilerHook>(ProfilerHook::Options{.every_n_steps = 1000,
//                                                                        .output_dir = dir}));
//
// Hook timings in the trace: one slice per hook whose length is the hook's total time in
// BeforeRun/AfterRun so far, with its number of calls (a hook's calls are fewer than twice the
// runs when its schedule skipped some; see HookSchedule). Its schedule: the first run (which
// arms the timer), then the next trace's global step or time.
#ifndef FLOWTRAIN_TRAIN_PROFILER_HOOK_H_
#define FLOWTRAIN_TRAIN_PROFILER_HOOK_H_

#include <memory>
#include <optional>
#include <string>

#include "flowtrain/summary/file_writer.h"
#include "flowtrain/train/hook_timer.h"
#include "flowtrain/train/session_run_hook.h"

namespace flowtrain::train {

// The Chrome Trace Event JSON of a run's step stats (one "process" per device, one "thread"
// per executor thread), plus hook timings when given.
std::string ChromeTraceJson(const RunMetadata& metadata, const std::vector<HookTiming>* hook_timings);

class ProfilerHook : public SessionRunHook {
 public:
  struct Options {
    // Profile every this many global steps (TF's save_steps) or seconds (TF's save_secs).
    std::optional<int64_t> every_n_steps;
    std::optional<double> every_n_secs;
    std::string output_dir;
  };
  explicit ProfilerHook(Options options);
  void Begin() override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  HookSchedule NextDue() const override;

 private:
  Options options_;
  SecondOrStepTimer timer_;
  std::shared_ptr<summary::FileWriter> writer_;
  Output read_;
  std::optional<int64_t> next_step_;
  std::optional<int64_t> last_iteration_;
  bool requested_ = false;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_PROFILER_HOOK_H_
