// Splits the part of a Graph that one Run signature needs into a partition per task, as TF's
// master does (placement, then partitioning at task boundaries), for the "grpc://" session.
//
// Placement: a node goes where its requested device says ("/job:ps/task:1"); a node without a
// job goes to the session's own task, a job without a task to task 0. A node colocated with
// another (attr `_class: loc:@op`) or taking a reference or resource-handle input goes where
// that node goes, as TF's placer keeps such edges within a device.
//
// Stages: every node gets the smallest stage number not below any input's stage, plus one
// for an input on another task. A task's partition runs its stages in order; a stage waits
// for the tensors pushed to it from other tasks' earlier stages, so no step can deadlock.
// Input-less nodes (constants, variables) are copied into each stage that uses them instead
// of moving their outputs between stages; copies of a variable share it by `shared_name`.
//
// Control flow: a while loop's nodes (its Enters too) must sit on one task and share one
// stage, its frame living in one executor run there. Tensors that can be dead (an untaken
// cond branch's) cross tasks as such: their stage inputs say `may_be_dead`, and a control
// edge to another task from such a node goes as a constant gated by it.
//
//   PartitionPlan plan = PartitionGraph(graph, feeds, fetches, targets,
//                                       {.cluster = cluster, .default_job = "worker"});
//   for (auto& [task, partition] : plan.partitions) ... RegisterGraph(partition.request) ...
#ifndef FLOWTRAIN_DISTRIBUTED_INTERNAL_PARTITION_H_
#define FLOWTRAIN_DISTRIBUTED_INTERNAL_PARTITION_H_

#include <compare>
#include <map>
#include <string>
#include <vector>

#include "flowtrain/distributed/cluster_spec.h"
#include "flowtrain/distributed/worker_service.pb.h"
#include "flowtrain/graph/graph.h"

namespace flowtrain::distributed {

struct TaskId {
  std::string job;
  int index = 0;
  auto operator<=>(const TaskId&) const = default;
  std::string name() const { return TaskName(job, index); }
};

struct TaskPartition {
  RegisterGraphRequest request;   // the partition graph and its stages
  std::vector<int> feed_indices;  // the master's feeds this task reads, ascending
};

struct PartitionPlan {
  std::map<TaskId, TaskPartition> partitions;
  // Per fetch: the index of the feed it is (a fed tensor is returned as fed), or -1.
  std::vector<int> fetch_is_feed;
};

struct PartitionOptions {
  ClusterSpec cluster;
  TaskId default_task;                // the task of nodes that name no job
  bool allow_soft_placement = false;  // GPU requests fall back to the task's CPU
};

// Throws InvalidArgument for a device outside the cluster, a reference or handle from another
// task, a cycle that is not a while loop's, and a while loop spanning tasks (naming the
// loop's frame and the tasks).
PartitionPlan PartitionGraph(const Graph& graph, const std::vector<Endpoint>& feeds,
                             const std::vector<Endpoint>& fetches, const std::vector<const Node*>& targets,
                             const PartitionOptions& options);

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_INTERNAL_PARTITION_H_
