#include "flowtrain/distributed/internal/worker.h"

#include <limits>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "absl/time/time.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/distributed/internal/rpc_util.h"
#include "flowtrain/distributed/internal/transport_credentials.h"
#include "flowtrain/distributed/internal/worker_requests.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/runtime/executor.h"
#include "flowtrain/runtime/graph_function_runtime.h"

namespace flowtrain::distributed {
namespace {

using Clock = std::chrono::steady_clock;

// How often waits re-check cancellation; also the watchdog's period.
constexpr auto kPollInterval = std::chrono::milliseconds(20);
// Steps of this many recent ids are remembered as ended, so late pushes are dropped.
constexpr size_t kEndedStepsKept = 4096;
// What a pending step and each key sent to it hold besides the tensor data, as counted
// against the pending limits (so that a flood of control tokens is bounded too).
constexpr int64_t kStepOverheadBytes = 256;
constexpr int64_t kKeyOverheadBytes = 64;

std::string RandomIncarnation() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device());
  return StrCat(rng() & 0xffffffffffffULL);
}

// The endpoint `name` ("node:index") of the partition.
Endpoint FindEndpoint(Graph& graph, const std::string& name) {
  const auto [node_name, index] = ParseTensorName(name, "Stage output");
  Node* node = graph.FindNode(node_name);
  if (node == nullptr) InvalidArgument("Stage output '", name, "' names no node of the partition");
  if (index >= node->num_outputs()) {
    InvalidArgument("Stage output '", name, "': node ", node_name, " has ", node->num_outputs(), " outputs");
  }
  return Endpoint{node, index};
}

std::string Millis(std::chrono::milliseconds d) { return StrCat(d.count(), " ms"); }

// The nodes of `stage_nodes` that no other of them consumes (by data or control). Running
// these runs them all, and leaves the others free to be fused into their consumers
// (graph_rewrite.h), which a target never is.
std::vector<const Node*> OutermostNodes(const std::vector<const Node*>& stage_nodes) {
  std::unordered_set<const Node*> consumed;
  for (const Node* n : stage_nodes) {
    for (const Endpoint& in : n->inputs()) consumed.insert(in.node);
    for (const Node* c : n->control_inputs()) consumed.insert(c);
  }
  std::vector<const Node*> outermost;
  for (const Node* n : stage_nodes) {
    if (consumed.count(n) == 0) outermost.push_back(n);
  }
  return outermost;
}

}  // namespace

struct Worker::Partition {
  struct Input {
    StageInput::SourceCase kind;
    int feed = -1;
    std::string key;
  };
  struct StageRuntime {
    Stage spec;
    std::vector<Input> inputs;
    std::vector<std::string> awaited;  // transfer keys and control tokens
    bool inputs_may_be_dead = false;
    std::unique_ptr<Executor> executor;
  };

  Graph graph;
  // Runs the functions of graph's library for its dataset kernels; null without a library.
  std::shared_ptr<FunctionRuntime> function_runtime;
  int64_t bytes = 0;  // the registration's serialized size
  // Guarded by the worker's mu_ (the analysis cannot name another object's mutex).
  int steps_running = 0;
  Clock::time_point last_used;  // registered, or a step started or ended
  absl::Mutex kernels_mu;
  std::unordered_map<const Node*, std::unique_ptr<OpKernel>> kernels ABSL_GUARDED_BY(kernels_mu);
  std::vector<StageRuntime> stages;
};

struct Worker::StepState {
  absl::Mutex mu;
  absl::CondVar cv;  // signalled when a tensor is received
  // By transfer key or control token.
  std::unordered_map<std::string, Tensor> received ABSL_GUARDED_BY(mu);
  std::unordered_set<std::string> received_dead ABSL_GUARDED_BY(mu);  // keys that arrived dead
  // Guarded by the worker's mu_, not by `mu` (the analysis cannot name another object's
  // mutex): a RunStep runs it; what it holds, counted in pending_bytes_ until claimed.
  bool claimed = false;
  int64_t bytes = kStepOverheadBytes;
  Clock::time_point created = Clock::now();
};

