// EarlyStoppingHook (beyond TF): evaluates a metric every N global steps and requests a stop
// when it has not improved for `patience` evaluations in a row.
//
//   auto hook = std::make_shared<EarlyStoppingHook>(EarlyStoppingHook::Options{
//       .metric = [&](SessionInterface& s) { return EvaluateValidationLoss(s); },
//       .every_n_steps = 500, .patience = 3});
//
// The metric is either a tensor (evaluated on the raw session, without feeds) or a function
// of the session (e.g. a validation loop). Improvement means lower by more than `min_delta`
// (or higher, with `mode = kMax`). The hook is called on the first run (to learn the step) and
// then only on the runs that evaluate (NextDue).
#ifndef FLOWTRAIN_TRAIN_EARLY_STOPPING_HOOK_H_
#define FLOWTRAIN_TRAIN_EARLY_STOPPING_HOOK_H_

#include <functional>
#include <optional>
#include <vector>

#include "flowtrain/train/session_run_hook.h"

namespace flowtrain::train {

class EarlyStoppingHook : public SessionRunHook {
 public:
  enum class Mode { kMin, kMax };
  struct Options {
    Output metric_tensor;                             // a scalar, or
    std::function<double(SessionInterface&)> metric;  // a function of the session
    int64_t every_n_steps = 1000;
    int patience = 5;
    double min_delta = 0;
    Mode mode = Mode::kMin;
  };
  explicit EarlyStoppingHook(Options options);
  void Begin() override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  HookSchedule NextDue() const override;

  std::optional<double> best() const { return best_; }
  const std::vector<double>& history() const { return history_; }
  int evaluations_without_improvement() const { return stale_evaluations_; }

 private:
  double Evaluate(SessionInterface& session);
  Options options_;
  Output read_;
  std::optional<int64_t> next_eval_step_;
  std::optional<double> best_;
  int stale_evaluations_ = 0;
  std::vector<double> history_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_EARLY_STOPPING_HOOK_H_
