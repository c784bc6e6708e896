// Finds event files the way TensorBoard does: any file whose name contains "tfevents" is one,
// and every directory under the logdir holding such files is a "run", named by its path
// relative to the logdir ("." for the logdir itself). Within a run, files sort by name, which
// (thanks to the 10-digit timestamp) is the order they were written in.
//
//   for (const EventRun& run : ListEventRuns("runs")) {
//     for (const std::string& file : run.files) {
//       for (const tensorflow::Event& event : ReadEventFile(file)) ...
//     }
//   }
#ifndef FLOWTRAIN_IO_EVENT_FILE_LIST_H_
#define FLOWTRAIN_IO_EVENT_FILE_LIST_H_

#include <string>
#include <string_view>
#include <vector>

namespace flowtrain::io {

// True when the last path component contains "tfevents".
bool IsEventFileName(std::string_view path);

// Paths of the event files directly inside `dir`, sorted by name. NotFound if `dir` is missing.
std::vector<std::string> ListEventFiles(const std::string& dir);

struct EventRun {
  std::string name;                // path relative to the logdir, "." for the logdir itself
  std::string dir;                 // the run's directory
  std::vector<std::string> files;  // its event files, sorted by name
};

// Every run under `logdir` (recursively), sorted by name. A logdir that does not exist yet
// has no runs, as TensorBoard waits for it to appear.
std::vector<EventRun> ListEventRuns(const std::string& logdir);

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_EVENT_FILE_LIST_H_
