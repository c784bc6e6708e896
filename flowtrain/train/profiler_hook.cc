#include "flowtrain/train/profiler_hook.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/summary/file_writer_cache.h"
#include "flowtrain/train/basic_session_run_hooks.h"

namespace flowtrain::train {
namespace {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string ChromeTraceJson(const RunMetadata& metadata, const std::vector<HookTiming>* hook_timings) {
  std::vector<std::string> events;
  int pid = 0;
  int64_t first_start = 0;
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    for (const auto& node : dev.node_stats()) {
      if (first_start == 0 || node.all_start_micros() < first_start) first_start = node.all_start_micros();
    }
  }
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    events.push_back(StrCat("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", pid,
                            ",\"args\":{\"name\":", JsonString(StrCat(dev.device(), " Compute")), "}}"));
    for (const auto& node : dev.node_stats()) {
      const std::string op = node.timeline_label().empty() ? node.node_name() : node.timeline_label();
      events.push_back(
          StrCat("{\"name\":", JsonString(node.node_name()), ",\"cat\":\"Op\",\"ph\":\"X\",\"pid\":", pid,
                 ",\"tid\":", node.thread_id(), ",\"ts\":", node.all_start_micros() - first_start,
                 ",\"dur\":", std::max<int64_t>(node.all_end_rel_micros(), 0),
                 ",\"args\":{\"name\":", JsonString(node.node_name()), ",\"op\":", JsonString(op), "}}"));
    }
    ++pid;
  }
  if (hook_timings != nullptr) {
    events.push_back(StrCat("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", pid,
                            ",\"args\":{\"name\":\"hooks (total time so far)\"}}"));
    int64_t ts = 0;
    int tid = 0;
    for (const HookTiming& t : *hook_timings) {
      const int64_t micros = t.total_nanos / 1000;
      events.push_back(StrCat("{\"name\":", JsonString(t.hook), ",\"cat\":\"Hook\",\"ph\":\"X\",\"pid\":",
                              pid, ",\"tid\":", tid++, ",\"ts\":", ts, ",\"dur\":", micros,
                              ",\"args\":{\"calls\":", t.calls, ",\"total_ns\":", t.total_nanos, "}}"));
    }
  }
  return StrCat("{\"traceEvents\":[", StrJoin(events, ",\n"), "]}\n");
}

ProfilerHook::ProfilerHook(Options options)
    : options_(std::move(options)), timer_(options_.every_n_secs, options_.every_n_steps) {
  // TF gets the writer in the constructor.
  writer_ = summary::FileWriterCache::Get(options_.output_dir.empty() ? "." : options_.output_dir);
}

void ProfilerHook::Begin() {
  next_step_.reset();
  read_ = GetOrCreateGlobalStepRead(GetDefaultGraph());
  if (!read_) FailedPrecondition("Global step should be created to use ProfilerHook.");
}

std::optional<SessionRunArgs> ProfilerHook::BeforeRun(SessionRunContext& context) {
  // After runs it was not called for, the step it expects is the session's, not its own.
  if (next_step_ && last_iteration_ && context.iteration() != *last_iteration_ + 1 && context.global_step()) {
    next_step_ = *context.global_step() + 1;
  }
  requested_ = next_step_.has_value() && timer_.ShouldTriggerForStep(*next_step_);
  SessionRunArgs args{{read_}, {}, {}, std::nullopt};
  if (requested_) {
    RunOptions options;
    options.trace_level = RunOptions::kFullTrace;
    args.options = options;
  }
  return args;
}

void ProfilerHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  last_iteration_ = context.iteration();
  const int64_t stale = values.results[0].scalar<int64_t>();
  if (!next_step_) timer_.UpdateLastTriggeredStep(stale);  // the first run arms the timer
  int64_t step = stale + 1;
  if (requested_) {
    step = context.session().Run({}, {read_}, {})[0].scalar<int64_t>();
    timer_.UpdateLastTriggeredStep(step);
    const std::string path = JoinPath(options_.output_dir, StrCat("timeline-", step, ".json"));
    FT_LOG(INFO) << "Saving timeline for " << step << " into '" << path << "'.";
    if (!options_.output_dir.empty()) CreateDirectories(options_.output_dir);
    WriteFileAtomically(path, ChromeTraceJson(*values.run_metadata, values.hook_timings));
    writer_->AddRunMetadata(*values.run_metadata, StrCat("step_", step), step);
  }
  next_step_ = step + 1;
}

HookSchedule ProfilerHook::NextDue() const {
  if (!next_step_) return HookSchedule::EveryRun();
  return timer_.NextDue(ScheduleUnit::kGlobalStep);
}

}  // namespace flowtrain::train
