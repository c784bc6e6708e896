// MonitoredTrainingSession: the one call that sets up training as TF's
// tf.train.MonitoredTrainingSession — a chief that initialises or restores the model and
// saves checkpoints and summaries, or a worker that waits for the chief.
//
//   MonitoredTrainingSessionOptions opts;
//   opts.checkpoint_dir = "runs/digits";           // resumes from here if it holds a checkpoint
//   opts.hooks = {std::make_shared<StopAtStepHook>(LastStep{2000})};
//   auto sess = MonitoredTrainingSession(opts);
//   while (!sess->ShouldStop()) sess->Run({train_op});
//
// Defaults are TF 1.15's: checkpoints every 600 s, summaries every 100 steps, the step
// counter every 100 steps, all written to checkpoint_dir (summary_dir overrides the summary
// directory). Setting a period to std::nullopt disables that default hook; UseDefault keeps
// TF's default. As in TF, giving both a seconds and a steps period for the same hook (even 0)
// is an error from the hook's timer. On the chief the hooks run in TF's order:
// chief_only_hooks, StepCounterHook, SummarySaverHook, CheckpointSaverHook, hooks. A worker
// (is_chief=false) gets no default hooks and ignores chief_only_hooks.
#ifndef FLOWTRAIN_TRAIN_MONITORED_TRAINING_SESSION_H_
#define FLOWTRAIN_TRAIN_MONITORED_TRAINING_SESSION_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "flowtrain/train/monitored_session.h"
#include "flowtrain/train/scaffold.h"

namespace flowtrain::train {

// TF's USE_DEFAULT sentinel: "let MonitoredTrainingSession pick".
struct UseDefault {};
// A period: TF's default, disabled (std::nullopt), or a value.
template <typename T>
using Defaulted = std::variant<UseDefault, std::nullopt_t, T>;

struct MonitoredTrainingSessionOptions {
  std::string master;
  bool is_chief = true;
  std::string checkpoint_dir;
  std::shared_ptr<Scaffold> scaffold;
  HookList hooks;
  HookList chief_only_hooks;
  Defaulted<double> save_checkpoint_secs = UseDefault{};     // default 600 when steps unset
  Defaulted<int64_t> save_summaries_steps = UseDefault{};    // default 100 when secs unset
  Defaulted<double> save_summaries_secs = UseDefault{};
  ConfigProto config;
  std::chrono::nanoseconds stop_grace_period = std::chrono::seconds(120);
  std::optional<int64_t> log_step_count_steps = 100;
  std::chrono::seconds max_wait{7200};
  Defaulted<int64_t> save_checkpoint_steps = UseDefault{};
  std::string summary_dir;
  bool save_graph_def = true;
  // Beyond TF: the chief's CheckpointSaverHook writes checkpoints in the background
  // (CheckpointSaverHookOptions::async_save).
  bool async_checkpoint = false;
  RecoveryOptions recovery;  // beyond TF: bounded retries by default
  // Beyond TF: hooks are called only on the runs they are due (HookScheduling::kEveryRun is
  // TF's every hook around every run); see monitored_session.h.
  HookScheduling hook_scheduling = HookScheduling::kWhenDue;
  Graph* graph = nullptr;    // null: the default graph
};

std::unique_ptr<MonitoredSession> MonitoredTrainingSession(MonitoredTrainingSessionOptions options = {});

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_MONITORED_TRAINING_SESSION_H_
