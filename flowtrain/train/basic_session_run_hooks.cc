#include "flowtrain/train/basic_session_run_hooks.h"

#include <google/protobuf/text_format.h>

#include <cmath>
#include <thread>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/summary/file_writer_cache.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/saver.h"

namespace flowtrain::train {
namespace {

constexpr const char* kGlobalStepReadKey = "global_step_read_op_cache";

int64_t ReadStep(const Tensor& t) { return t.scalar<int64_t>(); }

int64_t RereadStep(SessionInterface& session, const Output& read) {
  return session.Run({}, {read}, {})[0].scalar<int64_t>();
}

Output RequireGlobalStepRead(Graph& graph, std::string_view hook) {
  Output read = GetOrCreateGlobalStepRead(graph);
  if (!read) FailedPrecondition("Global step should be created to use ", hook, ".");
  return read;
}

std::string FormatValue(const Tensor& t) {
  if (t.NumElements() == 1 && t.dtype() != DT_STRING) return t.SummarizeValue(1);
  return StrCat("[", t.SummarizeValue(100), "]");
}

}  // namespace

Output GetOrCreateGlobalStepRead(Graph& graph) {
  const std::vector<Output> cached = graph.GetCollection<Output>(kGlobalStepReadKey);
  if (cached.size() > 1) {
    FailedPrecondition("There are multiple items in collection ", kGlobalStepReadKey,
                       ". There should be only one.");
  }
  if (cached.size() == 1) return cached[0];
  const std::vector<Variable> steps = graph.GetCollection<Variable>(GraphKeys::kGlobalStep);
  if (steps.size() != 1) return Output();
  // A copy of the value ("+ 0"), read when consumed, under "global_step/".
  auto as_default = graph.AsDefault();
  auto root = graph.NameScope("");
  auto scope = graph.NameScope(StrCat(steps[0].op().name(), "/"));
  Output read = ops::Add(ops::Identity(steps[0].ref(), "read_value"), ops::Const(int64_t{0}, "Const"), "add");
  graph.AddToCollection(kGlobalStepReadKey, read);
  return read;
}

std::string GlobalStepOpName(Graph& graph) {
  const std::vector<Variable> steps = graph.GetCollection<Variable>(GraphKeys::kGlobalStep);
  return steps.size() == 1 ? steps[0].op().name() : std::string();
}

// ---- StopAtStepHook ----

StopAtStepHook::StopAtStepHook(NumSteps num_steps) : num_steps_(num_steps.value) {}
StopAtStepHook::StopAtStepHook(LastStep last_step) : last_step_(last_step.value) {}

void StopAtStepHook::Begin() { read_ = RequireGlobalStepRead(GetDefaultGraph(), "StopAtStepHook"); }

void StopAtStepHook::AfterCreateSession(SessionInterface& session, Coordinator&) {
  // Computed once, at the first session; kept across recoveries.
  if (!last_step_) last_step_ = RereadStep(session, read_) + *num_steps_;
}

std::optional<SessionRunArgs> StopAtStepHook::BeforeRun(SessionRunContext&) {
  return SessionRunArgs{{read_}, {}, {}, std::nullopt};
}

void StopAtStepHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const int64_t estimate = ReadStep(values.results[0]) + 1;
  if (estimate >= *last_step_) {
    const int64_t step = RereadStep(context.session(), read_);
    if (step >= *last_step_) context.RequestStop();
  }
}

HookSchedule StopAtStepHook::NextDue() const {
  if (!last_step_) return HookSchedule::EveryRun();
  return HookSchedule{.global_step = *last_step_};
}

// ---- CheckpointSaverHook ----

CheckpointSaverHook::CheckpointSaverHook(std::string checkpoint_dir, CheckpointSaverHookOptions options)
    : checkpoint_dir_(std::move(checkpoint_dir)),
      options_(std::move(options)),
      save_path_(JoinPath(checkpoint_dir_, options_.checkpoint_basename)),
      timer_(options_.every_n_secs, options_.every_n_steps) {
  FT_LOG(INFO) << "Create CheckpointSaverHook.";
  if (options_.saver != nullptr && options_.scaffold != nullptr) {
    InvalidArgument("You cannot provide both saver and scaffold.");
  }
}

