// GrpcSession: the session of a "grpc://host:port" target (TF's GrpcSession with the master
// in the client process). It asks the target server for the cluster, places and partitions
// the graph per Run signature (once: partitions are registered on their tasks and reused),
// and runs a step by calling every task of the signature at once. Tensors move between
// tasks only where an edge crosses them.
//
//   distributed::Server server({.cluster = cluster, .job_name = "worker", .task_index = 0});
//   std::unique_ptr<SessionInterface> sess = NewSession(graph, {.target = server.target()});
//   sess->Run({{x, batch}}, {loss}, {train_op});
//
// NewSession builds one for any "grpc://" target (the factory registers itself).
// The first run of a signature waits up to 60 s for its tasks to come up (workers may start
// before their ps). Errors: a task that cannot be reached raises Unavailable naming it and
// its address; a task that restarted or dropped the graph raises Aborted (a monitored
// session recovers from both); a kernel's error on any task arrives with its code and
// message. Close() cancels the steps in flight and releases the partitions on their tasks.
// A signature not run for half the time a task keeps idle partitions
// (ServerLimits::graph_idle_timeout) is registered again before its next step.
#ifndef FLOWTRAIN_DISTRIBUTED_GRPC_SESSION_H_
#define FLOWTRAIN_DISTRIBUTED_GRPC_SESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "flowtrain/distributed/cluster_spec.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain::distributed {

class GrpcSession : public SessionInterface {
 public:
  // Contacts the target server; Unavailable when it does not answer within 10 s.
  GrpcSession(Graph& graph, SessionOptions options);
  ~GrpcSession() override;  // Close()
  GrpcSession(const GrpcSession&) = delete;
  GrpcSession& operator=(const GrpcSession&) = delete;

  std::vector<Tensor> Run(const FeedList& feeds, const FetchList& fetches,
                          const std::vector<Operation>& targets, const RunOptions* run_options = nullptr,
                          RunMetadata* run_metadata = nullptr) override;
  Graph& graph() const override;
  void Close() override;

  // The cluster as the target server reported it.
  const ClusterSpec& cluster() const;
  // Signatures partitioned and registered so far.
  int num_registered_plans() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_GRPC_SESSION_H_
