#include "flowtrain/io/event_file_list.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "flowtrain/core/file_util.h"

namespace flowtrain::io {
namespace fs = std::filesystem;

bool IsEventFileName(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return name.find("tfevents") != std::string_view::npos;
}

std::vector<std::string> ListEventFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const std::string& name : ListDirectory(dir)) {
    if (!IsEventFileName(name)) continue;
    const std::string path = JoinPath(dir, name);
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) files.push_back(path);
  }
  return files;  // ListDirectory sorts
}

std::vector<EventRun> ListEventRuns(const std::string& logdir) {
  std::vector<EventRun> runs;
  std::error_code ec;
  if (!fs::is_directory(logdir, ec)) return runs;
  std::vector<std::string> dirs = {logdir};
  // Unreadable subdirectories are skipped rather than failing the whole listing: TensorBoard
  // shows what it can read.
  for (fs::recursive_directory_iterator it(logdir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) dirs.push_back(it->path().string());
  }
  for (const std::string& dir : dirs) {
    std::vector<std::string> files;
    try {
      files = ListEventFiles(dir);
    } catch (const std::exception&) {
      continue;  // vanished or unreadable since the walk
    }
    if (files.empty()) continue;
    const fs::path relative = fs::relative(dir, logdir, ec);
    std::string name = ec || relative.empty() ? std::string(".") : relative.string();
    runs.push_back({std::move(name), dir, std::move(files)});
  }
  std::sort(runs.begin(), runs.end(), [](const EventRun& a, const EventRun& b) { return a.name < b.name; });
  return runs;
}

}  // namespace flowtrain::io