void CheckpointSaverHook::Begin() {
  graph_ = &GetDefaultGraph();
  writer_ = summary::FileWriterCache::Get(checkpoint_dir_);
  read_ = RequireGlobalStepRead(*graph_, "CheckpointSaverHook");
  for (auto& listener : options_.listeners) listener->Begin();
}

Saver& CheckpointSaverHook::GetSaver() {
  if (options_.saver != nullptr) return *options_.saver;
  if (options_.scaffold != nullptr && options_.scaffold->saver != nullptr) return *options_.scaffold->saver;
  const std::vector<std::shared_ptr<Saver>> savers =
      graph_->GetCollection<std::shared_ptr<Saver>>(GraphKeys::kSavers);
  if (savers.empty()) {
    FailedPrecondition(
        "No items in collection savers. Please provide a saver either as a "
        "parameter or as a scaffold.");
  }
  if (savers.size() > 1) {
    FailedPrecondition(
        "More than one item in collection savers. Please indicate which one to "
        "use by passing it to the constructor.");
  }
  options_.saver = savers[0];
  return *options_.saver;
}

void CheckpointSaverHook::AfterCreateSession(SessionInterface& session, Coordinator&) {
  const int64_t step = RereadStep(session, read_);
  if (options_.save_graph_def) {
    const tensorflow::GraphDef graph_def = graph_->ToGraphDef(/*add_shapes=*/true);
    std::string text;
    google::protobuf::TextFormat::PrintToString(graph_def, &text);
    CreateDirectories(checkpoint_dir_);
    WriteFileAtomically(JoinPath(checkpoint_dir_, "graph.pbtxt"), text);
    writer_->AddGraph(graph_def);
    writer_->AddMetaGraph(GetSaver().ExportMetaGraph());
  }
  // TF saves this step again even when the session was just restored from its checkpoint.
  // Rewriting the files a restore read is the one save a kill can leave half old and half new
  // (the data file is renamed into place before the index), and the state restored equals
  // what they hold, so flowtrain keeps the checkpoint that exists.
  if (CheckpointExists(StrCat(save_path_, "-", step))) {
    FT_LOG(INFO) << "Checkpoint for " << step << " exists in " << checkpoint_dir_ << ": not saved again.";
  } else {
    Save(session, step);
  }
  timer_.UpdateLastTriggeredStep(step);
}

std::optional<SessionRunArgs> CheckpointSaverHook::BeforeRun(SessionRunContext&) {
  return SessionRunArgs{{read_}, {}, {}, std::nullopt};
}

void CheckpointSaverHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  if (async_ != nullptr) {
    if (auto written = async_->TakeFinished()) {
      if (Saved(context.session(), written->global_step)) context.RequestStop();
    }
  }
  const int64_t stale = ReadStep(values.results[0]);
  if (timer_.ShouldTriggerForStep(stale + 1)) {
    const int64_t step = RereadStep(context.session(), read_);
    if (timer_.ShouldTriggerForStep(step)) {
      timer_.UpdateLastTriggeredStep(step);
      if (Save(context.session(), step)) context.RequestStop();
    }
  }
}

HookSchedule CheckpointSaverHook::NextDue() const {
  // A write in flight is looked for after every run, to report it as soon as it is complete.
  if (async_ != nullptr && async_->in_flight()) return HookSchedule::EveryRun();
  return timer_.NextDue(ScheduleUnit::kGlobalStep);
}

void CheckpointSaverHook::End(SessionInterface& session) {
  const int64_t last = RereadStep(session, read_);
  if (!timer_.last_triggered_step() || last != *timer_.last_triggered_step()) Save(session, last);
  if (async_ != nullptr) {
    if (auto written = async_->Wait()) Saved(session, written->global_step);
  }
  for (auto& listener : options_.listeners) listener->End(session, last);
}

bool CheckpointSaverHook::Save(SessionInterface& session, int64_t step) {
  FT_LOG(INFO) << "Saving checkpoints for " << step << " into " << save_path_ << ".";
  for (auto& listener : options_.listeners) listener->BeforeSave(session, step);
  if (options_.async_save) {
    if (async_ == nullptr) async_ = std::make_unique<AsyncCheckpointSaver>(GetSaver());
    std::optional<AsyncCheckpointSaver::Written> previous =
        async_->Save(session, save_path_, step, options_.save_graph_def);
    return previous && Saved(session, previous->global_step);
  }
  GetSaver().Save(session, save_path_, step, "checkpoint", "meta", options_.save_graph_def);
  return Saved(session, step);
}

