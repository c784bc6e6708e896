// How `flowtrain events` prints numbers, times and session log statuses, in its text output
// and on its HTML page alike.
//
//   std::printf("%s at %s\n", FormatNumber(0.1234567).c_str(), FormatTime(1567052932.5).c_str());
//   // 0.123457 at 2019-08-29 04:28:52.500
#ifndef FLOWTRAIN_TOOLS_EVENTS_FORMAT_H_
#define FLOWTRAIN_TOOLS_EVENTS_FORMAT_H_

#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>

#include "flowtrain/proto/event.pb.h"

namespace flowtrain::tools {

// Six significant digits, as summaries are float32.
inline std::string FormatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// A wall time as UTC to the millisecond.
inline std::string FormatTime(double wall_time) {
  const auto secs = static_cast<std::time_t>(wall_time);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  const int millis = static_cast<int>((wall_time - std::floor(wall_time)) * 1000);
  char out[80];
  std::snprintf(out, sizeof(out), "%s.%03d", buf, millis);
  return out;
}

// "start", "stop", "checkpoint" or "unspecified".
inline const char* SessionStatusName(int status) {
  switch (status) {
    case tensorflow::SessionLog::START:
      return "start";
    case tensorflow::SessionLog::STOP:
      return "stop";
    case tensorflow::SessionLog::CHECKPOINT:
      return "checkpoint";
    default:
      return "unspecified";
  }
}

}  // namespace flowtrain::tools

#endif  // FLOWTRAIN_TOOLS_EVENTS_FORMAT_H_
