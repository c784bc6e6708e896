#include "flowtrain/train/monitored_training_session.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/distributed/end_job.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/session_creator.h"

namespace flowtrain::train {
namespace {

template <typename T>
bool Positive(const std::optional<T>& v) {
  return v.has_value() && *v > 0;
}

}  // namespace

std::unique_ptr<MonitoredSession> MonitoredTrainingSession(MonitoredTrainingSessionOptions options) {
  // TF's USE_DEFAULT resolution (docs/tf_behaviour.md §1.1).
  std::optional<int64_t> summary_steps;
  std::optional<double> summary_secs;
  if (options.save_summaries_steps.is_default() && options.save_summaries_secs.is_default()) {
    summary_steps = 100;
  } else {
    summary_steps = options.save_summaries_steps.value_if_set();
    summary_secs = options.save_summaries_secs.value_if_set();
  }
  std::optional<int64_t> checkpoint_steps;
  std::optional<double> checkpoint_secs;
  if (options.save_checkpoint_steps.is_default() && options.save_checkpoint_secs.is_default()) {
    checkpoint_secs = 600;
  } else {
    checkpoint_steps = options.save_checkpoint_steps.value_if_set();
    checkpoint_secs = options.save_checkpoint_secs.value_if_set();
  }
  if (options.scaffold == nullptr) options.scaffold = std::make_shared<Scaffold>();
  options.scaffold->exact_resume = options.exact_resume;
  Graph* graph = options.graph != nullptr ? options.graph : &GetDefaultGraph();
  auto as_default = graph->AsDefault();  // hooks' Begin() builds into this graph
  MonitoredSessionOptions session_options;
  session_options.stop_grace_period = options.stop_grace_period;
  session_options.recovery = options.recovery;
  session_options.hook_scheduling = options.hook_scheduling;
  session_options.on_out_of_range = options.on_out_of_range;

  if (!options.is_chief) {
    WorkerSessionCreatorOptions worker;
    worker.scaffold = options.scaffold;
    worker.master = options.master;
    worker.config = options.config;
    worker.max_wait = options.max_wait;
    worker.graph = graph;
    return std::make_unique<MonitoredSession>(std::make_shared<WorkerSessionCreator>(worker), options.hooks,
                                              session_options);
  }

  if (options.end_job_at_close && options.master.starts_with("grpc://")) {
    session_options.on_finished = [master = options.master, grace = options.end_job_grace_period] {
      try {
        for (const std::string& missed :
             distributed::EndJob(master, "its chief finished training", {.grace_period = grace})) {
          FT_LOG(WARNING) << "Could not tell a task that the job ended: " << missed;
        }
      } catch (const Error& e) {
        // Training itself succeeded and its last checkpoint is saved: a cluster that cannot be
        // told only serves on, as TF's does.
        FT_LOG(WARNING) << "Could not tell the cluster that the job ended: " << e.what();
      }
    };
  }
  HookList all_hooks = options.chief_only_hooks;
  ChiefSessionCreatorOptions chief;
  chief.scaffold = options.scaffold;
  chief.master = options.master;
  chief.config = options.config;
  chief.checkpoint_dir = options.checkpoint_dir;
  chief.graph = graph;
  const std::string summary_dir = options.summary_dir.empty() ? options.checkpoint_dir : options.summary_dir;
  if (!summary_dir.empty()) {
    if (Positive(options.log_step_count_steps)) {
      StepCounterHook::Options counter;
      counter.every_n_steps = options.log_step_count_steps;
      counter.output_dir = summary_dir;
      all_hooks.push_back(std::make_shared<StepCounterHook>(counter));
    }
    if (Positive(summary_steps) || Positive(summary_secs)) {
      SummarySaverHookOptions summaries;
      summaries.scaffold = options.scaffold;
      summaries.every_n_steps = summary_steps;
      summaries.every_n_secs = summary_secs;
      summaries.output_dir = summary_dir;
      all_hooks.push_back(std::make_shared<SummarySaverHook>(summaries));
    }
  }
  if (!options.checkpoint_dir.empty() && (Positive(checkpoint_steps) || Positive(checkpoint_secs))) {
    CheckpointSaverHookOptions checkpoints;
    checkpoints.every_n_steps = checkpoint_steps;
    checkpoints.every_n_secs = checkpoint_secs;
    checkpoints.scaffold = options.scaffold;
    checkpoints.save_graph_def = options.save_graph_def;
    checkpoints.async_save = options.async_checkpoint;
    all_hooks.push_back(std::make_shared<CheckpointSaverHook>(options.checkpoint_dir, checkpoints));
  }
  all_hooks.insert(all_hooks.end(), options.hooks.begin(), options.hooks.end());
  return std::make_unique<MonitoredSession>(std::make_shared<ChiefSessionCreator>(chief), all_hooks,
                                            session_options);
}

}  // namespace flowtrain::train
