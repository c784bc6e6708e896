// Worker: the worker service of one task (internal to flowtrain/distributed; Server owns
// one). It keeps the graph partitions masters register, runs them stage by stage for each
// step (RunStep), and receives the tensors other tasks push to a step (SendTensors).
// Every partition runs against the task's one ResourceMgr, so variables on a task outlive
// the sessions that created them.
//
// Cancellation: a watchdog thread cancels a step whose RPC was cancelled (its master closed
// or failed); Shutdown cancels every step; DeregisterGraph cancels that graph's steps.
#ifndef FLOWTRAIN_DISTRIBUTED_INTERNAL_WORKER_H_
#define FLOWTRAIN_DISTRIBUTED_INTERNAL_WORKER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/thread_pool.h"
#include "flowtrain/distributed/cluster_spec.h"
#include "flowtrain/distributed/worker_service.grpc.pb.h"
#include "flowtrain/framework/cancellation.h"
#include "flowtrain/framework/resource_mgr.h"

namespace flowtrain::distributed {

class Worker final : public WorkerService::Service {
 public:
  Worker(ClusterSpec cluster, std::string job_name, int task_index, int intra_op_threads);
  ~Worker() override;

  // Cancels every step in flight, refuses new ones and joins the watchdog; idempotent.
  void Shutdown();
  void UpdateCluster(const ClusterSpec& cluster);
  ClusterSpec cluster() const;
  ResourceMgr* resource_manager() { return resource_mgr_.get(); }

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

 private:
  struct Partition;
  struct StepState;
  // A step in flight. Cancelled (under mu_) when its RPC is cancelled, its partition is
  // deregistered or the worker shuts down; it leaves active_steps_ before its manager dies.
  struct ActiveStep {
    grpc::ServerContext* context;
    CancellationManager* cancellation;
    const Partition* partition;
  };

  std::shared_ptr<Partition> FindPartition(const std::string& handle);
  std::shared_ptr<StepState> GetOrCreateStep(int64_t step_id, bool for_run);
  // Drops the step's state and its step container.
  void FinishStep(int64_t step_id);
  // The resource container of the step's TensorArrays and stacks (the master draws step ids
  // at random, so they do not repeat).
  static std::string StepContainer(int64_t step_id);
  void RunStepOrThrow(grpc::ServerContext* context, const RunStepRequest& request, RunStepResponse* response);
  void Push(int64_t step_id, const std::string& job, int task, SendTensorsRequest& request,
            std::chrono::steady_clock::time_point deadline);
  WorkerService::Stub* StubFor(const std::string& job, int task, std::string* address);
  void WatchCancelledSteps() ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels the steps in flight of `partition`, or all of them for nullptr.
  void CancelStepsLocked(const Partition* partition) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string job_name_;
  const int task_index_;
  const std::string task_name_;
  const std::string incarnation_;  // random, so handles of a restarted task never match
  std::shared_ptr<ResourceMgr> resource_mgr_;
  std::unique_ptr<ThreadPool> intra_op_pool_;

  mutable absl::Mutex mu_;
  ClusterSpec cluster_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_handle_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<Partition>> partitions_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::shared_ptr<StepState>> steps_ ABSL_GUARDED_BY(mu_);
  // Recent ones, so late pushes are dropped.
  std::set<int64_t> finished_steps_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> finished_order_ ABSL_GUARDED_BY(mu_);
  // By address.
  std::map<std::string, std::unique_ptr<WorkerService::Stub>> stubs_ ABSL_GUARDED_BY(mu_);
  std::set<ActiveStep*> active_steps_ ABSL_GUARDED_BY(mu_);

  absl::CondVar watchdog_cv_;  // wakes the watchdog early when shutting_down_ is set
  std::thread watchdog_;
};

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_INTERNAL_WORKER_H_
