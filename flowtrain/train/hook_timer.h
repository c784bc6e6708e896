// Timers deciding when periodic hooks fire, as TF's SecondOrStepTimer and NeverTriggerTimer:
// every N global steps or every N seconds (exactly one of the two).
//
//   SecondOrStepTimer timer(std::nullopt, 100);         // every 100 steps
//   if (timer.ShouldTriggerForStep(step)) {
//     auto [secs, steps] = timer.UpdateLastTriggeredStep(step);
//   }
//   HookSchedule due = timer.NextDue(ScheduleUnit::kGlobalStep);  // for a hook's NextDue()
#ifndef FLOWTRAIN_TRAIN_HOOK_TIMER_H_
#define FLOWTRAIN_TRAIN_HOOK_TIMER_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "flowtrain/train/session_run_hook.h"

namespace flowtrain::train {

// What a timer's steps count: global steps, or the hook's runs (SessionRunContext::iteration).
enum class ScheduleUnit { kGlobalStep, kIteration };

class HookTimer {
 public:
  virtual ~HookTimer() = default;
  virtual void Reset() = 0;
  virtual bool ShouldTriggerForStep(int64_t step) const = 0;
  // Records a trigger at `step` now; returns the seconds and steps since the previous trigger
  // (nullopt for the first).
  virtual std::pair<std::optional<double>, std::optional<int64_t>> UpdateLastTriggeredStep(int64_t step) = 0;
  virtual std::optional<int64_t> last_triggered_step() const = 0;
  // The runs on which ShouldTriggerForStep can next be true (a hook's HookSchedule): every run
  // until the first trigger, then the step or the time one period after the last trigger.
  virtual HookSchedule NextDue(ScheduleUnit unit) const = 0;
};

class SecondOrStepTimer : public HookTimer {
 public:
  // Exactly one must be set (InvalidArgument otherwise, with TF's messages).
  SecondOrStepTimer(std::optional<double> every_secs, std::optional<int64_t> every_steps);
  void Reset() override;
  bool ShouldTriggerForStep(int64_t step) const override;
  std::pair<std::optional<double>, std::optional<int64_t>> UpdateLastTriggeredStep(int64_t step) override;
  std::optional<int64_t> last_triggered_step() const override { return last_step_; }
  HookSchedule NextDue(ScheduleUnit unit) const override;

 private:
  std::optional<double> every_secs_;
  std::optional<int64_t> every_steps_;
  std::optional<int64_t> last_step_;
  std::optional<std::chrono::steady_clock::time_point> last_time_;
};

class NeverTriggerTimer : public HookTimer {
 public:
  void Reset() override {}
  bool ShouldTriggerForStep(int64_t) const override { return false; }
  std::pair<std::optional<double>, std::optional<int64_t>> UpdateLastTriggeredStep(int64_t) override {
    return {std::nullopt, std::nullopt};
  }
  std::optional<int64_t> last_triggered_step() const override { return std::nullopt; }
  HookSchedule NextDue(ScheduleUnit) const override { return HookSchedule::Never(); }
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_HOOK_TIMER_H_
