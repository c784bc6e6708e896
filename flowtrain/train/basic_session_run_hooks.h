// The standard hooks of TF's basic_session_run_hooks module, with TF 1.15's semantics
// (docs/tf_behaviour.md §2): StopAtStepHook, CheckpointSaverHook (+ CheckpointSaverListener),
// StepCounterHook, SummarySaverHook, LoggingTensorHook, NanTensorHook, GlobalStepWaiterHook,
// FinalOpsHook and FeedFnHook.
//
//   HookList hooks = {
//       std::make_shared<StopAtStepHook>(LastStep{2000}),
//       std::make_shared<LoggingTensorHook>(LoggingTensorHook::Tensors{{"loss", loss}}, 100),
//       std::make_shared<CheckpointSaverHook>("runs/a", CheckpointSaverHookOptions{.every_n_steps = 500}),
//       std::make_shared<StepCounterHook>(),
//       std::make_shared<NanTensorHook>(loss)};
//
// Periods are named the same way in every hook's options: `every_n_steps` and `every_n_secs`
// (each field says which of TF's arguments it is, e.g. CheckpointSaverHook's save_steps).
// (std::make_shared cannot forward a braced list such as `{{"loss", loss}}`, so spell its
// type, LoggingTensorHook::Tensors{...}; constructing the hook directly takes the bare list.)
//
// Hooks that follow the global step read it through the cached read tensor
// (`global_step/add`, collection "global_step_read_op_cache") and treat the value fetched
// with a step as stale: they estimate "stale + 1" and re-read the true value only when that
// estimate would trigger, as TF does, so trigger points match TF's.
//
// Each hook also declares when it is next due (NextDue(), beyond TF; see HookSchedule and
// monitored_session.h): the periodic ones at their timer's next global step, iteration or
// time, FinalOpsHook never (it works in End), GlobalStepWaiterHook never once training has
// started, NanTensorHook and FeedFnHook every run. A hook called after runs it was not due for
// catches up from SessionRunContext's iteration and global step.
#ifndef FLOWTRAIN_TRAIN_BASIC_SESSION_RUN_HOOKS_H_
#define FLOWTRAIN_TRAIN_BASIC_SESSION_RUN_HOOKS_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "flowtrain/summary/file_writer.h"
#include "flowtrain/train/async_checkpoint_saver.h"
#include "flowtrain/train/hook_timer.h"
#include "flowtrain/train/scaffold.h"
#include "flowtrain/train/session_run_hook.h"

namespace flowtrain::train {

class Saver;

// The global step's cached read tensor (TF's _get_or_create_global_step_read); an empty
// Output when the graph has no global step.
Output GetOrCreateGlobalStepRead(Graph& graph);
// The global step variable's op name ("global_step"), or "" when there is none.
std::string GlobalStepOpName(Graph& graph);

// ---- StopAtStepHook ----

struct NumSteps {
  int64_t value;
};
struct LastStep {
  int64_t value;
};

// Requests a stop once the global step reaches `last_step` (or `num_steps` more than at the
// first session creation). At least one step always runs.
class StopAtStepHook : public SessionRunHook {
 public:
  explicit StopAtStepHook(NumSteps num_steps);
  explicit StopAtStepHook(LastStep last_step);
  void Begin() override;
  void AfterCreateSession(SessionInterface& session, Coordinator& coord) override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  HookSchedule NextDue() const override;  // the run expected to reach last_step
  std::optional<int64_t> last_step() const { return last_step_; }