bool CheckpointSaverHook::Saved(SessionInterface& session, int64_t step) {
  tensorflow::SessionLog log;
  log.set_status(tensorflow::SessionLog::CHECKPOINT);
  log.set_checkpoint_path(save_path_);
  writer_->AddSessionLog(log, step);
  bool stop = false;
  for (auto& listener : options_.listeners) {
    if (listener->AfterSave(session, step)) {
      FT_LOG(INFO) << "A CheckpointSaverListener requested that training be stopped.";
      stop = true;
    }
  }
  return stop;
}

// ---- StepCounterHook ----

StepCounterHook::StepCounterHook() : StepCounterHook(Options{}) {}

StepCounterHook::StepCounterHook(int64_t every_n_steps, std::string output_dir)
    : StepCounterHook(Options{.every_n_steps = every_n_steps, .output_dir = std::move(output_dir)}) {}

StepCounterHook::StepCounterHook(Options options)
    : options_(std::move(options)), timer_(options_.every_n_secs, options_.every_n_steps) {
  if (options_.every_n_steps.has_value() == options_.every_n_secs.has_value()) {
    InvalidArgument("exactly one of every_n_steps and every_n_secs should be provided.");
  }
}

void StepCounterHook::Begin() {
  Graph& graph = GetDefaultGraph();
  if (options_.summary_writer == nullptr && !options_.output_dir.empty()) {
    options_.summary_writer = summary::FileWriterCache::Get(options_.output_dir);
  }
  read_ = RequireGlobalStepRead(graph, "StepCounterHook");
  tag_ = StrCat(GlobalStepOpName(graph), "/sec");
}

std::optional<SessionRunArgs> StepCounterHook::BeforeRun(SessionRunContext&) {
  return SessionRunArgs{{read_}, {}, {}, std::nullopt};
}

void StepCounterHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const int64_t stale = ReadStep(values.results[0]);
  if (timer_.ShouldTriggerForStep(stale + 1)) {
    const int64_t step = RereadStep(context.session(), read_);
    if (timer_.ShouldTriggerForStep(step)) {
      auto [elapsed_secs, elapsed_steps] = timer_.UpdateLastTriggeredStep(step);
      if (elapsed_secs && *elapsed_secs > 0) {
        const double rate = static_cast<double>(*elapsed_steps) / *elapsed_secs;
        last_rate_ = rate;
        if (options_.summary_writer != nullptr) {
          tensorflow::Summary summary;
          auto* value = summary.add_value();
          value->set_tag(tag_);
          value->set_simple_value(static_cast<float>(rate));
          options_.summary_writer->AddSummary(summary, step);
        }
        char buffer[64];
        std::snprintf(buffer, sizeof(buffer), "%g", rate);
        FT_LOG(INFO) << tag_ << ": " << buffer;
      }
    }
  }
  // The global step should move every step; say so (a few times) when it does not.
  if (last_stale_ && *last_stale_ == stale && warnings_ < 5) {
    ++warnings_;
    FT_LOG(WARNING) << "It seems that global step (tf.train.get_global_step) has not been "
                       "increased. Current value (could be stable): "
                    << stale << " vs previous value: " << *last_stale_
                    << ". You could increase the global step by passing "
                       "tf.train.get_global_step() to Optimizer.apply_gradients or "
                       "Optimizer.minimize.";
  }
  last_stale_ = stale;
  last_iteration_ = context.iteration();
}

HookSchedule StepCounterHook::NextDue() const {
  HookSchedule due = timer_.NextDue(ScheduleUnit::kGlobalStep);
  if (due.global_step && last_iteration_) due.iteration = *last_iteration_ + *options_.every_n_steps;
  return due;
}

// ---- SummarySaverHook ----

SummarySaverHook::SummarySaverHook(SummarySaverHookOptions options)
    : options_(std::move(options)), timer_(options_.every_n_secs, options_.every_n_steps) {
  if ((options_.scaffold == nullptr) == (!options_.summary_op)) {
    InvalidArgument("Exactly one of scaffold or summary_op must be provided.");
  }
}