Worker::Worker(ClusterSpec cluster, std::string job_name, int task_index, int intra_op_threads,
               ServerLimits limits, TransportSecurity security)
    : limits_(limits),
      security_(std::move(security)),
      job_name_(std::move(job_name)),
      task_index_(task_index),
      task_name_(TaskName(job_name_, task_index_)),
      incarnation_(RandomIncarnation()),
      resource_mgr_(std::make_shared<ResourceMgr>()),
      intra_op_pool_(std::make_unique<ThreadPool>(
          "intra_op", intra_op_threads > 0 ? intra_op_threads : NumSchedulableCPUs())),
      cluster_(std::move(cluster)) {
  if (limits_.max_registered_graphs < 0 || limits_.max_registered_graph_bytes < 0 ||
      limits_.graph_idle_timeout.count() < 0 || limits_.max_pending_step_bytes < 0 ||
      limits_.max_pending_bytes < 0 || limits_.orphan_step_timeout.count() < 0) {
    InvalidArgument("ServerLimits of ", task_name_, " must not be negative");
  }
  watchdog_ = std::thread([this] { Watch(); });
}

Worker::~Worker() {
  Shutdown();
  if (watchdog_.joinable()) watchdog_.join();
}

void Worker::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    CancelStepsLocked(nullptr);
  }
  watchdog_cv_.SignalAll();
  watchdog_.join();
}

void Worker::CancelStepsLocked(const Partition* partition) {
  for (ActiveStep* step : active_steps_) {
    if (partition == nullptr || step->partition == partition) step->cancellation->StartCancel();
  }
}

void Worker::UpdateCluster(const ClusterSpec& cluster) {
  absl::MutexLock lock(&mu_);
  cluster_ = cluster;
}

ClusterSpec Worker::cluster() const {
  absl::MutexLock lock(&mu_);
  return cluster_;
}

ServerStats Worker::GetStats() const {
  absl::MutexLock lock(&mu_);
  ServerStats stats;
  stats.registered_graphs = static_cast<int64_t>(partitions_.size());
  stats.registered_graph_bytes = partition_bytes_;
  for (const auto& [id, step] : steps_) stats.pending_steps += step->claimed ? 0 : 1;
  stats.pending_bytes = pending_bytes_;
  return stats;
}

void Worker::Watch() {
  for (;;) {
    // Freed once the lock is released: a partition's kernels and tensors can be large.
    std::vector<std::shared_ptr<Partition>> expired_graphs;
    std::vector<std::shared_ptr<StepState>> expired_steps;
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    watchdog_cv_.WaitWithTimeout(&mu_, absl::FromChrono(kPollInterval));
    if (shutting_down_) return;
    for (ActiveStep* step : active_steps_) {
      if (step->context->IsCancelled()) step->cancellation->StartCancel();
    }
    ExpireLocked(Clock::now(), &expired_graphs, &expired_steps);
  }
}

void Worker::ExpireLocked(Clock::time_point now, std::vector<std::shared_ptr<Partition>>* graphs,
                          std::vector<std::shared_ptr<StepState>>* steps) {
  while (!pending_order_.empty() && limits_.orphan_step_timeout.count() > 0 &&
         pending_order_.front().first + limits_.orphan_step_timeout <= now) {
    const auto [created, step_id] = pending_order_.front();
    pending_order_.pop_front();
    auto it = steps_.find(step_id);
    if (it == steps_.end() || it->second->claimed || it->second->created != created) continue;
    pending_bytes_ -= it->second->bytes;
    steps->push_back(std::move(it->second));
    steps_.erase(it);
    RememberEndedLocked(step_id, StepEnd::kExpired);
  }
  // Partitions are few and their timeout long: a scan every tenth of it (at most every second).
  if (limits_.graph_idle_timeout.count() == 0 || now < next_graph_expiry_scan_) return;
  next_graph_expiry_scan_ =
      now + std::min<Clock::duration>(limits_.graph_idle_timeout / 10, std::chrono::seconds(1));
  for (auto it = partitions_.begin(); it != partitions_.end();) {
    const Partition& partition = *it->second;
    if (partition.steps_running > 0 || partition.last_used + limits_.graph_idle_timeout > now) {
      ++it;
      continue;
    }
    partition_bytes_ -= partition.bytes;
    graphs->push_back(std::move(it->second));
    it = partitions_.erase(it);
  }
}

