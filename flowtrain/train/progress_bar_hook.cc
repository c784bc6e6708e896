#include "flowtrain/train/progress_bar_hook.h"

#include <unistd.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/train/basic_session_run_hooks.h"

namespace flowtrain::train {
namespace {

std::string FormatDuration(double seconds) {
  if (seconds < 0 || seconds > 1e7) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s % 3600) / 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  }
  return buf;
}

std::string FormatScalar(const Tensor& t) {
  if (t.NumElements() != 1) return t.SummarizeValue(3);
  char buf[32];
  switch (t.dtype()) {
    case DT_FLOAT:
      std::snprintf(buf, sizeof(buf), "%.4f", t.flat<float>()[0]);
      return buf;
    case DT_DOUBLE:
      std::snprintf(buf, sizeof(buf), "%.4f", t.flat<double>()[0]);
      return buf;
    default:
      return t.SummarizeValue(1);
  }
}

}  // namespace

ProgressBarHook::ProgressBarHook(Options options) : options_(std::move(options)) {
  tty_ = options_.force_tty ? *options_.force_tty : ::isatty(::fileno(options_.stream)) != 0;
}

void ProgressBarHook::Begin() {
  read_ = GetOrCreateGlobalStepRead(GetDefaultGraph());
  if (!read_) FailedPrecondition("Global step should be created to use ProgressBarHook.");
}

void ProgressBarHook::AfterCreateSession(SessionInterface& session, Coordinator&) {
  const int64_t step = session.Run({}, {read_}, {})[0].scalar<int64_t>();
  if (!start_step_) {
    start_step_ = step;
    if (!options_.last_step && options_.num_steps) options_.last_step = step + *options_.num_steps;
    start_time_ = std::chrono::steady_clock::now();
    last_draw_ = start_time_;
  }
  last_step_seen_ = step;
}

std::optional<SessionRunArgs> ProgressBarHook::BeforeRun(SessionRunContext&) {
  const auto now = std::chrono::steady_clock::now();
  const auto interval = tty_ ? options_.redraw_interval : options_.plain_interval;
  due_ = now - last_draw_ >= interval;
  if (!due_) return std::nullopt;  // nothing fetched on steps that do not redraw
  SessionRunArgs args{{read_}, {}, {}, std::nullopt};
  for (const auto& [tag, tensor] : options_.tensors) args.fetches.push_back(tensor);
  return args;
}

void ProgressBarHook::AfterRun(SessionRunContext&, const SessionRunValues& values) {
  if (!due_) return;
  const int64_t step = values.results[0].scalar<int64_t>() + 1;  // stale by one step
  std::vector<std::pair<std::string, Tensor>> shown;
  for (size_t i = 0; i < options_.tensors.size(); ++i) {
    shown.emplace_back(options_.tensors[i].first, values.results[i + 1]);
  }
  Draw(step, shown, false);
}

HookSchedule ProgressBarHook::NextDue() const {
  return HookSchedule{.time = last_draw_ + (tty_ ? options_.redraw_interval : options_.plain_interval)};
}

void ProgressBarHook::End(SessionInterface& session) {
  const int64_t step = session.Run({}, {read_}, {})[0].scalar<int64_t>();
  std::vector<std::pair<std::string, Tensor>> shown;
  if (!options_.tensors.empty()) {
    std::vector<Output> fetches;
    for (const auto& [tag, tensor] : options_.tensors) fetches.push_back(tensor);
    try {
      std::vector<Tensor> values = session.Run({}, fetches, {});
      for (size_t i = 0; i < values.size(); ++i) shown.emplace_back(options_.tensors[i].first, values[i]);
    } catch (const Error&) {
      // Tensors that need fed input cannot be shown at the end; the counts still are.
    }
  }
  Draw(step, shown, true);
}

void ProgressBarHook::Draw(int64_t step, const std::vector<std::pair<std::string, Tensor>>& values,
                           bool final) {
  const auto now = std::chrono::steady_clock::now();
  last_draw_ = now;
  last_step_seen_ = step;
  const double elapsed = std::chrono::duration<double>(now - start_time_).count();
  const int64_t done = step - start_step_.value_or(0);
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  std::string line;
  if (options_.last_step) {
    const int64_t total = *options_.last_step;
    const double fraction = total > 0 ? std::clamp(static_cast<double>(step) / total, 0.0, 1.0) : 1.0;
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(fraction * kWidth);
      line += "[";
      for (int i = 0; i < kWidth; ++i) line += i < filled ? '=' : (i == filled ? '>' : ' ');
      line += "] ";
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%lld/%lld %3d%%", static_cast<long long>(step),
                  static_cast<long long>(total), static_cast<int>(fraction * 100 + 0.5));
    line += buf;
  } else {
    StrAppend(&line, "step ", step);
  }
  for (const auto& [tag, value] : values) StrAppend(&line, "  ", tag, " ", FormatScalar(value));
  char buf[64];
  std::snprintf(buf, sizeof(buf), "  %.1f steps/s", rate);
  line += buf;
  if (options_.last_step && rate > 0 && !final) {
    StrAppend(&line, "  ETA ", FormatDuration(static_cast<double>(*options_.last_step - step) / rate));
  }
  if (final) StrAppend(&line, "  done in ", FormatDuration(elapsed));
  last_line_ = line;
  if (tty_) {
    std::fprintf(options_.stream, "\r%s\033[K%s", line.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(options_.stream, "%s\n", line.c_str());
  }
  std::fflush(options_.stream);
}

}  // namespace flowtrain::train
