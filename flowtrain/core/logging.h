// Minimal leveled logging in TF's line format, written to stderr:
//   I1130 04:07:36.123456 12345 session.cc:42] Restoring parameters from runs/x/model.ckpt-10
//
//   FT_LOG(INFO) << "Saving checkpoints for " << step << " into " << path;
//   FT_LOG(WARNING) << "...";
//
// The minimum level comes from FLOWTRAIN_MIN_LOG_LEVEL (0 INFO, 1 WARNING, 2 ERROR), as
// TF_CPP_MIN_LOG_LEVEL does for TF. Tests capture lines with SetLogSink.
#ifndef FLOWTRAIN_CORE_LOGGING_H_
#define FLOWTRAIN_CORE_LOGGING_H_

#include <functional>
#include <sstream>
#include <string>

namespace flowtrain {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2, kFatal = 3 };

// Receives every emitted line (without the trailing newline). nullptr restores stderr.
using LogSink = std::function<void(LogSeverity, const std::string&)>;
void SetLogSink(LogSink sink);
void SetMinLogLevel(LogSeverity level);
bool LogLevelEnabled(LogSeverity level);

namespace logging_internal {

class LogMessage {
 public:
  LogMessage(const char* file, int line, LogSeverity severity);
  ~LogMessage();  // emits the line; kFatal aborts
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  LogSeverity severity_;
  std::ostringstream stream_;
};

// Swallows the stream when the level is disabled, so arguments are not formatted.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace logging_internal
}  // namespace flowtrain

#define FT_LOG_SEVERITY_INFO ::flowtrain::LogSeverity::kInfo
#define FT_LOG_SEVERITY_WARNING ::flowtrain::LogSeverity::kWarning
#define FT_LOG_SEVERITY_ERROR ::flowtrain::LogSeverity::kError
#define FT_LOG_SEVERITY_FATAL ::flowtrain::LogSeverity::kFatal

#define FT_LOG(severity)                                                                              \
  !::flowtrain::LogLevelEnabled(FT_LOG_SEVERITY_##severity)                                           \
      ? (void)0                                                                                       \
      : ::flowtrain::logging_internal::Voidify() &                                                    \
            ::flowtrain::logging_internal::LogMessage(__FILE__, __LINE__, FT_LOG_SEVERITY_##severity) \
                .stream()

#endif  // FLOWTRAIN_CORE_LOGGING_H_
