#include "flowtrain/distributed/grpc_session.h"

#include <chrono>
#include <map>
#include <random>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/distributed/internal/partition.h"
#include "flowtrain/distributed/internal/rpc_util.h"
#include "flowtrain/distributed/internal/worker_requests.h"
#include "flowtrain/distributed/transport_security.h"
#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/runtime/run_arguments.h"
#include "flowtrain/runtime/session_factory.h"

namespace flowtrain::distributed {
namespace {

using Clock = std::chrono::system_clock;

constexpr char kScheme[] = "grpc://";
constexpr auto kConnectTimeout = std::chrono::seconds(10);
constexpr auto kControlCallTimeout = std::chrono::seconds(60);
// A step's RPCs get this much beyond the step's own timeout, so the task's
// DeadlineExceeded (naming what timed out) arrives before the transport's.
constexpr auto kStepDeadlineGrace = std::chrono::seconds(5);

const bool kRegistered = [] {
  RegisterSessionFactory(kScheme, [](Graph& graph, const SessionOptions& options) {
    return std::unique_ptr<SessionInterface>(std::make_unique<GrpcSession>(graph, options));
  });
  return true;
}();

}  // namespace

struct GrpcSession::Impl {
  Impl(Graph& g, SessionOptions o) : graph(g), options(std::move(o)) {}

  struct TaskConnection {
    std::string address;
    std::unique_ptr<WorkerService::Stub> stub;
  };
  struct TaskRun {
    TaskId task;
    TaskConnection* connection;
    std::string handle;
    std::vector<int> feed_indices;
  };
  struct Plan {
    std::vector<TaskRun> tasks;
    std::vector<int> fetch_is_feed;
    // The shortest time a task keeps the plan's partitions without a step (0: forever).
    std::chrono::milliseconds idle_timeout{0};
  };
  // A registered plan and its use, to register it again before a task drops it as idle.
  struct PlanUse {
    std::shared_ptr<const Plan> plan;
    int runs_in_flight = 0;
    std::chrono::steady_clock::time_point last_used;
  };
  // One RunStep call of a step.
  struct Call {
    const TaskRun* run;
    grpc::ClientContext context;
    RunStepRequest request;
    RunStepResponse response;
    grpc::Status status;
  };

  // The plan of `key`'s signature, counted as running until ReleasePlan.
  std::shared_ptr<const Plan> GetOrCompile(const std::vector<int64_t>& key, const RunArguments& args);
  void ReleasePlan(const std::vector<int64_t>& key, const Plan* plan);
  std::shared_ptr<const Plan> Register(const RunArguments& args);
  void Deregister(const Plan& plan);
  int64_t NextStepId();

  Graph& graph;
  SessionOptions options;
  TaskId own_task;
  ClusterSpec cluster;
  std::map<TaskId, TaskConnection> connections;

  mutable absl::Mutex plans_mu;
  std::map<std::vector<int64_t>, PlanUse> plans ABSL_GUARDED_BY(plans_mu);

  absl::Mutex rng_mu;
  std::mt19937_64 rng ABSL_GUARDED_BY(rng_mu){std::random_device{}()};

