#include "flowtrain/distributed/cluster_resolver.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::distributed {
namespace {

// More hosts or tasks than any cluster has: a list claiming them is malformed, not allocated.
constexpr int64_t kMaxTasks = 1 << 16;

// The non-negative integer `text` is, or -1.
int64_t ParseCount(std::string_view text) {
  int64_t value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return -1;
  return value;
}

// Splits at `separator` outside brackets.
std::vector<std::string_view> SplitOutsideBrackets(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']') --depth;
    if (text[i] == separator && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

[[noreturn]] void BadHostlist(std::string_view hostlist, std::string_view why) {
  InvalidArgument("Slurm hostlist '", hostlist, "': ", why);
}

// The values of one bracket's contents, "1-3,07": 1 2 3 07 (zero-padded to the width of the
// range's lower bound, as Slurm pads node names).
std::vector<std::string> ExpandRanges(std::string_view ranges, std::string_view hostlist) {
  std::vector<std::string> values;
  for (std::string_view range : SplitOutsideBrackets(ranges, ',')) {
    const size_t dash = range.find('-');
    const std::string_view low = range.substr(0, dash);
    const std::string_view high = dash == std::string_view::npos ? low : range.substr(dash + 1);
    const int64_t first = ParseCount(low);
    const int64_t last = ParseCount(high);
    if (first < 0 || last < first) BadHostlist(hostlist, StrCat("'", range, "' is not a range of numbers"));
    if (last - first >= kMaxTasks) BadHostlist(hostlist, StrCat("range '", range, "' is too long"));
    const size_t width = low.size();
    for (int64_t v = first; v <= last; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      values.push_back(std::move(digits));
    }
  }
  return values;
}

// One host expression with any number of bracket groups: "rack[1-2]-n[01-02]".
void ExpandHost(std::string_view host, std::string_view hostlist, std::vector<std::string>* out) {
  std::vector<std::string> names = {""};
  while (!host.empty()) {
    const size_t open = host.find('[');
    const std::string_view literal = host.substr(0, open);
    if (literal.find(']') != std::string_view::npos) BadHostlist(hostlist, "']' without '['");
    for (std::string& name : names) name.append(literal);
    if (open == std::string_view::npos) break;
    const size_t close = host.find(']', open);
    if (close == std::string_view::npos) BadHostlist(hostlist, "'[' without ']'");
    const std::vector<std::string> values = ExpandRanges(host.substr(open + 1, close - open - 1), hostlist);
    if (static_cast<int64_t>(names.size()) * static_cast<int64_t>(values.size()) > kMaxTasks) {
      BadHostlist(hostlist, StrCat("more than ", kMaxTasks, " hosts"));
    }
    std::vector<std::string> expanded;
    for (const std::string& name : names) {
      for (const std::string& value : values) expanded.push_back(name + value);
    }
    names = std::move(expanded);
    host.remove_prefix(close + 1);
  }
  if (names.front().empty()) BadHostlist(hostlist, "empty host name");
  if (static_cast<int64_t>(out->size() + names.size()) > kMaxTasks) {
    BadHostlist(hostlist, StrCat("more than ", kMaxTasks, " hosts"));
  }
  out->insert(out->end(), names.begin(), names.end());
}

std::string RequiredVariable(const EnvironmentLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::optional<std::string> value = env(name)) return *value;
  }
  InvalidArgument("Slurm: ", StrJoin(std::vector<std::string>(names.begin(), names.end()), " or "),
                  " is not set (not running inside a Slurm step?)");
}

int64_t CountVariable(const EnvironmentLookup& env, std::initializer_list<const char*> names) {
  const std::string value = RequiredVariable(env, names);
  const int64_t count = ParseCount(value);
  if (count < 0 || count > kMaxTasks) {
    InvalidArgument("Slurm: ", *names.begin(), "='", value, "' is not a task count");
  }
  return count;
}

// The string at `key` of a JSON object, or nullopt; InvalidArgument when it is not a string.
std::optional<std::string> StringField(const google::protobuf::Struct& object, const std::string& key,
                                       std::string_view where) {
  auto it = object.fields().find(key);
  if (it == object.fields().end()) return std::nullopt;
  if (it->second.kind_case() != google::protobuf::Value::kStringValue) {
    InvalidArgument("TF_CONFIG: ", where, key, " is not a string");
  }
  return it->second.string_value();
}

}  // namespace

bool ResolvedCluster::is_chief() const {
  if (job_name == "chief" || job_name == "master") return true;
  return job_name == "worker" && task_index == 0 && !cluster.has_job("chief") && !cluster.has_job("master");
}