 private:
  std::optional<int64_t> num_steps_;
  std::optional<int64_t> last_step_;
  Output read_;
};

// ---- CheckpointSaverHook ----

// Called around each save (TF's CheckpointSaverListener); AfterSave returning true asks
// training to stop.
class CheckpointSaverListener {
 public:
  virtual ~CheckpointSaverListener() = default;
  virtual void Begin() {}
  virtual void BeforeSave(SessionInterface& session, int64_t global_step) {}
  virtual bool AfterSave(SessionInterface& session, int64_t global_step) { return false; }
  virtual void End(SessionInterface& session, int64_t global_step) {}
};

struct CheckpointSaverHookOptions {
  // Save every this many global steps (TF's save_steps) or seconds (TF's save_secs); exactly
  // one of the two.
  std::optional<int64_t> every_n_steps;
  std::optional<double> every_n_secs;
  std::shared_ptr<Saver> saver;  // or the scaffold's, or the SAVERS collection's
  std::string checkpoint_basename = "model.ckpt";
  std::shared_ptr<Scaffold> scaffold;
  std::vector<std::shared_ptr<CheckpointSaverListener>> listeners;
  bool save_graph_def = true;  // graph.pbtxt and .meta files (TF >= 2.1 compat.v1 option)
  // Beyond TF: write each checkpoint on a background thread (AsyncCheckpointSaver), so that
  // training waits only for the model's copy into memory, not for the disk. Listeners'
  // AfterSave and the CHECKPOINT event then come once the write is complete (checked after
  // each run); End waits for it and saves the last step. A recovery meanwhile restores the
  // newest complete checkpoint. Costs a second copy of the model in memory during the write.
  bool async_save = false;
};

// Saves checkpoints every N steps or seconds, at session creation (unless the checkpoint of
// that step exists: TF writes it again, see AfterCreateSession) and at the end; writes
// graph.pbtxt, the graph and meta graph to the event file, and a CHECKPOINT session log.
// With `async_save`, writes them in the background (see CheckpointSaverHookOptions).
class CheckpointSaverHook : public SessionRunHook {
 public:
  CheckpointSaverHook(std::string checkpoint_dir, CheckpointSaverHookOptions options);
  void Begin() override;
  void AfterCreateSession(SessionInterface& session, Coordinator& coord) override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(SessionInterface& session) override;
  HookSchedule NextDue() const override;  // the next save's step or time

 private:
  // Saves (or, with async_save, starts saving) the checkpoint of `step`; true if a listener
  // asked to stop.
  bool Save(SessionInterface& session, int64_t step);
  // Tells the event file and the listeners that the checkpoint of `step` is written.
  bool Saved(SessionInterface& session, int64_t step);
  Saver& GetSaver();

  std::string checkpoint_dir_;
  CheckpointSaverHookOptions options_;
  std::string save_path_;
  SecondOrStepTimer timer_;
  std::shared_ptr<summary::FileWriter> writer_;
  Output read_;
  Graph* graph_ = nullptr;
  std::unique_ptr<AsyncCheckpointSaver> async_;  // with async_save, after Begin
};

// ---- StepCounterHook ----

// Logs and writes `<global step op>/sec` (normally "global_step/sec") every N steps or secs.
class StepCounterHook : public SessionRunHook {
 public:
  struct Options {
    // Every this many global steps (TF's every_n_steps, default 100) or seconds (TF's
    // every_n_secs); set one and clear the other.
    std::optional<int64_t> every_n_steps = 100;
    std::optional<double> every_n_secs;
    std::string output_dir;
    std::shared_ptr<summary::FileWriter> summary_writer;
  };
  // TF's StepCounterHook(): every 100 steps; logs the rate, writes no summary (no output_dir).
  StepCounterHook();
  // TF's StepCounterHook(every_n_steps, output_dir=...).
  explicit StepCounterHook(int64_t every_n_steps, std::string output_dir = "");
  explicit StepCounterHook(Options options);
  void Begin() override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  // The next rate's step or time; with every_n_steps also every_n_steps runs after the last
  // call, so a global step that does not move is still noticed (and warned about).
  HookSchedule NextDue() const override;
  // The last rate computed (steps per second), for tests and progress displays.
  std::optional<double> last_rate() const { return last_rate_; }

 private:
  Options options_;
  SecondOrStepTimer timer_;
  Output read_;
  std::string tag_;
  std::optional<int64_t> last_stale_;
  std::optional<int64_t> last_iteration_;
  int warnings_ = 0;
  std::optional<double> last_rate_;
};

// ---- SummarySaverHook ----

struct SummarySaverHookOptions {
  // Write every this many global steps (TF's save_steps) or seconds (TF's save_secs); exactly
  // one of the two.
  std::optional<int64_t> every_n_steps;
  std::optional<double> every_n_secs;
  std::string output_dir;
  std::shared_ptr<summary::FileWriter> summary_writer;
  std::shared_ptr<Scaffold> scaffold;  // exactly one of scaffold and summary_op
  Output summary_op;
};

// Writes the summary op's result every N steps or secs (always on the first step), and a
// SessionLog START on the first step.
class SummarySaverHook : public SessionRunHook {
 public:
  explicit SummarySaverHook(SummarySaverHookOptions options);
  void Begin() override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(SessionInterface& session) override;
  HookSchedule NextDue() const override;  // the first run, then the next summary's step or time