  std::atomic<bool> closed{false};
  absl::Mutex calls_mu;
  absl::CondVar calls_cv;  // signalled when runs_in_flight drops to 0
  std::set<grpc::ClientContext*> calls_in_flight ABSL_GUARDED_BY(calls_mu);
  int runs_in_flight ABSL_GUARDED_BY(calls_mu) = 0;
};

GrpcSession::GrpcSession(Graph& graph, SessionOptions options)
    : impl_(std::make_unique<Impl>(graph, std::move(options))) {
  const std::string& target = impl_->options.target;
  const std::string address = TargetAddress(target, "GrpcSession");
  const TransportSecurity security = ClientSecurityFor(target);
  auto stub = NewWorkerStub(address, security);
  const GetStatusResponse response = GetTaskStatus(*stub, target, kConnectTimeout);
  impl_->cluster = ClusterSpec::Parse(response.cluster());
  impl_->own_task = TaskId{response.job_name(), response.task_index()};
  for (const std::string& job : impl_->cluster.jobs()) {
    for (int i = 0; i < impl_->cluster.num_tasks(job); ++i) {
      Impl::TaskConnection& connection = impl_->connections[TaskId{job, i}];
      connection.address = impl_->cluster.task_address(job, i);
      connection.stub =
          TaskId{job, i} == impl_->own_task ? std::move(stub) : NewWorkerStub(connection.address, security);
    }
  }
}

GrpcSession::~GrpcSession() { Close(); }

Graph& GrpcSession::graph() const { return impl_->graph; }
const ClusterSpec& GrpcSession::cluster() const { return impl_->cluster; }

int GrpcSession::num_registered_plans() const {
  absl::MutexLock lock(&impl_->plans_mu);
  return static_cast<int>(impl_->plans.size());
}

int64_t GrpcSession::Impl::NextStepId() {
  absl::MutexLock lock(&rng_mu);
  return static_cast<int64_t>(rng() >> 1);
}

std::shared_ptr<const GrpcSession::Impl::Plan> GrpcSession::Impl::GetOrCompile(
    const std::vector<int64_t>& key, const RunArguments& args) {
  absl::MutexLock lock(&plans_mu);
  const auto now = std::chrono::steady_clock::now();
  auto it = plans.find(key);
  if (it != plans.end()) {
    PlanUse& use = it->second;
    // Idle for half the time a task keeps it: the task may drop it before this step reaches
    // it (its clock started earlier than ours), so the plan is registered anew.
    const bool may_expire = use.runs_in_flight == 0 && use.plan->idle_timeout.count() > 0 &&
                            now - use.last_used > use.plan->idle_timeout / 2;
    if (!may_expire) {
      ++use.runs_in_flight;
      use.last_used = now;
      return use.plan;
    }
    Deregister(*use.plan);
    plans.erase(it);
  }
  std::shared_ptr<const Plan> plan = Register(args);
  if (closed.load()) {
    // Close() ran during the registration and could not see this plan.
    Deregister(*plan);
    Cancelled("Session was closed while the step was being prepared");
  }
  plans.emplace(key, PlanUse{.plan = plan, .runs_in_flight = 1, .last_used = now});
  return plan;
}

void GrpcSession::Impl::ReleasePlan(const std::vector<int64_t>& key, const Plan* plan) {
  absl::MutexLock lock(&plans_mu);
  auto it = plans.find(key);
  // Gone or replaced when a task lost it or the session closed.
  if (it == plans.end() || it->second.plan.get() != plan) return;
  --it->second.runs_in_flight;
  it->second.last_used = std::chrono::steady_clock::now();
}

std::shared_ptr<const GrpcSession::Impl::Plan> GrpcSession::Impl::Register(const RunArguments& args) {
  PartitionPlan partitions =
      PartitionGraph(graph, args.feeds, args.fetches, args.targets,
                     PartitionOptions{.cluster = cluster,
                                      .default_task = own_task,
                                      .allow_soft_placement = options.config.allow_soft_placement});
  auto plan = std::make_shared<Plan>();
  plan->fetch_is_feed = std::move(partitions.fetch_is_feed);
  try {
    for (auto& [task, partition] : partitions.partitions) {
      TaskConnection& connection = connections.at(task);
      grpc::ClientContext context;
      // A task not up yet (a ps started after its workers) is waited for, as TF's master
      // waits for the devices of a new session; for a while only, and then it is lost.
      context.set_wait_for_ready(true);
      context.set_deadline(Clock::now() + kControlCallTimeout);
      RegisterGraphResponse response;
      partition.request.set_disable_remapping(!options.config.remapping);
      partition.request.set_disable_dependency_optimization(!options.config.dependency_optimization);
      const grpc::Status status = connection.stub->RegisterGraph(&context, partition.request, &response);
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && status.error_details().empty()) {
        Unavailable(TaskPeer(task.name(), connection.address), " did not become reachable within ",
                    std::chrono::duration_cast<std::chrono::seconds>(kControlCallTimeout).count(), " s");
      }
      if (!status.ok()) ThrowRpcError(status, TaskPeer(task.name(), connection.address));
      const std::chrono::milliseconds idle_timeout(response.idle_timeout_ms());
      if (idle_timeout.count() > 0 &&
          (plan->idle_timeout.count() == 0 || idle_timeout < plan->idle_timeout)) {
        plan->idle_timeout = idle_timeout;
      }
      plan->tasks.push_back(TaskRun{task, &connection, response.handle(), std::move(partition.feed_indices)});
    }
  } catch (...) {
    Deregister(*plan);
    throw;
  }
  return plan;
}

