#include "flowtrain/train/early_stopping_hook.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/train/basic_session_run_hooks.h"

namespace flowtrain::train {

EarlyStoppingHook::EarlyStoppingHook(Options options) : options_(std::move(options)) {
  if (static_cast<bool>(options_.metric_tensor) == static_cast<bool>(options_.metric)) {
    InvalidArgument("EarlyStoppingHook needs exactly one of metric_tensor and metric");
  }
  if (options_.every_n_steps <= 0) InvalidArgument("EarlyStoppingHook: every_n_steps must be > 0");
  if (options_.patience <= 0) InvalidArgument("EarlyStoppingHook: patience must be > 0");
}

void EarlyStoppingHook::Begin() {
  read_ = GetOrCreateGlobalStepRead(GetDefaultGraph());
  if (!read_) FailedPrecondition("Global step should be created to use EarlyStoppingHook.");
}

std::optional<SessionRunArgs> EarlyStoppingHook::BeforeRun(SessionRunContext&) {
  return SessionRunArgs{{read_}, {}, {}, std::nullopt};
}

HookSchedule EarlyStoppingHook::NextDue() const {
  if (!next_eval_step_) return HookSchedule::EveryRun();
  return HookSchedule{.global_step = *next_eval_step_};
}

double EarlyStoppingHook::Evaluate(SessionInterface& session) {
  if (options_.metric) return options_.metric(session);
  const Tensor value = session.Run({}, {options_.metric_tensor}, {})[0];
  if (value.NumElements() != 1) {
    InvalidArgument("EarlyStoppingHook: metric ", options_.metric_tensor.name(), " must be a scalar");
  }
  if (value.dtype() == DT_FLOAT) return value.flat<float>()[0];
  if (value.dtype() == DT_DOUBLE) return value.flat<double>()[0];
  InvalidArgument("EarlyStoppingHook: metric must be float or double");
}

void EarlyStoppingHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const int64_t step = values.results[0].scalar<int64_t>() + 1;
  if (!next_eval_step_) next_eval_step_ = step - 1 + options_.every_n_steps;
  if (step < *next_eval_step_) return;
  next_eval_step_ = step + options_.every_n_steps;
  const double value = Evaluate(context.session());
  history_.push_back(value);
  const bool improved = !best_ || (options_.mode == Mode::kMin ? value < *best_ - options_.min_delta
                                                               : value > *best_ + options_.min_delta);
  if (improved) {
    best_ = value;
    stale_evaluations_ = 0;
    return;
  }
  ++stale_evaluations_;
  if (stale_evaluations_ >= options_.patience) {
    FT_LOG(INFO) << "Early stopping at step " << step << ": the metric has not improved for "
                 << stale_evaluations_ << " evaluations (best " << *best_ << ", now " << value << ")";
    context.RequestStop();
  }
}

}  // namespace flowtrain::train