grpc::Status Worker::GetStatus(grpc::ServerContext* context, const GetStatusRequest*,
                               GetStatusResponse* response) {
  if (grpc::Status denied = CheckCallToken(*context, security_.token); !denied.ok()) return denied;
  response->set_cluster(cluster().ToString());
  response->set_job_name(job_name_);
  response->set_task_index(task_index_);
  return grpc::Status::OK;
}

grpc::Status Worker::RegisterGraph(grpc::ServerContext* context, const RegisterGraphRequest* request,
                                   RegisterGraphResponse* response) {
  if (grpc::Status denied = CheckCallToken(*context, security_.token); !denied.ok()) return denied;
  return ToRpcStatus([&] {
    const int64_t bytes = static_cast<int64_t>(request->ByteSizeLong());
    ClusterSpec cluster;
    auto check_limits = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (shutting_down_) Unavailable("Task ", task_name_, " is shutting down");
      CheckJobNotEndedLocked();
      const std::string expiry = limits_.graph_idle_timeout.count() == 0
                                     ? std::string()
                                     : StrCat("; graphs no step ran for ServerLimits::graph_idle_timeout (",
                                              Millis(limits_.graph_idle_timeout), ") are dropped");
      if (static_cast<int64_t>(partitions_.size()) >= limits_.max_registered_graphs) {
        ResourceExhausted("RegisterGraph on ", task_name_, ": ", partitions_.size(),
                          " graphs are registered, as many as ServerLimits::max_registered_graphs allows",
                          expiry);
      }
      if (bytes > limits_.max_registered_graph_bytes - partition_bytes_) {
        ResourceExhausted("RegisterGraph on ", task_name_, ": a graph of ", bytes, " bytes beside the ",
                          partition_bytes_,
                          " registered would exceed ServerLimits::max_registered_graph_bytes (",
                          limits_.max_registered_graph_bytes, ")", expiry);
      }
    };
    {
      absl::MutexLock lock(&mu_);
      check_limits();  // before the work, so that refused requests cost little
      cluster = cluster_;
    }
    auto partition = std::make_shared<Partition>();
    partition->bytes = bytes;
    ImportGraphDef(request->graph_def(), &partition->graph);
    if (!partition->graph.library().empty()) {
      partition->function_runtime = GraphFunctionRuntime::Create(partition->graph.library(), resource_mgr_);
    }
    ExecutorEnv env;
    env.resource_mgr = resource_mgr_.get();
    env.function_runtime = partition->function_runtime.get();
    env.intra_op_pool = intra_op_pool_.get();  // no inter-op pool: stages run inline
    env.device_name = StrCat(task_name_, "/device:CPU:0");
    env.remapping = !request->disable_remapping();
    env.dependency_optimization = !request->disable_dependency_optimization();
    Partition* raw = partition.get();
    env.get_kernel = [raw, device = env.device_name](const Node* node) {
      absl::MutexLock lock(&raw->kernels_mu);
      std::unique_ptr<OpKernel>& kernel = raw->kernels[node];
      if (kernel == nullptr) {
        node->set_assigned_device(device);
        kernel = KernelRegistry::Global()->CreateKernel(*node);
      }
      return kernel.get();
    };
    auto check_push = [&](const PushTarget& push) {
      CheckTransferKey(push.key(), "Pushed key");
      cluster.task_address(push.job(), push.task());
    };
    std::unordered_set<std::string> local_keys;  // produced by the stages so far
    for (const Stage& spec : request->stages()) {
      Partition::StageRuntime& stage = partition->stages.emplace_back();
      stage.spec = spec;
      std::vector<Endpoint> feeds;
      for (const StageInput& input : spec.inputs()) {
        Node* placeholder = partition->graph.FindNode(input.placeholder());
        if (placeholder == nullptr || placeholder->num_outputs() == 0)
          InvalidArgument("No placeholder '", input.placeholder(), "' in the partition");
        feeds.push_back(Endpoint{placeholder, 0});
        Partition::Input& in = stage.inputs.emplace_back();
        in.kind = input.source_case();
        if (in.kind == StageInput::SOURCE_NOT_SET) {
          InvalidArgument("Stage input '", input.placeholder(), "' has no source");
        }
        if (in.kind == StageInput::kClientFeed) in.feed = input.client_feed();
        if (in.kind == StageInput::kTransferKey) {
          CheckTransferKey(input.transfer_key(), "Awaited key");
          in.key = input.transfer_key();
          stage.awaited.push_back(in.key);
        }
        if (in.kind == StageInput::kLocalKey) {
          if (local_keys.count(input.local_key()) == 0) {
            InvalidArgument("Stage input '", input.placeholder(), "' reads local key '", input.local_key(),
                            "', which no earlier stage produces");
          }
          in.key = input.local_key();
        }
        stage.inputs_may_be_dead = stage.inputs_may_be_dead || input.may_be_dead();
      }
      for (const std::string& token : spec.awaited_controls()) {
        CheckTransferKey(token, "Awaited control token");
        stage.awaited.push_back(token);
      }
      std::vector<Endpoint> fetches;
      for (const StageOutput& output : spec.outputs()) {
        fetches.push_back(FindEndpoint(partition->graph, output.tensor()));
        for (const PushTarget& push : output.pushes()) check_push(push);
        if (!output.local_key().empty()) local_keys.insert(output.local_key());
      }
      for (const PushTarget& push : spec.control_pushes()) check_push(push);
      std::vector<const Node*> stage_nodes;
      for (const std::string& name : spec.targets()) {
        const Node* node = partition->graph.FindNode(name);
        if (node == nullptr) InvalidArgument("No node '", name, "' in the partition");
        stage_nodes.push_back(node);
      }
      ExecutorEnv stage_env = env;
      stage_env.feeds_may_be_dead = stage.inputs_may_be_dead;
      stage.executor = std::make_unique<Executor>(stage_env, feeds, fetches, OutermostNodes(stage_nodes));
    }
    absl::MutexLock lock(&mu_);
    check_limits();
    const std::string handle = StrCat(incarnation_, "/", ++next_handle_);
    partition->last_used = Clock::now();
    partition_bytes_ += bytes;
    partitions_.emplace(handle, std::move(partition));
    response->set_handle(handle);
    response->set_idle_timeout_ms(limits_.graph_idle_timeout.count());
  });
}

