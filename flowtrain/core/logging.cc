#include "flowtrain/core/logging.h"

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace flowtrain {
namespace {

// Constant-initialized, so logging from another file's static initializer finds it ready.
ABSL_CONST_INIT absl::Mutex sink_mu(absl::kConstInit);

// Debian builds Abseil without NDEBUG, which leaves absl::Mutex's deadlock detection on:
// every acquisition updates a process-wide lock-order graph under a global spin lock (several
// times the cost of an uncontended lock), and a lock order once seen in each direction aborts
// the process even if the two can never run at the same time. The locks replaced std::mutex,
// which did neither, so the detection is switched off when the library starts. Here because
// this file is in every program that uses the runtime (which logs).
[[maybe_unused]] const bool kDeadlockDetectionOff = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();

LogSink& Sink() ABSL_EXCLUSIVE_LOCKS_REQUIRED(sink_mu) {
  static LogSink* sink = new LogSink();
  return *sink;
}

int InitialMinLevel() {
  const char* env = std::getenv("FLOWTRAIN_MIN_LOG_LEVEL");
  if (env == nullptr) return 0;
  return std::atoi(env);
}

std::atomic<int>& MinLevel() {
  static std::atomic<int> level{InitialMinLevel()};
  return level;
}

const char* Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

void SetLogSink(LogSink sink) {
  absl::MutexLock lock(&sink_mu);
  Sink() = std::move(sink);
}

void SetMinLogLevel(LogSeverity level) { MinLevel().store(static_cast<int>(level)); }

bool LogLevelEnabled(LogSeverity level) {
  return static_cast<int>(level) >= MinLevel().load(std::memory_order_relaxed) ||
         level == LogSeverity::kFatal;
}

namespace logging_internal {

LogMessage::LogMessage(const char* file, int line, LogSeverity severity)
    : file_(file), line_(line), severity_(severity) {}

LogMessage::~LogMessage() {
  timeval now;
  gettimeofday(&now, nullptr);
  tm local;
  localtime_r(&now.tv_sec, &local);
  static constexpr char kLetters[] = {'I', 'W', 'E', 'F'};
  char prefix[128];
  std::snprintf(prefix, sizeof(prefix), "%c%02d%02d %02d:%02d:%02d.%06d %d %s:%d] ",
                kLetters[static_cast<int>(severity_)], local.tm_mon + 1, local.tm_mday, local.tm_hour,
                local.tm_min, local.tm_sec, static_cast<int>(now.tv_usec), static_cast<int>(gettid()),
                Basename(file_), line_);
  const std::string line = prefix + stream_.str();
  {
    absl::MutexLock lock(&sink_mu);
    if (Sink()) {
      Sink()(severity_, line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  if (severity_ == LogSeverity::kFatal) std::abort();
}

}  // namespace logging_internal
}  // namespace flowtrain
