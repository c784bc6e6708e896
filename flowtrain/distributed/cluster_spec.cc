#include "flowtrain/distributed/cluster_spec.h"

#include <charconv>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::distributed {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool ValidJobName(std::string_view job) {
  if (job.empty()) return false;
  for (char c : job) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

void CheckAddress(std::string_view job, std::string_view address, std::string_view text) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon != std::string_view::npos && colon > 0) {
    std::string_view digits = address.substr(colon + 1);
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) port = -1;
  }
  if (port < 0 || port > 65535) {
    InvalidArgument("ClusterSpec '", text, "': address '", address, "' of job '", job, "' is not host:port");
  }
}

}  // namespace

ClusterSpec::ClusterSpec(std::map<std::string, std::vector<std::string>> jobs) {
  for (auto& [job, tasks] : jobs) {
    if (!ValidJobName(job)) InvalidArgument("ClusterSpec: bad job name '", job, "'");
    if (tasks.empty()) InvalidArgument("ClusterSpec: job '", job, "' has no tasks");
    for (const std::string& address : tasks) CheckAddress(job, address, job);
    jobs_.emplace(job, std::move(tasks));
  }
}

ClusterSpec ClusterSpec::Parse(std::string_view text) {
  ClusterSpec spec;
  if (Trim(text).empty()) InvalidArgument("ClusterSpec is empty: expected 'job=host:port,...;...'");
  for (std::string_view entry : Split(text, ';')) {
    entry = Trim(entry);
    if (entry.empty()) continue;  // a trailing ';'
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      InvalidArgument("ClusterSpec '", text, "': '", entry, "' is not job=host:port,...");
    }
    const std::string_view job = Trim(entry.substr(0, eq));
    if (!ValidJobName(job)) InvalidArgument("ClusterSpec '", text, "': bad job name '", job, "'");
    if (spec.jobs_.count(job) != 0) InvalidArgument("ClusterSpec '", text, "': job '", job, "' repeated");
    std::vector<std::string> tasks;
    for (std::string_view address : Split(entry.substr(eq + 1), ',')) {
      address = Trim(address);
      if (address.empty()) InvalidArgument("ClusterSpec '", text, "': job '", job, "' has an empty address");
      CheckAddress(job, address, text);
      tasks.emplace_back(address);
    }
    spec.jobs_.emplace(std::string(job), std::move(tasks));
  }
  if (spec.jobs_.empty()) InvalidArgument("ClusterSpec '", text, "' names no job");
  return spec;
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  for (const auto& [job, tasks] : jobs_) names.push_back(job);
  return names;
}

bool ClusterSpec::has_job(std::string_view job) const { return jobs_.find(job) != jobs_.end(); }

int ClusterSpec::num_tasks(std::string_view job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

const std::string& ClusterSpec::task_address(std::string_view job, int task_index) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) {
    InvalidArgument("Job '", job, "' is not in the cluster (jobs: ", StrJoin(jobs(), ", "), ")");
  }
  if (task_index < 0 || task_index >= static_cast<int>(it->second.size())) {
    InvalidArgument("Task ", task_index, " of job '", job, "' is not in the cluster (the job has ",
                    it->second.size(), " tasks)");
  }
  return it->second[task_index];
}

void ClusterSpec::set_task_address(std::string_view job, int task_index, std::string address) {
  task_address(job, task_index);  // checks that the task exists
  CheckAddress(job, address, address);
  jobs_.find(job)->second[task_index] = std::move(address);
}

std::string ClusterSpec::ToString() const {
  std::vector<std::string> entries;
  for (const auto& [job, tasks] : jobs_) entries.push_back(StrCat(job, "=", StrJoin(tasks, ",")));
  return StrJoin(entries, ";");
}

std::string TaskName(std::string_view job, int task_index) {
  return StrCat("/job:", job, "/replica:0/task:", task_index);
}

}  // namespace flowtrain::distributed