grpc::Status Worker::DeregisterGraph(grpc::ServerContext* context, const DeregisterGraphRequest* request,
                                     DeregisterGraphResponse*) {
  if (grpc::Status denied = CheckCallToken(*context, security_.token); !denied.ok()) return denied;
  std::vector<std::shared_ptr<Partition>> removed;  // destroyed after the lock is released
  absl::MutexLock lock(&mu_);
  for (const std::string& handle : request->handles()) {
    auto it = partitions_.find(handle);
    if (it == partitions_.end()) continue;
    CancelStepsLocked(it->second.get());
    partition_bytes_ -= it->second->bytes;
    removed.push_back(std::move(it->second));
    partitions_.erase(it);
  }
  return grpc::Status::OK;
}

void Worker::CheckJobNotEndedLocked() const {
  if (job_end_reason_) {
    OutOfRange("The job ended (", *job_end_reason_, "): task ", task_name_, " takes no more graphs or steps");
  }
}

void Worker::SetJobEndedCallback(
    std::function<void(const std::string&, std::chrono::milliseconds)> callback) {
  job_ended_callback_ = std::move(callback);
}

grpc::Status Worker::EndJob(grpc::ServerContext* context, const EndJobRequest* request, EndJobResponse*) {
  if (grpc::Status denied = CheckCallToken(*context, security_.token); !denied.ok()) return denied;
  return ToRpcStatus([&] {
    if (request->grace_ms() < 0) InvalidArgument("EndJob: grace_ms ", request->grace_ms(), " is negative");
    const std::string reason = request->reason().empty() ? "no reason given" : request->reason();
    {
      absl::MutexLock lock(&mu_);
      if (job_end_reason_) return;  // told already (by another task's chief, or twice)
      job_end_reason_ = reason;
    }
    FT_LOG(INFO) << "Task " << task_name_ << ": the job ended (" << reason << ")";
    if (job_ended_callback_) job_ended_callback_(reason, std::chrono::milliseconds(request->grace_ms()));
  });
}

