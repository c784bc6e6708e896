// ClusterSpec: the tasks of a distributed training cluster, as TF's tf.train.ClusterSpec — each
// job ("ps", "worker") maps to its tasks' addresses in task order.
//
//   ClusterSpec cluster = ClusterSpec::Parse("ps=localhost:2222;worker=localhost:2223,localhost:2224");
//   cluster.num_tasks("worker") == 2;
//   cluster.task_address("worker", 1) == "localhost:2224";
//   ClusterSpec::Parse(cluster.ToString()) == cluster;
//
// An address may use port 0 (see Server: it binds an ephemeral port and reports it).
#ifndef FLOWTRAIN_DISTRIBUTED_CLUSTER_SPEC_H_
#define FLOWTRAIN_DISTRIBUTED_CLUSTER_SPEC_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace flowtrain::distributed {

class ClusterSpec {
 public:
  ClusterSpec() = default;
  // From job name to the addresses of its tasks, task 0 first.
  explicit ClusterSpec(std::map<std::string, std::vector<std::string>> jobs);

  // Parses "job=host:port,host:port;job=host:port". Throws InvalidArgument naming what is
  // malformed: an empty or repeated job, a job without tasks, an address without a port.
  static ClusterSpec Parse(std::string_view text);
  // The cluster TF_CONFIG or Slurm's variables describe (ResolveClusterFromEnvironment in
  // cluster_resolver.h, which also gives this process's task); NotFound when neither is set,
  // InvalidArgument naming what is malformed.
  static ClusterSpec FromEnvironment();

  // Job names in sorted order.
  std::vector<std::string> jobs() const;
  bool has_job(std::string_view job) const;
  // 0 for a job not in the cluster.
  int num_tasks(std::string_view job) const;
  // Throws InvalidArgument when the job or task is not in the cluster.
  const std::string& task_address(std::string_view job, int task_index) const;
  // Replaces one task's address (how a server publishes the port it bound for port 0).
  void set_task_address(std::string_view job, int task_index, std::string address);

  // The Parse syntax, jobs sorted by name.
  std::string ToString() const;
  bool operator==(const ClusterSpec&) const = default;

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> jobs_;
};

// "/job:NAME/replica:0/task:INDEX", TF's name of a task.
std::string TaskName(std::string_view job, int task_index);

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_CLUSTER_SPEC_H_
