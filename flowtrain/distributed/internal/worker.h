// Worker: the worker service of one task (internal to flowtrain/distributed; Server owns
// one). It keeps the graph partitions masters register, runs them stage by stage for each
// step (RunStep), and receives the tensors other tasks push to a step (SendTensors).
// Every partition runs against the task's one ResourceMgr, so variables on a task outlive
// the sessions that created them.
//
// Cancellation: a watchdog thread cancels a step whose RPC was cancelled (its master closed
// or failed); Shutdown cancels every step; DeregisterGraph cancels that graph's steps.
//
// Bounds (ServerOptions' limits, docs/design.md §5.1): the registered partitions are bounded
// in number and bytes, and one idle for graph_idle_timeout (its session crashed) is dropped;
// tensors pushed to a step that has not started here are bounded per step and in total, and
// dropped after orphan_step_timeout. The watchdog also does the expiring.
#ifndef FLOWTRAIN_DISTRIBUTED_INTERNAL_WORKER_H_
#define FLOWTRAIN_DISTRIBUTED_INTERNAL_WORKER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/thread_pool.h"
#include "flowtrain/distributed/cluster_spec.h"
#include "flowtrain/distributed/server.h"
#include "flowtrain/distributed/transport_security.h"
#include "flowtrain/distributed/worker_service.grpc.pb.h"
#include "flowtrain/framework/cancellation.h"
#include "flowtrain/framework/resource_mgr.h"

namespace flowtrain::distributed {

class Worker final : public WorkerService::Service {
 public:
  // InvalidArgument for a negative limit. Calls without `security`'s token are refused;
  // pushes to other tasks go out with `security`.
  Worker(ClusterSpec cluster, std::string job_name, int task_index, int intra_op_threads,
         ServerLimits limits = {}, TransportSecurity security = {});
  ~Worker() override;

  // Cancels every step in flight, refuses new ones and joins the watchdog; idempotent.
  void Shutdown();
  void UpdateCluster(const ClusterSpec& cluster);
  ClusterSpec cluster() const;
  ResourceMgr* resource_manager() { return resource_mgr_.get(); }
  ServerStats GetStats() const ABSL_LOCKS_EXCLUDED(mu_);

  grpc::Status GetStatus(grpc::ServerContext* context, const GetStatusRequest* request,
                         GetStatusResponse* response) override;
  grpc::Status RegisterGraph(grpc::ServerContext* context, const RegisterGraphRequest* request,
                             RegisterGraphResponse* response) override;
  grpc::Status DeregisterGraph(grpc::ServerContext* context, const DeregisterGraphRequest* request,
                               DeregisterGraphResponse* response) override;
  grpc::Status RunStep(grpc::ServerContext* context, const RunStepRequest* request,
                       RunStepResponse* response) override;
  grpc::Status SendTensors(grpc::ServerContext* context, const SendTensorsRequest* request,
                           SendTensorsResponse* response) override;
  grpc::Status EndJob(grpc::ServerContext* context, const EndJobRequest* request,
                      EndJobResponse* response) override;

  // Called (once, outside the worker's lock) when an EndJob request arrives, with its reason
  // and grace period. Set before serving.
  void SetJobEndedCallback(
      std::function<void(const std::string& reason, std::chrono::milliseconds grace)> callback);

 private:
  using Clock = std::chrono::steady_clock;
  struct Partition;
  struct StepState;
  // A step in flight. Cancelled (under mu_) when its RPC is cancelled, its partition is
  // deregistered or the worker shuts down; it leaves active_steps_ before its manager dies.
  struct ActiveStep {
    grpc::ServerContext* context;
    CancellationManager* cancellation;
    const Partition* partition;
  };

  // How a step that left steps_ ended, for the requests about it that arrive late.
  enum class StepEnd { kRan, kExpired };

  std::shared_ptr<Partition> FindPartitionLocked(const std::string& handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OutOfRange naming the reason once EndJob arrived.
  void CheckJobNotEndedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The state of a step RunStep starts here: Aborted when the tensors sent to it expired.
  std::shared_ptr<StepState> ClaimStepLocked(int64_t step_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ResourceExhausted unless `bytes` more may be sent ahead to step `step_id` (a step not
  // running here), whose state is `step` (nullptr: none yet).
  void CheckPendingLimitsLocked(int64_t step_id, const StepState* step, int64_t bytes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the step's state and its step container.
  void FinishStep(int64_t step_id) ABSL_LOCKS_EXCLUDED(mu_);
  void RememberEndedLocked(int64_t step_id, StepEnd end) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the idle partitions and the orphaned steps out, into `graphs` and `steps` (freed by
  // the caller once the lock is released).
  void ExpireLocked(Clock::time_point now, std::vector<std::shared_ptr<Partition>>* graphs,
                    std::vector<std::shared_ptr<StepState>>* steps) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The resource container of the step's TensorArrays and stacks (the master draws step ids
  // at random, so they do not repeat).
  static std::string StepContainer(int64_t step_id);
  void RunStepOrThrow(grpc::ServerContext* context, const RunStepRequest& request, RunStepResponse* response);
  void SendTensorsOrThrow(const SendTensorsRequest& request);
  void Push(int64_t step_id, const std::string& job, int task, SendTensorsRequest& request,
            Clock::time_point deadline);
  WorkerService::Stub* StubFor(const std::string& job, int task, std::string* address);
  // Cancels the steps whose RPC was cancelled and expires what ExpireLocked does.
  void Watch() ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels the steps in flight of `partition`, or all of them for nullptr.
  void CancelStepsLocked(const Partition* partition) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ServerLimits limits_;
  const TransportSecurity security_;
  const std::string job_name_;
  const int task_index_;
  const std::string task_name_;
  const std::string incarnation_;  // random, so handles of a restarted task never match
  std::shared_ptr<ResourceMgr> resource_mgr_;
  std::unique_ptr<ThreadPool> intra_op_pool_;

  mutable absl::Mutex mu_;
  ClusterSpec cluster_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<std::string> job_end_reason_ ABSL_GUARDED_BY(mu_);  // set by EndJob
  std::function<void(const std::string&, std::chrono::milliseconds)> job_ended_callback_;
  int64_t next_handle_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<Partition>> partitions_ ABSL_GUARDED_BY(mu_);
  int64_t partition_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // their requests' serialized sizes
  Clock::time_point next_graph_expiry_scan_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::shared_ptr<StepState>> steps_ ABSL_GUARDED_BY(mu_);
  // The steps sent ahead in the order they were created (claimed ones are skipped on expiry).
  std::deque<std::pair<Clock::time_point, int64_t>> pending_order_ ABSL_GUARDED_BY(mu_);
  int64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // held by the steps not claimed yet
  // Recent ones, so late pushes are dropped and a late RunStep of an expired step fails.
  std::map<int64_t, StepEnd> ended_steps_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> ended_order_ ABSL_GUARDED_BY(mu_);
  // By address.
  std::map<std::string, std::unique_ptr<WorkerService::Stub>> stubs_ ABSL_GUARDED_BY(mu_);
  std::set<ActiveStep*> active_steps_ ABSL_GUARDED_BY(mu_);

  absl::CondVar watchdog_cv_;  // wakes the watchdog early when shutting_down_ is set
  std::thread watchdog_;
};

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_INTERNAL_WORKER_H_