std::shared_ptr<Worker::Partition> Worker::FindPartitionLocked(const std::string& handle) {
  if (shutting_down_) Unavailable("Task ", task_name_, " is shutting down");
  auto it = partitions_.find(handle);
  if (it == partitions_.end()) {
    Aborted("Graph handle '", handle, "' is not registered on task ", task_name_,
            " (the task restarted, or the session was closed or idle for longer than "
            "ServerLimits::graph_idle_timeout)");
  }
  return it->second;
}

std::string Worker::StepContainer(int64_t step_id) { return StrCat("__per_step_worker_", step_id); }

std::shared_ptr<Worker::StepState> Worker::ClaimStepLocked(int64_t step_id) {
  auto ended = ended_steps_.find(step_id);
  if (ended != ended_steps_.end() && ended->second == StepEnd::kExpired) {
    Aborted("Step ", step_id, " reached ", task_name_,
            " after the tensors other tasks sent to it were dropped (",
            "it had not started within ServerLimits::orphan_step_timeout, ",
            Millis(limits_.orphan_step_timeout), ")");
  }
  std::shared_ptr<StepState>& step = steps_[step_id];
  if (step == nullptr) {
    step = std::make_shared<StepState>();
  } else if (!step->claimed) {
    pending_bytes_ -= step->bytes;
  }
  step->claimed = true;
  return step;
}

void Worker::CheckPendingLimitsLocked(int64_t step_id, const StepState* step, int64_t bytes) const {
  const int64_t step_bytes = step == nullptr ? kStepOverheadBytes : step->bytes;
  const int64_t added = step == nullptr ? bytes + kStepOverheadBytes : bytes;
  if (bytes > limits_.max_pending_step_bytes - step_bytes) {
    ResourceExhausted("SendTensors to step ", step_id, " on ", task_name_, ": ", bytes, " bytes beside the ",
                      step_bytes, " it holds would exceed ServerLimits::max_pending_step_bytes (",
                      limits_.max_pending_step_bytes, ") for a step that has not started here");
  }
  if (added > limits_.max_pending_bytes - pending_bytes_) {
    ResourceExhausted("SendTensors to step ", step_id, " on ", task_name_, ": ", bytes, " bytes beside the ",
                      pending_bytes_, " held for steps that have not started here would exceed ",
                      "ServerLimits::max_pending_bytes (", limits_.max_pending_bytes, ")");
  }
}

void Worker::FinishStep(int64_t step_id) {
  resource_mgr_->Cleanup(StepContainer(step_id));
  absl::MutexLock lock(&mu_);
  steps_.erase(step_id);
  RememberEndedLocked(step_id, StepEnd::kRan);
}

void Worker::RememberEndedLocked(int64_t step_id, StepEnd end) {
  if (ended_steps_.insert_or_assign(step_id, end).second) ended_order_.push_back(step_id);
  if (ended_order_.size() > kEndedStepsKept) {
    ended_steps_.erase(ended_order_.front());
    ended_order_.pop_front();
  }
}

