// The cluster and this process's task in it, as the cluster managers users run describe them
// in the environment (TF's TFConfigClusterResolver and SlurmClusterResolver):
//
//   - TF_CONFIG (Kubeflow's TFJob, SageMaker, TF's Estimator): JSON with "cluster" (job name
//     to a list of "host:port"), "task" ({"type": "worker", "index": 1}) and optionally
//     "rpc_layer";
//   - Slurm (srun): SLURM_PROCID (this task's rank), SLURM_STEP_NODELIST ("node[01-03],gpu7"),
//     SLURM_STEP_TASKS_PER_NODE ("2(x3),1") and SLURM_STEP_NUM_TASKS, or the job-wide
//     SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE and SLURM_NTASKS outside a step.
//
//   std::optional<distributed::ResolvedCluster> resolved = distributed::ResolveClusterFromEnvironment();
//   if (resolved) {
//     distributed::Server server({.cluster = resolved->cluster, .job_name = resolved->job_name,
//                                 .task_index = resolved->task_index});
//     ... MonitoredTrainingSession with master = server.target(), is_chief = resolved->is_chief()
//   }
//
// Slurm's tasks are laid out as TF lays them out: nodes in sorted order, a node's tasks on
// ports port_base, port_base + 1, ...; the jobs (sorted by name) take consecutive ranks of
// that list, so with jobs {ps: 1, worker: 3} rank 0 is /job:ps/task:0 and rank 1
// /job:worker/task:0. A range keeps its zero padding ("n[08-10]": n08 n09 n10) as in Slurm and
// TF; a host may hold several bracket groups ("r[1-2]-n[1-2]"), which TF's expansion refuses.
//
// Errors: InvalidArgument naming the variable and what in it is malformed (JSON that does
// not parse, a task missing from the cluster, a hostlist or tasks-per-node list that does not
// parse or disagree, jobs that do not add up to the step's tasks).
#ifndef FLOWTRAIN_DISTRIBUTED_CLUSTER_RESOLVER_H_
#define FLOWTRAIN_DISTRIBUTED_CLUSTER_RESOLVER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/distributed/cluster_spec.h"

namespace flowtrain::distributed {

struct ResolvedCluster {
  ClusterSpec cluster;
  std::string job_name;
  int task_index = 0;
  std::string rpc_layer = "grpc";
  std::string source;  // "TF_CONFIG" or "Slurm"

  // TF's rule (RunConfig): the task of job "chief" (or "master"), else worker 0 of a
  // cluster with neither.
  bool is_chief() const;
};

struct SlurmOptions {
  // Job name to its number of tasks, summing to the step's tasks; empty: all "worker".
  std::map<std::string, int> jobs;
  // The port of a node's first task.
  int port_base = 8888;
};

// Reads a variable of the environment; nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
// The process's environment.
std::optional<std::string> GetEnvironmentVariable(const std::string& name);

// TF_CONFIG when set and naming a cluster, else Slurm when SLURM_PROCID is set, else nullopt.
std::optional<ResolvedCluster> ResolveClusterFromEnvironment(
    const SlurmOptions& slurm = {}, const EnvironmentLookup& env = GetEnvironmentVariable);

// The parts, for callers that know which manager they run under. A TF_CONFIG without
// "cluster" resolves to nullopt (TF's single-process default).
std::optional<ResolvedCluster> ResolveTfConfig(std::string_view tf_config);
ResolvedCluster ResolveSlurm(const SlurmOptions& options,
                             const EnvironmentLookup& env = GetEnvironmentVariable);

// Slurm's list syntaxes: "n[1-3,07],m5" -> n1 n2 n3 n07 m5 (order kept, numbers as wide as
// the range's lower bound); "3(x2),2" -> 3 3 2.
std::vector<std::string> ExpandSlurmHostlist(std::string_view hostlist);
std::vector<int> ExpandSlurmTasksPerNode(std::string_view tasks_per_node);

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_CLUSTER_RESOLVER_H_