void GrpcSession::Impl::Deregister(const Plan& plan) {
  for (const TaskRun& run : plan.tasks) {
    grpc::ClientContext context;
    context.set_deadline(Clock::now() + std::chrono::seconds(2));
    DeregisterGraphRequest request;
    request.add_handles(run.handle);
    DeregisterGraphResponse response;
    // Best effort: a task that is gone has dropped the graph anyway.
    (void)run.connection->stub->DeregisterGraph(&context, request, &response);
  }
}

std::vector<Tensor> GrpcSession::Run(const FeedList& feeds, const FetchList& fetches,
                                     const std::vector<Operation>& targets, const RunOptions* run_options,
                                     RunMetadata* run_metadata) {
  Impl& s = *impl_;
  if (s.closed.load()) FailedPrecondition("Attempted to use a closed Session.");
  const RunArguments args = CheckRunArguments(s.graph, feeds, fetches, targets);
  {
    absl::MutexLock lock(&s.calls_mu);
    ++s.runs_in_flight;
  }
  struct RunsInFlightGuard {
    Impl* s;
    ~RunsInFlightGuard() {
      absl::MutexLock lock(&s->calls_mu);
      if (--s->runs_in_flight == 0) s->calls_cv.SignalAll();
    }
  } guard{&s};
  const std::vector<int64_t> key = RunSignatureKey(args.feeds, args.fetches, args.targets);
  const std::shared_ptr<const Impl::Plan> plan = s.GetOrCompile(key, args);
  struct PlanGuard {
    Impl* s;
    const std::vector<int64_t>& key;
    const Impl::Plan* plan;
    ~PlanGuard() { s->ReleasePlan(key, plan); }
  } plan_guard{&s, key, plan.get()};

  const int64_t timeout_ms = RunTimeoutMs(s.options, run_options);
  const int64_t step_id = s.NextStepId();
  const bool trace =
      run_options != nullptr && run_options->trace_level != RunOptions::kNoTrace && run_metadata != nullptr;
  std::vector<std::unique_ptr<Impl::Call>> calls;
  for (const Impl::TaskRun& run : plan->tasks) {
    auto call = std::make_unique<Impl::Call>();
    call->run = &run;
    call->request.set_handle(run.handle);
    call->request.set_step_id(step_id);
    call->request.set_timeout_in_ms(timeout_ms);
    call->request.set_trace(trace);
    for (int feed : run.feed_indices) {
      call->request.add_feed_indices(feed);
      *call->request.add_feeds() = TensorToProto(args.feed_values[feed]);
    }
    if (timeout_ms > 0) {
      call->context.set_deadline(Clock::now() + std::chrono::milliseconds(timeout_ms) + kStepDeadlineGrace);
    }
    calls.push_back(std::move(call));
  }

  // Every task runs its partition at once; the first failure cancels the others.
  absl::Mutex mu;
  absl::CondVar cv;
  int done = 0;
  std::vector<int> failures;  // in the order they arrived
  {
    absl::MutexLock lock(&s.calls_mu);
    for (auto& call : calls) s.calls_in_flight.insert(&call->context);
    if (s.closed.load()) {
      for (auto& call : calls) call->context.TryCancel();
    }
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    Impl::Call* call = calls[i].get();
    call->run->connection->stub->async()->RunStep(&call->context, &call->request, &call->response,
                                                  [&, call, i](grpc::Status status) {
                                                    absl::MutexLock lock(&mu);
                                                    call->status = std::move(status);
                                                    if (!call->status.ok())
                                                      failures.push_back(static_cast<int>(i));
                                                    ++done;
                                                    cv.SignalAll();
                                                  });
  }
  {
    absl::MutexLock lock(&mu);
    bool cancelled_others = false;
    while (done < static_cast<int>(calls.size())) {
      if (!failures.empty() && !cancelled_others) {
        cancelled_others = true;
        for (auto& call : calls) call->context.TryCancel();
      }
      cv.Wait(&mu);
    }
  }
  {
    absl::MutexLock lock(&s.calls_mu);
    for (auto& call : calls) s.calls_in_flight.erase(&call->context);
  }
  if (!failures.empty()) {
    if (s.closed.load()) Cancelled("Session was closed while the step ran");
    const Impl::Call& first = *calls[failures.front()];
    const grpc::Status& status = first.status;
    if (status.error_code() == grpc::StatusCode::ABORTED ||
        status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      // A task lost its partitions (it restarted): register again on the next run.
      size_t erased;
      {
        absl::MutexLock lock(&s.plans_mu);
        erased = std::erase_if(s.plans, [&](const auto& entry) { return entry.second.plan == plan; });
      }
      if (erased > 0) s.Deregister(*plan);
    }
    ThrowRpcError(status, TaskPeer(first.run->task.name(), first.run->connection->address));
  }
  std::vector<Tensor> results(args.fetches.size());
  for (size_t i = 0; i < args.fetches.size(); ++i) {
    if (plan->fetch_is_feed[i] >= 0) results[i] = args.feed_values[plan->fetch_is_feed[i]];
  }
  for (const auto& call : calls) {
    RunStepResponse& response = call->response;
    const std::string peer = TaskPeer(call->run->task.name(), call->run->connection->address);
    if (response.fetch_indices_size() != response.fetches_size()) {
      Internal(peer, " returned ", response.fetch_indices_size(), " fetch indices for ",
               response.fetches_size(), " fetches");
    }
    for (int i = 0; i < response.fetches_size(); ++i) {
      const int index = response.fetch_indices(i);
      if (index < 0 || index >= static_cast<int>(results.size())) {
        Internal(peer, " returned fetch index ", index, " of a step with ", results.size(), " fetches");
      }
      results[index] = DecodeTensor(response.fetches(i), StrCat(peer, ": fetch ", index));
    }
    if (trace) {
      for (auto& dev : *response.mutable_step_stats()->mutable_dev_stats()) {
        *run_metadata->mutable_step_stats()->add_dev_stats() = std::move(dev);
      }
    }
  }
  return PlaceFetchedValues(args, std::move(results));
}

void GrpcSession::Close() {
  Impl& s = *impl_;
  if (s.closed.exchange(true)) return;
  {
    absl::MutexLock lock(&s.calls_mu);
    for (grpc::ClientContext* context : s.calls_in_flight) context->TryCancel();
  }
  std::map<std::vector<int64_t>, Impl::PlanUse> plans;
  {
    absl::MutexLock lock(&s.plans_mu);
    plans.swap(s.plans);
  }
  for (const auto& [key, use] : plans) s.Deregister(*use.plan);
  absl::MutexLock lock(&s.calls_mu);
  while (s.runs_in_flight != 0) s.calls_cv.Wait(&s.calls_mu);
}

}  // namespace flowtrain::distributed