WorkerService::Stub* Worker::StubFor(const std::string& job, int task, std::string* address) {
  absl::MutexLock lock(&mu_);
  *address = cluster_.task_address(job, task);
  std::unique_ptr<WorkerService::Stub>& stub = stubs_[*address];
  if (stub == nullptr) stub = NewWorkerStub(*address, security_);
  return stub.get();
}

void Worker::Push(int64_t step_id, const std::string& job, int task, SendTensorsRequest& request,
                  Clock::time_point deadline) {
  std::string address;
  WorkerService::Stub* stub = StubFor(job, task, &address);
  request.set_step_id(step_id);
  grpc::ClientContext context;
  // The receiver only stores the tensors, so a push that takes long means a lost task.
  const auto budget = std::min<Clock::duration>(deadline - Clock::now(), std::chrono::seconds(60));
  context.set_deadline(std::chrono::system_clock::now() + budget);
  SendTensorsResponse response;
  const grpc::Status status = stub->SendTensors(&context, request, &response);
  if (!status.ok()) ThrowRpcError(status, TaskPeer(TaskName(job, task), address));
}

grpc::Status Worker::SendTensors(grpc::ServerContext* context, const SendTensorsRequest* request,
                                 SendTensorsResponse*) {
  if (grpc::Status denied = CheckCallToken(*context, security_.token); !denied.ok()) return denied;
  return ToRpcStatus([&] { SendTensorsOrThrow(*request); });
}

void Worker::SendTensorsOrThrow(const SendTensorsRequest& request) {
  const int64_t step_id = request.step_id();
  if (request.keys_size() != request.tensors_size()) {
    InvalidArgument("SendTensors: ", request.keys_size(), " keys for ", request.tensors_size(), " tensors");
  }
  if (request.is_dead_size() != 0 && request.is_dead_size() != request.keys_size()) {
    InvalidArgument("SendTensors: ", request.is_dead_size(), " is_dead flags for ", request.keys_size(),
                    " keys");
  }
  auto is_dead = [&](int i) { return request.is_dead_size() != 0 && request.is_dead(i); };
  // Control tokens ("^node") and dead tensors carry no value.
  auto has_value = [&](int i) { return !request.keys(i).starts_with("^") && !is_dead(i); };
  auto what = [&](int i) { return StrCat("SendTensors tensor '", request.keys(i), "' of step ", step_id); };
  int64_t bytes = 0;  // saturates: a sum beyond int64 is beyond every limit
  auto add = [&](int64_t more) {
    if (!AddSizes(bytes, more, &bytes)) bytes = std::numeric_limits<int64_t>::max();
  };
  for (int i = 0; i < request.keys_size(); ++i) {
    CheckTransferKey(request.keys(i), "SendTensors key");
    add(kKeyOverheadBytes + static_cast<int64_t>(request.keys(i).size()));
    if (!has_value(i)) continue;
    const int64_t tensor_bytes = DecodedTensorBytes(request.tensors(i), what(i));
    // Even a running step gets no tensor beyond the total bound (a few bytes can claim any size).
    if (tensor_bytes > limits_.max_pending_bytes) {
      ResourceExhausted(what(i), " would take ", tensor_bytes,
                        " bytes, more than ServerLimits::max_pending_bytes (", limits_.max_pending_bytes,
                        ")");
    }
    add(tensor_bytes);
  }
  // Whether the step started here decides whether the pending limits apply: checked before
  // decoding (which allocates), and again when the tensors are stored.
  auto check = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> std::shared_ptr<StepState> {
    if (shutting_down_) Unavailable("Task ", task_name_, " is shutting down");
    if (ended_steps_.count(step_id) != 0) return nullptr;  // it ended here: nobody waits
    auto it = steps_.find(step_id);
    const StepState* step = it == steps_.end() ? nullptr : it->second.get();
    if (step == nullptr || !step->claimed) CheckPendingLimitsLocked(step_id, step, bytes);
    return it == steps_.end() ? std::make_shared<StepState>() : it->second;
  };
  {
    absl::MutexLock lock(&mu_);
    if (check() == nullptr) return;
  }
  std::vector<Tensor> tensors;
  for (int i = 0; i < request.keys_size(); ++i) {
    tensors.push_back(has_value(i) ? DecodeTensor(request.tensors(i), what(i)) : Tensor());
  }
  std::shared_ptr<StepState> step;
  {
    absl::MutexLock lock(&mu_);
    step = check();
    if (step == nullptr) return;
    if (!step->claimed) {
      auto [it, created] = steps_.emplace(step_id, step);
      if (created) {
        pending_order_.emplace_back(step->created, step_id);
        pending_bytes_ += step->bytes;
      }
      step->bytes += bytes;
      pending_bytes_ += bytes;
    }
  }
  absl::MutexLock lock(&step->mu);
  for (int i = 0; i < request.keys_size(); ++i) {
    if (is_dead(i)) step->received_dead.insert(request.keys(i));
    step->received[request.keys(i)] = std::move(tensors[i]);
  }
  step->cv.SignalAll();
}

