#include "flowtrain/train/hook_timer.h"

#include "flowtrain/core/error.h"

namespace flowtrain::train {

SecondOrStepTimer::SecondOrStepTimer(std::optional<double> every_secs, std::optional<int64_t> every_steps)
    : every_secs_(every_secs), every_steps_(every_steps) {
  if (!every_secs && !every_steps) {
    InvalidArgument("Either every_secs or every_steps should be provided.");
  }
  if (every_secs && every_steps) InvalidArgument("Can not provide both every_secs and every_steps.");
}

void SecondOrStepTimer::Reset() {
  last_step_.reset();
  last_time_.reset();
}

bool SecondOrStepTimer::ShouldTriggerForStep(int64_t step) const {
  if (!last_step_) return true;
  if (step == *last_step_) return false;
  if (every_secs_) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - *last_time_).count();
    if (elapsed >= *every_secs_) return true;
  }
  if (every_steps_ && step >= *last_step_ + *every_steps_) return true;
  return false;
}

std::pair<std::optional<double>, std::optional<int64_t>> SecondOrStepTimer::UpdateLastTriggeredStep(
    int64_t step) {
  const auto now = std::chrono::steady_clock::now();
  std::pair<std::optional<double>, std::optional<int64_t>> elapsed;
  if (last_time_) {
    elapsed.first = std::chrono::duration<double>(now - *last_time_).count();
    elapsed.second = step - *last_step_;
  }
  last_time_ = now;
  last_step_ = step;
  return elapsed;
}

HookSchedule SecondOrStepTimer::NextDue(ScheduleUnit unit) const {
  if (!last_step_) return HookSchedule::EveryRun();
  HookSchedule due;
  if (every_secs_) {
    due.time = *last_time_ + std::chrono::duration_cast<HookSchedule::Clock::duration>(
                                 std::chrono::duration<double>(*every_secs_));
  }
  if (every_steps_) {
    (unit == ScheduleUnit::kGlobalStep ? due.global_step : due.iteration) = *last_step_ + *every_steps_;
  }
  return due;
}

}  // namespace flowtrain::train
