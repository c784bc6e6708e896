// MonitoredTrainingSession: the one call that sets up training as TF's
// tf.train.MonitoredTrainingSession — a chief that initialises or restores the model and
// saves checkpoints and summaries, or a worker that waits for the chief.
//
//   MonitoredTrainingSessionOptions opts;
//   opts.checkpoint_dir = "runs/digits";           // resumes from here if it holds a checkpoint
//   opts.hooks = {std::make_shared<StopAtStepHook>(LastStep{2000})};
//   opts.save_checkpoint_secs = 60;                // TF's save_checkpoint_secs=60
//   auto sess = MonitoredTrainingSession(opts);
//   while (!sess->ShouldStop()) sess->Run({train_op});  // ends too when the input runs out
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
#include <type_traits>

#include "flowtrain/train/monitored_session.h"
#include "flowtrain/train/scaffold.h"

namespace flowtrain::train {

// TF's USE_DEFAULT sentinel: "let MonitoredTrainingSession pick".
struct UseDefault {};

// A period option: TF's default (UseDefault, what a new one holds), disabled (std::nullopt,
// TF's None) or a value. Assigns as TF users write it: `opts.save_checkpoint_secs = 60;`
// converts the int, and a fractional value for a step count is rejected at compile time.
//
//   Defaulted<double> secs;      // is_default()
//   secs = 60;                   // value() == 60.0
//   secs = std::nullopt;         // disabled()
template <typename T>
class Defaulted {
 public:
  Defaulted() = default;
  Defaulted(UseDefault) {}                                 // NOLINT
  Defaulted(std::nullopt_t) : state_(State::kDisabled) {}  // NOLINT
  template <typename U>
  requires(std::is_arithmetic_v<U> && !std::is_same_v<U, bool> &&
           (std::is_floating_point_v<T> || std::is_integral_v<U>)) Defaulted(U value)
      : state_(State::kValue), value_(static_cast<T>(value)) {}  // NOLINT

  bool is_default() const { return state_ == State::kDefault; }
  bool disabled() const { return state_ == State::kDisabled; }
  bool has_value() const { return state_ == State::kValue; }
  // The value, or std::nullopt when disabled or left to the default.
  std::optional<T> value_if_set() const { return has_value() ? std::optional<T>(value_) : std::nullopt; }

 private:
  enum class State { kDefault, kDisabled, kValue };
  State state_ = State::kDefault;
  T value_{};
};

struct MonitoredTrainingSessionOptions {
  std::string master;
  bool is_chief = true;
  std::string checkpoint_dir;
  std::shared_ptr<Scaffold> scaffold;
  HookList hooks;
  HookList chief_only_hooks;
  Defaulted<double> save_checkpoint_secs;   // default 600 when steps unset
  Defaulted<int64_t> save_summaries_steps;  // default 100 when secs unset
  Defaulted<double> save_summaries_secs;
  ConfigProto config;
  std::chrono::nanoseconds stop_grace_period = std::chrono::seconds(120);
  std::optional<int64_t> log_step_count_steps = 100;
  std::chrono::seconds max_wait{7200};
  Defaulted<int64_t> save_checkpoint_steps;
  std::string summary_dir;
  bool save_graph_def = true;
  // Beyond TF: the chief's CheckpointSaverHook writes checkpoints in the background
  // (CheckpointSaverHookOptions::async_save).
  bool async_checkpoint = false;
  // Beyond TF: the default saver (when neither the scaffold nor the SAVERS collection has one)
  // also saves every dataset iterator's position (shuffle and prefetch buffers included) and,
  // if the graph draws random numbers in its steps (dropout), the random ops' positions, so
  // that a run killed and resumed any number of times ends with the variables of an
  // uninterrupted one. Checkpoints without these keys still restore: the iterators and random
  // ops then start fresh. False gives TF's default saver, which saves only variables (and
  // SAVEABLE_OBJECTS). Sets the scaffold's Scaffold::exact_resume.
  bool exact_resume = true;
  RecoveryOptions recovery;  // beyond TF: bounded retries by default
  // Beyond TF: hooks are called only on the runs they are due (HookScheduling::kEveryRun is
  // TF's every hook around every run); see monitored_session.h.
  HookScheduling hook_scheduling = HookScheduling::kWhenDue;
  // An exhausted input ends the session as in TF's `with` block (OnOutOfRange::kStop: Run
  // returns empty Tensors, ShouldStop() turns true), or kThrow: Run throws OutOfRangeError.
  OnOutOfRange on_out_of_range = OnOutOfRange::kStop;
  Graph* graph = nullptr;  // null: the default graph
  // Beyond TF, opt-in: when the chief's session on a grpc:// master finishes (stops at its
  // last step or at the end of its input) and closes without error, it tells every task of
  // the cluster that the job ended (distributed::EndJob): workers still training stop cleanly
  // at their next step, the ps tasks' Server::Join() returns after end_job_grace_period and
  // `flowtrain server` exits, instead of serving until killed. A worker that starts after the
  // end fails to create its session with OutOfRange naming the end. False (the default) is
  // TF's behaviour: the tasks serve on.
  bool end_job_at_close = false;
  std::chrono::milliseconds end_job_grace_period = std::chrono::seconds(10);
};

std::unique_ptr<MonitoredSession> MonitoredTrainingSession(MonitoredTrainingSessionOptions options = {});

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_MONITORED_TRAINING_SESSION_H_