void SummarySaverHook::Begin() {
  if (options_.summary_writer == nullptr && !options_.output_dir.empty()) {
    options_.summary_writer = summary::FileWriterCache::Get(options_.output_dir);
  }
  next_step_.reset();
  read_ = RequireGlobalStepRead(GetDefaultGraph(), "SummarySaverHook");
}

Output SummarySaverHook::SummaryOp() const {
  if (options_.summary_op) return options_.summary_op;
  return options_.scaffold->summary_op;
}

std::optional<SessionRunArgs> SummarySaverHook::BeforeRun(SessionRunContext& context) {
  // After runs it was not called for, the step it expects is the session's, not its own.
  if (next_step_ && last_iteration_ && context.iteration() != *last_iteration_ + 1 && context.global_step()) {
    next_step_ = *context.global_step() + 1;
  }
  requested_ = !next_step_ || timer_.ShouldTriggerForStep(*next_step_);
  SessionRunArgs args{{read_}, {}, {}, std::nullopt};
  summary_fetched_ = false;
  if (requested_ && SummaryOp()) {
    args.fetches.push_back(SummaryOp());
    summary_fetched_ = true;
  }
  return args;
}

void SummarySaverHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  last_iteration_ = context.iteration();
  if (options_.summary_writer == nullptr) return;
  const bool first = !next_step_;
  int64_t step = ReadStep(values.results[0]) + 1;
  if (first || requested_) step = RereadStep(context.session(), read_);
  if (first) {
    tensorflow::SessionLog log;
    log.set_status(tensorflow::SessionLog::START);
    options_.summary_writer->AddSessionLog(log, step);
  }
  if (requested_) {
    timer_.UpdateLastTriggeredStep(step);
    if (summary_fetched_) {
      options_.summary_writer->AddSummary(std::string_view(values.results[1].scalar<std::string>()), step);
    }
  }
  next_step_ = step + 1;
}

HookSchedule SummarySaverHook::NextDue() const {
  if (options_.summary_writer == nullptr) return HookSchedule::Never();  // nothing to write
  if (!next_step_) return HookSchedule::EveryRun();
  return timer_.NextDue(ScheduleUnit::kGlobalStep);
}

void SummarySaverHook::End(SessionInterface&) {
  if (options_.summary_writer != nullptr) options_.summary_writer->Flush();
}

// ---- LoggingTensorHook ----

LoggingTensorHook::LoggingTensorHook(Tensors tensors, Every every, Formatter formatter)
    : tensors_(std::move(tensors)), every_(every), formatter_(std::move(formatter)) {
  const bool only_at_end = every_.at_end && !every_.every_n_steps && !every_.every_n_secs;
  if (!only_at_end && every_.every_n_steps.has_value() == every_.every_n_secs.has_value()) {
    InvalidArgument("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.");
  }
  if (every_.every_n_steps && *every_.every_n_steps <= 0) {
    InvalidArgument("invalid every_n_iter=", *every_.every_n_steps, ".");
  }
  if (only_at_end) {
    timer_ = std::make_unique<NeverTriggerTimer>();
  } else {
    timer_ = std::make_unique<SecondOrStepTimer>(every_.every_n_secs, every_.every_n_steps);
  }
}

void LoggingTensorHook::Begin() {
  timer_->Reset();
  iter_count_ = 0;
  for (const auto& [tag, tensor] : tensors_) {
    if (!tensor) InvalidArgument("LoggingTensorHook: tensor for tag '", tag, "' is empty");
  }
}

std::optional<SessionRunArgs> LoggingTensorHook::BeforeRun(SessionRunContext& context) {
  // The session counts the iterations, including those this hook was not called for.
  iter_count_ = context.iteration();
  should_trigger_ = timer_->ShouldTriggerForStep(iter_count_);
  if (!should_trigger_) return std::nullopt;
  SessionRunArgs args;
  for (const auto& [tag, tensor] : tensors_) args.fetches.push_back(tensor);
  return args;
}

void LoggingTensorHook::Log(const std::vector<Tensor>& values) {
  std::vector<std::pair<std::string, Tensor>> tagged;
  for (size_t i = 0; i < tensors_.size(); ++i) tagged.emplace_back(tensors_[i].first, values[i]);
  if (formatter_) {
    FT_LOG(INFO) << formatter_(tagged);
    return;
  }
  std::string line = StrJoin(tagged, ", ", [](std::string* out, const auto& item) {
    StrAppend(out, item.first, " = ", FormatValue(item.second));
  });
  auto [elapsed, steps] = timer_->UpdateLastTriggeredStep(iter_count_);
  if (elapsed) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), " (%.3f sec)", *elapsed);
    line += buffer;
  }
  FT_LOG(INFO) << line;
}