std::optional<std::string> GetEnvironmentVariable(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::vector<std::string> ExpandSlurmHostlist(std::string_view hostlist) {
  std::vector<std::string> hosts;
  for (std::string_view host : SplitOutsideBrackets(hostlist, ',')) ExpandHost(host, hostlist, &hosts);
  return hosts;
}

std::vector<int> ExpandSlurmTasksPerNode(std::string_view tasks_per_node) {
  std::vector<int> counts;
  for (std::string_view part : SplitOutsideBrackets(tasks_per_node, ',')) {
    int64_t repeat = 1;
    const size_t paren = part.find('(');
    if (paren != std::string_view::npos) {
      const std::string_view times = part.substr(paren);
      repeat = times.size() > 3 && times.substr(0, 2) == "(x" && times.back() == ')'
                   ? ParseCount(times.substr(2, times.size() - 3))
                   : -1;
      part = part.substr(0, paren);
    }
    const int64_t count = ParseCount(part);
    if (count < 0 || repeat < 0 || count > kMaxTasks ||
        static_cast<int64_t>(counts.size()) + repeat > kMaxTasks) {
      InvalidArgument("Slurm tasks-per-node list '", tasks_per_node, "': '", part,
                      "' is not N or N(xR) with a sensible N and R");
    }
    counts.insert(counts.end(), repeat, static_cast<int>(count));
  }
  return counts;
}

std::optional<ResolvedCluster> ResolveTfConfig(std::string_view tf_config) {
  google::protobuf::Struct config;
  const auto parsed = google::protobuf::util::JsonStringToMessage(std::string(tf_config), &config);
  if (!parsed.ok()) InvalidArgument("TF_CONFIG is not a JSON object: ", parsed.ToString());
  auto cluster_field = config.fields().find("cluster");
  if (cluster_field == config.fields().end()) return std::nullopt;
  if (cluster_field->second.kind_case() != google::protobuf::Value::kStructValue) {
    InvalidArgument("TF_CONFIG: cluster is not an object of job names to address lists");
  }
  std::map<std::string, std::vector<std::string>> jobs;
  for (const auto& [job, tasks] : cluster_field->second.struct_value().fields()) {
    if (tasks.kind_case() != google::protobuf::Value::kListValue) {
      InvalidArgument("TF_CONFIG: cluster.", job, " is not a list of \"host:port\" (a job given as an ",
                      "object of task indices is not supported)");
    }
    for (const google::protobuf::Value& address : tasks.list_value().values()) {
      if (address.kind_case() != google::protobuf::Value::kStringValue) {
        InvalidArgument("TF_CONFIG: cluster.", job, " holds something that is not a \"host:port\" string");
      }
      jobs[job].push_back(address.string_value());
    }
  }
  if (jobs.empty()) return std::nullopt;
  ResolvedCluster resolved{.cluster = ClusterSpec(std::move(jobs)), .source = "TF_CONFIG"};
  auto task_field = config.fields().find("task");
  if (task_field == config.fields().end() ||
      task_field->second.kind_case() != google::protobuf::Value::kStructValue) {
    InvalidArgument("TF_CONFIG has a cluster but no task object ({\"type\": ..., \"index\": ...})");
  }
  const google::protobuf::Struct& task = task_field->second.struct_value();
  std::optional<std::string> type = StringField(task, "type", "task.");
  if (!type || type->empty()) InvalidArgument("TF_CONFIG: task.type is missing");
  resolved.job_name = *type;
  auto index = task.fields().find("index");
  if (index != task.fields().end()) {
    // TF accepts the index as a number or as a string of digits.
    const google::protobuf::Value& value = index->second;
    const int64_t parsed_index = value.kind_case() == google::protobuf::Value::kNumberValue &&
                                         value.number_value() == static_cast<int64_t>(value.number_value())
                                     ? static_cast<int64_t>(value.number_value())
                                 : value.kind_case() == google::protobuf::Value::kStringValue
                                     ? ParseCount(value.string_value())
                                     : -1;
    if (parsed_index < 0 || parsed_index > kMaxTasks) {
      InvalidArgument("TF_CONFIG: task.index is not a task index");
    }
    resolved.task_index = static_cast<int>(parsed_index);
  }
  // TF's evaluator runs beside the cluster, not in it.
  if (resolved.job_name != "evaluator" &&
      resolved.task_index >= resolved.cluster.num_tasks(resolved.job_name)) {
    InvalidArgument("TF_CONFIG: task ", resolved.job_name, ":", resolved.task_index,
                    " is not in its cluster ", resolved.cluster.ToString());
  }
  if (std::optional<std::string> rpc_layer = StringField(config, "rpc_layer", "")) {
    if (*rpc_layer != "grpc") {
      InvalidArgument("TF_CONFIG: rpc_layer '", *rpc_layer, "' is not supported (flowtrain speaks grpc)");
    }
  }
  return resolved;
}

ResolvedCluster ResolveSlurm(const SlurmOptions& options, const EnvironmentLookup& env) {
  const int64_t rank = CountVariable(env, {"SLURM_PROCID"});
  const std::string nodelist = RequiredVariable(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"});
  const std::string tasks_per_node_list =
      RequiredVariable(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  const std::vector<std::string> hosts = ExpandSlurmHostlist(nodelist);
  const std::vector<int> tasks_per_node = ExpandSlurmTasksPerNode(tasks_per_node_list);
  if (hosts.size() != tasks_per_node.size()) {
    InvalidArgument("Slurm: the node list '", nodelist, "' names ", hosts.size(),
                    " nodes but the tasks per node '", tasks_per_node_list, "' ", tasks_per_node.size());
  }
  // Nodes in sorted order, each node's tasks on consecutive ports (TF's layout).
  std::vector<std::pair<std::string, int>> nodes;
  for (size_t i = 0; i < hosts.size(); ++i) nodes.emplace_back(hosts[i], tasks_per_node[i]);
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::string> addresses;
  for (const auto& [host, count] : nodes) {
    if (options.port_base < 1 || options.port_base + count - 1 > 65535) {
      InvalidArgument("Slurm: ", count, " tasks on ", host, " from port ", options.port_base,
                      " do not fit in ports 1-65535");
    }
    for (int i = 0; i < count; ++i) addresses.push_back(StrCat(host, ":", options.port_base + i));
  }
  const int64_t num_tasks = env("SLURM_STEP_NUM_TASKS") || env("SLURM_NTASKS")
                                ? CountVariable(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"})
                                : static_cast<int64_t>(addresses.size());
  if (num_tasks != static_cast<int64_t>(addresses.size())) {
    InvalidArgument("Slurm: the step has ", num_tasks, " tasks but its tasks per node '", tasks_per_node_list,
                    "' add up to ", addresses.size());
  }
  std::map<std::string, int> jobs = options.jobs;
  if (jobs.empty()) jobs["worker"] = static_cast<int>(num_tasks);
  int64_t requested = 0;
  for (const auto& [job, count] : jobs) {
    if (count <= 0) InvalidArgument("SlurmOptions: job '", job, "' has ", count, " tasks");
    requested += count;
  }
  if (requested != num_tasks) {
    InvalidArgument("SlurmOptions: the jobs ask for ", requested, " tasks but the Slurm step has ",
                    num_tasks);
  }
  if (rank >= num_tasks)
    InvalidArgument("Slurm: SLURM_PROCID ", rank, " is not below the step's ", num_tasks, " tasks");
  ResolvedCluster resolved{.source = "Slurm"};
  std::map<std::string, std::vector<std::string>> spec;
  int64_t first = 0;
  for (const auto& [job, count] : jobs) {  // sorted by name
    spec[job].assign(addresses.begin() + first, addresses.begin() + first + count);
    if (rank >= first && rank < first + count) {
      resolved.job_name = job;
      resolved.task_index = static_cast<int>(rank - first);
    }
    first += count;
  }
  resolved.cluster = ClusterSpec(std::move(spec));
  return resolved;
}

std::optional<ResolvedCluster> ResolveClusterFromEnvironment(const SlurmOptions& slurm,
                                                             const EnvironmentLookup& env) {
  if (std::optional<std::string> tf_config = env("TF_CONFIG"); tf_config && !tf_config->empty()) {
    if (std::optional<ResolvedCluster> resolved = ResolveTfConfig(*tf_config)) return resolved;
  }
  if (env("SLURM_PROCID")) return ResolveSlurm(slurm, env);
  return std::nullopt;
}

ClusterSpec ClusterSpec::FromEnvironment() {
  std::optional<ResolvedCluster> resolved = ResolveClusterFromEnvironment();
  if (!resolved) NotFound("No cluster in the environment: neither TF_CONFIG nor Slurm's SLURM_PROCID is set");
  return resolved->cluster;
}

}  // namespace flowtrain::distributed
