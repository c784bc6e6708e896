// Server: one task of a distributed cluster (TF's tf.train.Server). It serves the worker
// service over gRPC on its address in the cluster, holds the task's resource manager (the
// variables of every session and graph that runs on it; they outlive those sessions and
// are lost when the server stops), and is the target of that task's sessions.
//
//   distributed::ClusterSpec cluster = distributed::ClusterSpec::Parse(
//       "ps=localhost:2222;worker=localhost:2223,localhost:2224");
//   distributed::Server server({.cluster = cluster, .job_name = "worker", .task_index = 0});
//   auto sess = NewSession(graph, {.target = server.target()});   // "grpc://localhost:2223"
//   ...
//   server.Join();   // a ps task: serve until Stop() or until the chief ends the job
//
// Port 0 in the task's address binds an ephemeral port; bound_address() and target() report
// it. Tests use CreateLocalCluster, which starts servers on ephemeral ports and gives every
// one the final ClusterSpec. The server binds only the host it is given (localhost stays on
// loopback).
#ifndef FLOWTRAIN_DISTRIBUTED_SERVER_H_
#define FLOWTRAIN_DISTRIBUTED_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flowtrain/distributed/cluster_spec.h"
#include "flowtrain/distributed/transport_security.h"
#include "flowtrain/framework/resource_mgr.h"

namespace flowtrain::distributed {

// Bounds on what clients can make a server hold, so that requests of a stranger, of a
// session that crashed or of a step that never runs cannot grow it until it is killed for
// memory (docs/design.md §5.1). The defaults are far above what a training job needs; a
// request beyond a limit fails with ResourceExhausted naming it.
struct ServerLimits {
  // Graph partitions registered at once (RegisterGraph), and the sum of the sizes of their
  // serialized registrations.
  int max_registered_graphs = 4096;
  int64_t max_registered_graph_bytes = int64_t{4} << 30;
  // A partition no step has run for this long is dropped (its session crashed or left
  // without closing); a GrpcSession registers its partition again before using it after such
  // a pause, so a session that merely idles never notices. Zero: never.
  std::chrono::milliseconds graph_idle_timeout = std::chrono::minutes(30);
  // Tensors sent (SendTensors) to a step before it started on this task: at most this many
  // bytes per step and in total (tensor data, plus a little per key and step), dropped when
  // the step has not started within orphan_step_timeout (its master failed before starting
  // it here); the step's RunStep arriving later then fails with Aborted.
  int64_t max_pending_step_bytes = int64_t{4} << 30;
  int64_t max_pending_bytes = int64_t{8} << 30;
  std::chrono::milliseconds orphan_step_timeout = std::chrono::seconds(60);
};

struct ServerOptions {
  ClusterSpec cluster;
  std::string job_name;
  int task_index = 0;
  // Start serving in the constructor.
  bool start = true;
  // Threads a kernel may split its work across; 0 = one per core.
  int intra_op_parallelism_threads = 0;
  ServerLimits limits;
  // TLS and the token its clients must present (default: plaintext, anyone served). Sessions
  // of this process on this server's target use it too (SetClientSecurity).
  TransportSecurity security;
};

// What a server holds for its clients right now (Server::GetStats), to watch the limits.
struct ServerStats {
  int64_t registered_graphs = 0;
  int64_t registered_graph_bytes = 0;
  int64_t pending_steps = 0;  // steps tensors were sent to that have not started here
  int64_t pending_bytes = 0;
};

class Server {
 public:
  // Throws InvalidArgument when the task is not in the cluster, a limit is negative or the
  // security is inconsistent (ValidateTransportSecurity); with `start`, as Start().
  explicit Server(ServerOptions options);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the task's address and serves; Unavailable when the address cannot be bound,
  // NotFound when a TLS file cannot be read. Does nothing when started; FailedPrecondition
  // after Stop().
  void Start();
  // Cancels the steps in flight (their RPCs fail), stops serving and joins its threads.
  // Idempotent; returns promptly even while a step blocks in a kernel.
  void Stop();
  // Blocks until Stop() (from another thread), or until the job ended: a client (the chief's
  // MonitoredTrainingSession, or EndJob) said so and the grace period it gave has passed.
  // The server still serves then (steps and new graphs are refused with OutOfRange naming
  // the reason, so workers still training stop cleanly): a ps program returns from main.
  void Join();
  // Why the job ended, once an EndJob request said so; nullopt before.
  std::optional<std::string> job_end_reason() const;

  // "grpc://host:port" with the bound port.
  std::string target() const;
  // "host:port" with the bound port (port 0 replaced once started).
  std::string bound_address() const;
  // The cluster as this task sees it, its own address bound.
  ClusterSpec cluster() const;
  // Replaces the addresses of the other tasks (how CreateLocalCluster completes a cluster of
  // ephemeral ports); this task's own address stays the bound one.
  void UpdateCluster(const ClusterSpec& cluster);
  const std::string& job_name() const;
  int task_index() const;
  // The variables and other state of this task.
  ResourceMgr* resource_manager();
  ServerStats GetStats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Running servers of one cluster on localhost's ephemeral ports, every one knowing the
// others' bound addresses (TF's test_util.create_local_cluster), all with `limits` and
// `security`.
//
//   distributed::LocalCluster local = distributed::CreateLocalCluster(2, 1);
//   auto sess = NewSession(graph, {.target = local.workers[0]->target()});
struct LocalCluster {
  ClusterSpec cluster;  // jobs "worker" and "ps" (a job with no task is left out)
  std::vector<std::unique_ptr<Server>> workers;
  std::vector<std::unique_ptr<Server>> ps;
};
LocalCluster CreateLocalCluster(int num_workers, int num_ps, const ServerLimits& limits = {},
                                const TransportSecurity& security = {});

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_SERVER_H_