 private:
  Output SummaryOp() const;
  SummarySaverHookOptions options_;
  SecondOrStepTimer timer_;
  Output read_;
  std::optional<int64_t> next_step_;
  std::optional<int64_t> last_iteration_;
  bool requested_ = false;
  bool summary_fetched_ = false;
};

// ---- LoggingTensorHook ----

class LoggingTensorHook : public SessionRunHook {
 public:
  // (tag, tensor) pairs, printed in the given order; a std::map is printed sorted by tag.
  using Tensors = std::vector<std::pair<std::string, Output>>;
  struct Every {
    // Log every this many runs of this session (TF's every_n_iter: iterations, not global
    // steps) or seconds (TF's every_n_secs); exactly one of the two unless only at_end.
    std::optional<int64_t> every_n_steps;
    std::optional<double> every_n_secs;
    bool at_end = false;  // also log the last values at the end (TF's at_end)
  };
  using Formatter = std::function<std::string(const std::vector<std::pair<std::string, Tensor>>&)>;

  // Throws InvalidArgument for a period that is not positive or a missing/double period.
  LoggingTensorHook(Tensors tensors, Every every, Formatter formatter = nullptr);
  // TF's positional LoggingTensorHook(tensors, every_n_iter):
  //   LoggingTensorHook hook({{"loss", loss}}, 50);
  LoggingTensorHook(Tensors tensors, int64_t every_n_iter, Formatter formatter = nullptr)
      : LoggingTensorHook(std::move(tensors), Every{.every_n_steps = every_n_iter}, std::move(formatter)) {}
  // The same from a std::map (printed sorted by tag). A template only so that a braced list
  // of pairs picks the Tensors constructors above instead of being ambiguous.
  template <typename Map>
  requires std::is_same_v<Map, std::map<std::string, Output>> LoggingTensorHook(const Map& tensors,
                                                                                Every every,
                                                                                Formatter formatter = nullptr)
      : LoggingTensorHook(Tensors(tensors.begin(), tensors.end()), every, std::move(formatter)) {}
  template <typename Map>
  requires std::is_same_v<Map, std::map<std::string, Output>> LoggingTensorHook(const Map& tensors,
                                                                                int64_t every_n_iter,
                                                                                Formatter formatter = nullptr)
      : LoggingTensorHook(Tensors(tensors.begin(), tensors.end()), every_n_iter, std::move(formatter)) {}
  void Begin() override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(SessionInterface& session) override;
  // The next logging iteration or time; never when it logs only at the end.
  HookSchedule NextDue() const override;

 private:
  void Log(const std::vector<Tensor>& values);
  Tensors tensors_;
  Every every_;
  Formatter formatter_;
  std::unique_ptr<HookTimer> timer_;
  int64_t iter_count_ = 0;
  bool should_trigger_ = false;
};

// ---- NanTensorHook ----

// Thrown by NanTensorHook: "NaN loss during training." (TF's NanLossDuringTrainingError).
class NanLossDuringTrainingError : public InternalError {
 public:
  NanLossDuringTrainingError() : InternalError("NaN loss during training.") {}
};

class NanTensorHook : public SessionRunHook {
 public:
  explicit NanTensorHook(Output loss, bool fail_on_nan_loss = true);
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;

 private:
  Output loss_;
  bool fail_on_nan_loss_;
};

// ---- GlobalStepWaiterHook ----

// Delays the first step until the global step reaches `wait_until_step` (for workers that
// should start after the chief has trained a while).
class GlobalStepWaiterHook : public SessionRunHook {
 public:
  explicit GlobalStepWaiterHook(int64_t wait_until_step,
                                std::chrono::milliseconds poll_interval = std::chrono::milliseconds(500));
  void Begin() override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  HookSchedule NextDue() const override;  // every run until started, then never

 private:
  int64_t wait_until_step_;
  std::chrono::milliseconds poll_interval_;
  bool started_ = false;
  Output read_;
};

// ---- FinalOpsHook ----

// Runs `final_ops` when the session ends; their values are kept for the caller.
class FinalOpsHook : public SessionRunHook {
 public:
  explicit FinalOpsHook(std::vector<Output> final_ops, FeedList final_ops_feed_dict = {});
  void End(SessionInterface& session) override;
  HookSchedule NextDue() const override { return HookSchedule::Never(); }
  const std::optional<std::vector<Tensor>>& final_ops_values() const { return values_; }

 private:
  std::vector<Output> final_ops_;
  FeedList feeds_;
  std::optional<std::vector<Tensor>> values_;
};

// ---- FeedFnHook ----

// Adds `feed_fn()`'s feeds to every step.
class FeedFnHook : public SessionRunHook {
 public:
  explicit FeedFnHook(std::function<FeedList()> feed_fn) : feed_fn_(std::move(feed_fn)) {}
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext&) override {
    return SessionRunArgs{{}, {}, feed_fn_(), std::nullopt};
  }

 private:
  std::function<FeedList()> feed_fn_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_BASIC_SESSION_RUN_HOOKS_H_