void LoggingTensorHook::AfterRun(SessionRunContext&, const SessionRunValues& values) {
  if (should_trigger_) {
    if (formatter_) timer_->UpdateLastTriggeredStep(iter_count_);
    Log(values.results);
  }
  ++iter_count_;
}

HookSchedule LoggingTensorHook::NextDue() const { return timer_->NextDue(ScheduleUnit::kIteration); }

void LoggingTensorHook::End(SessionInterface& session) {
  if (!every_.at_end) return;
  std::vector<Output> fetches;
  for (const auto& [tag, tensor] : tensors_) fetches.push_back(tensor);
  Log(session.Run({}, fetches, {}));
}

// ---- NanTensorHook ----

NanTensorHook::NanTensorHook(Output loss, bool fail_on_nan_loss)
    : loss_(loss), fail_on_nan_loss_(fail_on_nan_loss) {
  if (!loss_) InvalidArgument("NanTensorHook needs a loss tensor");
}

std::optional<SessionRunArgs> NanTensorHook::BeforeRun(SessionRunContext&) {
  return SessionRunArgs{{loss_}, {}, {}, std::nullopt};
}

void NanTensorHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const Tensor& loss = values.results[0];
  bool nan = false;
  if (loss.dtype() == DT_FLOAT) {
    for (float v : loss.flat<float>()) nan = nan || std::isnan(v);
  } else if (loss.dtype() == DT_DOUBLE) {
    for (double v : loss.flat<double>()) nan = nan || std::isnan(v);
  }
  if (!nan) return;
  if (fail_on_nan_loss_) {
    FT_LOG(ERROR) << "Model diverged with loss = NaN.";
    throw NanLossDuringTrainingError();
  }
  FT_LOG(WARNING) << "Model diverged with loss = NaN.";
  context.RequestStop();
}

// ---- GlobalStepWaiterHook ----

GlobalStepWaiterHook::GlobalStepWaiterHook(int64_t wait_until_step, std::chrono::milliseconds poll_interval)
    : wait_until_step_(wait_until_step), poll_interval_(poll_interval) {}

void GlobalStepWaiterHook::Begin() {
  started_ = false;
  read_ = RequireGlobalStepRead(GetDefaultGraph(), "GlobalStepWaiterHook");
}

std::optional<SessionRunArgs> GlobalStepWaiterHook::BeforeRun(SessionRunContext& context) {
  if (started_) return std::nullopt;
  if (wait_until_step_ <= 0) {
    started_ = true;
    return std::nullopt;
  }
  FT_LOG(INFO) << "Waiting for global step " << wait_until_step_ << " before starting training.";
  int64_t last_logged = 0;
  while (!started_) {
    const int64_t step = RereadStep(context.session(), read_);
    if (step >= wait_until_step_) {
      started_ = true;
      return std::nullopt;
    }
    if (step - last_logged > 1000) {
      FT_LOG(INFO) << "Waiting for global step " << wait_until_step_
                   << " before starting training. Current step is " << step << ".";
      last_logged = step;
    }
    std::this_thread::sleep_for(poll_interval_);
  }
  return std::nullopt;
}

HookSchedule GlobalStepWaiterHook::NextDue() const {
  return started_ ? HookSchedule::Never() : HookSchedule::EveryRun();
}

// ---- FinalOpsHook ----

FinalOpsHook::FinalOpsHook(std::vector<Output> final_ops, FeedList final_ops_feed_dict)
    : final_ops_(std::move(final_ops)), feeds_(std::move(final_ops_feed_dict)) {}

void FinalOpsHook::End(SessionInterface& session) {
  if (final_ops_.empty()) return;
  try {
    values_ = session.Run(feeds_, final_ops_, {});
  } catch (const OutOfRangeError&) {
    FT_LOG(WARNING) << "An OutOfRangeError was raised while running the final ops. This often "
                       "means the final ops read from an input pipeline that is exhausted; "
                       "final ops must not depend on input.";
    throw;
  }
}

}  // namespace flowtrain::train