grpc::Status Worker::RunStep(grpc::ServerContext* context, const RunStepRequest* request,
                             RunStepResponse* response) {
  if (grpc::Status denied = CheckCallToken(*context, security_.token); !denied.ok()) return denied;
  grpc::Status status = ToRpcStatus([&] { RunStepOrThrow(context, *request, response); });
  absl::MutexLock lock(&mu_);
  if (!status.ok() && shutting_down_) {
    // The step was cancelled because this task stops: to its master the task is lost.
    return ToRpcStatus([&] {
      Unavailable("Task ", task_name_, " stopped during step ", request->step_id(), ": ",
                  status.error_message());
    });
  }
  return status;
}

void Worker::RunStepOrThrow(grpc::ServerContext* context, const RunStepRequest& request,
                            RunStepResponse* response) {
  const int64_t step_id = request.step_id();
  const Clock::time_point deadline = request.timeout_in_ms() > 0
                                         ? Clock::now() + std::chrono::milliseconds(request.timeout_in_ms())
                                         : Clock::time_point::max();
  CancellationManager step_cancellation;
  ActiveStep active{context, &step_cancellation, nullptr};
  std::shared_ptr<Partition> partition;
  std::shared_ptr<StepState> step;
  {
    absl::MutexLock lock(&mu_);
    CheckJobNotEndedLocked();
    partition = FindPartitionLocked(request.handle());
    step = ClaimStepLocked(step_id);
    active.partition = partition.get();
    active_steps_.insert(&active);
    ++partition->steps_running;
    partition->last_used = Clock::now();
  }
  struct Cleanup {
    Worker* self;
    ActiveStep* active;
    Partition* partition;
    int64_t step_id;
    ~Cleanup() {
      {
        absl::MutexLock lock(&self->mu_);
        self->active_steps_.erase(active);
        --partition->steps_running;
        partition->last_used = Clock::now();
      }
      self->FinishStep(step_id);
    }
  } cleanup{this, &active, partition.get(), step_id};

  if (request.feed_indices_size() != request.feeds_size()) {
    InvalidArgument("RunStep: ", request.feed_indices_size(), " feed indices for ", request.feeds_size(),
                    " feeds");
  }
  std::unordered_map<int, Tensor> client_feeds;
  for (int i = 0; i < request.feeds_size(); ++i) {
    client_feeds.emplace(request.feed_indices(i), DecodeTensor(request.feeds(i), StrCat("RunStep feed ", i)));
  }
  std::unordered_map<std::string, Tensor> local;
  std::unordered_set<std::string> local_dead;  // keys of `local` whose tensors are dead
  ExecutorRunArgs args;
  args.deadline = deadline;
  args.cancellation = &step_cancellation;
  args.step_id = step_id;
  // One container for the step's TensorArrays and stacks, shared by its stages (a stack
  // pushed in one stage pops in a later one) and dropped by FinishStep however the step ends.
  const std::string step_container = StepContainer(step_id);
  args.step_container = step_container;
  RunMetadata trace;
  if (request.trace()) args.trace = &trace;
  std::vector<Tensor> feeds;
  std::vector<bool> dead_feeds;
  std::vector<bool> dead_outputs;
  for (Partition::StageRuntime& stage : partition->stages) {
    feeds.clear();
    dead_feeds.clear();
    {
      absl::MutexLock lock(&step->mu);
      auto all_received = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(step->mu) {
        for (const std::string& key : stage.awaited) {
          if (step->received.count(key) == 0) return false;
        }
        return true;
      };
      while (!all_received()) {
        if (step_cancellation.IsCancelled()) Cancelled("Step ", step_id, " was cancelled on ", task_name_);
        if (Clock::now() >= deadline) {
          DeadlineExceeded("Timed out waiting for tensors from other tasks in step ", step_id, " on ",
                           task_name_);
        }
        const Clock::time_point now = Clock::now();
        step->cv.WaitWithTimeout(&step->mu, absl::FromChrono(std::min(deadline, now + kPollInterval) - now));
      }
      for (const Partition::Input& input : stage.inputs) {
        if (input.kind == StageInput::kClientFeed) {
          auto it = client_feeds.find(input.feed);
          if (it == client_feeds.end()) InvalidArgument("RunStep misses feed ", input.feed);
          feeds.push_back(it->second);
          dead_feeds.push_back(false);
        } else if (input.kind == StageInput::kTransferKey) {
          feeds.push_back(step->received.at(input.key));
          dead_feeds.push_back(step->received_dead.count(input.key) != 0);
        } else {
          feeds.push_back(local.at(input.key));
          dead_feeds.push_back(local_dead.count(input.key) != 0);
        }
      }
    }
    if (step_cancellation.IsCancelled()) Cancelled("Step ", step_id, " was cancelled on ", task_name_);
    // Always given: a dead feed the master did not expect fails the stage (Internal), never
    // runs as a value.
    args.dead_feeds = &dead_feeds;
    args.dead_fetches = &dead_outputs;
    std::vector<Tensor> outputs = stage.executor->Run(args, feeds);
    std::map<std::pair<std::string, int>, SendTensorsRequest> pushes;
    for (int i = 0; i < stage.spec.outputs_size(); ++i) {
      const StageOutput& spec = stage.spec.outputs(i);
      const bool dead = dead_outputs[i];
      if (!spec.local_key().empty()) {
        local[spec.local_key()] = outputs[i];
        if (dead) local_dead.insert(spec.local_key());
      }
      if (dead && spec.client_fetches_size() != 0) {
        InvalidArgument("Retval[", spec.client_fetches(0), "] does not have value: the fetched tensor ",
                        spec.tensor(), " on ", task_name_,
                        " is dead (it is on a branch the run did not take)");
      }
      if (spec.client_fetches_size() == 0 && spec.pushes_size() == 0) continue;
      const tensorflow::TensorProto proto = dead ? tensorflow::TensorProto() : TensorToProto(outputs[i]);
      for (int fetch : spec.client_fetches()) {
        response->add_fetch_indices(fetch);
        *response->add_fetches() = proto;
      }
      for (const PushTarget& push : spec.pushes()) {
        SendTensorsRequest& out = pushes[{push.job(), push.task()}];
        out.add_keys(push.key());
        *out.add_tensors() = proto;
        out.add_is_dead(dead);
      }
    }
    for (const PushTarget& push : stage.spec.control_pushes()) {
      SendTensorsRequest& out = pushes[{push.job(), push.task()}];
      out.add_keys(push.key());
      out.add_tensors();
      out.add_is_dead(false);
    }
    for (auto& [task, out] : pushes) Push(step_id, task.first, task.second, out, deadline);
  }
  if (request.trace()) *response->mutable_step_stats() = std::move(*trace.mutable_step_stats());
}

}  // namespace flowtrain::distributed
