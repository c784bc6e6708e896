#include "flowtrain/distributed/internal/worker.h"

#include <random>
#include <unordered_map>
#include <unordered_set>

#include "absl/time/time.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/distributed/internal/rpc_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/runtime/executor.h"

namespace flowtrain::distributed {
namespace {

using Clock = std::chrono::steady_clock;

// How often waits re-check cancellation; also the watchdog's period.
constexpr auto kPollInterval = std::chrono::milliseconds(20);
// Steps of this many recent ids are remembered as finished, so late pushes are dropped.
constexpr size_t kFinishedStepsKept = 4096;
// Pushes to a step nobody runs (its master failed before calling) are dropped after this.
constexpr auto kOrphanStepLifetime = std::chrono::minutes(10);

std::string RandomIncarnation() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device());
  return StrCat(rng() & 0xffffffffffffULL);
}

Endpoint ParseTensorName(Graph& graph, const std::string& name) {
  const size_t colon = name.rfind(':');
  Node* node = graph.FindNode(std::string_view(name).substr(0, colon));
  if (node == nullptr || colon == std::string::npos) {
    InvalidArgument("Partition output '", name, "' names no node of the partition");
  }
  return Endpoint{node, std::stoi(name.substr(colon + 1))};
}

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
  // Guarded by the worker's mu_ (the analysis cannot name another object's mutex).
  bool deregistered = false;
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
  // A RunStep runs it. Guarded by the worker's mu_, not by `mu` (the analysis cannot name
  // another object's mutex).
  bool claimed = false;
  Clock::time_point created = Clock::now();
};

Worker::Worker(ClusterSpec cluster, std::string job_name, int task_index, int intra_op_threads)
    : job_name_(std::move(job_name)),
      task_index_(task_index),
      task_name_(TaskName(job_name_, task_index_)),
      incarnation_(RandomIncarnation()),
      resource_mgr_(std::make_shared<ResourceMgr>()),
      intra_op_pool_(std::make_unique<ThreadPool>(
          "intra_op", intra_op_threads > 0 ? intra_op_threads : NumSchedulableCPUs())),
      cluster_(std::move(cluster)) {
  watchdog_ = std::thread([this] { WatchCancelledSteps(); });
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

void Worker::WatchCancelledSteps() {
  absl::MutexLock lock(&mu_);
  while (!shutting_down_) {
    watchdog_cv_.WaitWithTimeout(&mu_, absl::FromChrono(kPollInterval));
    for (ActiveStep* step : active_steps_) {
      if (step->context->IsCancelled()) step->cancellation->StartCancel();
    }
  }
}

grpc::Status Worker::GetStatus(grpc::ServerContext*, const GetStatusRequest*, GetStatusResponse* response) {
  response->set_cluster(cluster().ToString());
  response->set_job_name(job_name_);
  response->set_task_index(task_index_);
  return grpc::Status::OK;
}

grpc::Status Worker::RegisterGraph(grpc::ServerContext*, const RegisterGraphRequest* request,
                                   RegisterGraphResponse* response) {
  return ToRpcStatus([&] {
    auto partition = std::make_shared<Partition>();
    ImportGraphDef(request->graph_def(), &partition->graph);
    ExecutorEnv env;
    env.resource_mgr = resource_mgr_.get();
    env.intra_op_pool = intra_op_pool_.get();  // no inter-op pool: stages run inline
    env.device_name = StrCat(task_name_, "/device:CPU:0");
    env.remapping = !request->disable_remapping();
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
    for (const Stage& spec : request->stages()) {
      Partition::StageRuntime& stage = partition->stages.emplace_back();
      stage.spec = spec;
      std::vector<Endpoint> feeds;
      for (const StageInput& input : spec.inputs()) {
        Node* placeholder = partition->graph.FindNode(input.placeholder());
        if (placeholder == nullptr)
          InvalidArgument("No placeholder ", input.placeholder(), " in the partition");
        feeds.push_back(Endpoint{placeholder, 0});
        Partition::Input& in = stage.inputs.emplace_back();
        in.kind = input.source_case();
        if (in.kind == StageInput::kClientFeed) in.feed = input.client_feed();
        if (in.kind == StageInput::kTransferKey) {
          in.key = input.transfer_key();
          stage.awaited.push_back(in.key);
        }
        if (in.kind == StageInput::kLocalKey) in.key = input.local_key();
        stage.inputs_may_be_dead = stage.inputs_may_be_dead || input.may_be_dead();
      }
      for (const std::string& token : spec.awaited_controls()) stage.awaited.push_back(token);
      std::vector<Endpoint> fetches;
      for (const StageOutput& output : spec.outputs()) {
        fetches.push_back(ParseTensorName(partition->graph, output.tensor()));
      }
      std::vector<const Node*> stage_nodes;
      for (const std::string& name : spec.targets()) {
        const Node* node = partition->graph.FindNode(name);
        if (node == nullptr) InvalidArgument("No node ", name, " in the partition");
        stage_nodes.push_back(node);
      }
      ExecutorEnv stage_env = env;
      stage_env.feeds_may_be_dead = stage.inputs_may_be_dead;
      stage.executor = std::make_unique<Executor>(stage_env, feeds, fetches, OutermostNodes(stage_nodes));
    }
    absl::MutexLock lock(&mu_);
    if (shutting_down_) Unavailable("Task ", task_name_, " is shutting down");
    const std::string handle = StrCat(incarnation_, "/", ++next_handle_);
    partitions_.emplace(handle, std::move(partition));
    response->set_handle(handle);
  });
}

grpc::Status Worker::DeregisterGraph(grpc::ServerContext*, const DeregisterGraphRequest* request,
                                     DeregisterGraphResponse*) {
  std::vector<std::shared_ptr<Partition>> removed;  // destroyed after the lock is released
  absl::MutexLock lock(&mu_);
  for (const std::string& handle : request->handles()) {
    auto it = partitions_.find(handle);
    if (it == partitions_.end()) continue;
    it->second->deregistered = true;
    CancelStepsLocked(it->second.get());
    removed.push_back(std::move(it->second));
    partitions_.erase(it);
  }
  return grpc::Status::OK;
}

std::shared_ptr<Worker::Partition> Worker::FindPartition(const std::string& handle) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) Unavailable("Task ", task_name_, " is shutting down");
  auto it = partitions_.find(handle);
  if (it == partitions_.end()) {
    Aborted("Graph handle '", handle, "' is not registered on task ", task_name_,
            " (the task restarted, or the session was closed)");
  }
  return it->second;
}

std::string Worker::StepContainer(int64_t step_id) { return StrCat("__per_step_worker_", step_id); }

std::shared_ptr<Worker::StepState> Worker::GetOrCreateStep(int64_t step_id, bool for_run) {
  absl::MutexLock lock(&mu_);
  if (!for_run && finished_steps_.count(step_id) != 0) return nullptr;
  auto it = steps_.find(step_id);
  if (it == steps_.end()) {
    if (steps_.size() > 256) {
      const auto too_old = Clock::now() - kOrphanStepLifetime;
      std::erase_if(steps_, [&](const auto& entry) {
        return !entry.second->claimed && entry.second->created < too_old;
      });
    }
    it = steps_.emplace(step_id, std::make_shared<StepState>()).first;
  }
  if (for_run) it->second->claimed = true;
  return it->second;
}

void Worker::FinishStep(int64_t step_id) {
  resource_mgr_->Cleanup(StepContainer(step_id));
  absl::MutexLock lock(&mu_);
  steps_.erase(step_id);
  if (finished_steps_.insert(step_id).second) finished_order_.push_back(step_id);
  if (finished_order_.size() > kFinishedStepsKept) {
    finished_steps_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
}

WorkerService::Stub* Worker::StubFor(const std::string& job, int task, std::string* address) {
  absl::MutexLock lock(&mu_);
  *address = cluster_.task_address(job, task);
  std::unique_ptr<WorkerService::Stub>& stub = stubs_[*address];
  if (stub == nullptr) stub = NewWorkerStub(*address);
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

grpc::Status Worker::SendTensors(grpc::ServerContext*, const SendTensorsRequest* request,
                                 SendTensorsResponse*) {
  return ToRpcStatus([&] {
    {
      absl::MutexLock lock(&mu_);
      if (shutting_down_) Unavailable("Task ", task_name_, " is shutting down");
    }
    if (request->keys_size() != request->tensors_size()) {
      InvalidArgument("SendTensors: ", request->keys_size(), " keys for ", request->tensors_size(),
                      " tensors");
    }
    if (request->is_dead_size() != 0 && request->is_dead_size() != request->keys_size()) {
      InvalidArgument("SendTensors: ", request->is_dead_size(), " is_dead flags for ", request->keys_size(),
                      " keys");
    }
    auto is_dead = [&](int i) { return request->is_dead_size() != 0 && request->is_dead(i); };
    std::vector<Tensor> tensors;
    for (int i = 0; i < request->keys_size(); ++i) {
      // Control tokens ("^node") and dead tensors carry no value.
      const bool empty = request->keys(i).starts_with("^") || is_dead(i);
      tensors.push_back(empty ? Tensor() : TensorFromProto(request->tensors(i)));
    }
    std::shared_ptr<StepState> step = GetOrCreateStep(request->step_id(), false);
    if (step == nullptr) return;  // the step already ended here (it failed): nobody waits
    absl::MutexLock lock(&step->mu);
    for (int i = 0; i < request->keys_size(); ++i) {
      if (is_dead(i)) step->received_dead.insert(request->keys(i));
      step->received[request->keys(i)] = std::move(tensors[i]);
    }
    step->cv.SignalAll();
  });
}

grpc::Status Worker::RunStep(grpc::ServerContext* context, const RunStepRequest* request,
                             RunStepResponse* response) {
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
  std::shared_ptr<Partition> partition = FindPartition(request.handle());
  const int64_t step_id = request.step_id();
  const Clock::time_point deadline = request.timeout_in_ms() > 0
                                         ? Clock::now() + std::chrono::milliseconds(request.timeout_in_ms())
                                         : Clock::time_point::max();
  CancellationManager step_cancellation;
  ActiveStep active{context, &step_cancellation, partition.get()};
  std::shared_ptr<StepState> step = GetOrCreateStep(step_id, true);
  {
    absl::MutexLock lock(&mu_);
    active_steps_.insert(&active);
    // Deregistered or shut down since FindPartition: the cancellation missed this step.
    if (partition->deregistered || shutting_down_) step_cancellation.StartCancel();
  }
  struct Cleanup {
    Worker* self;
    ActiveStep* active;
    int64_t step_id;
    ~Cleanup() {
      {
        absl::MutexLock lock(&self->mu_);
        self->active_steps_.erase(active);
      }
      self->FinishStep(step_id);
    }
  } cleanup{this, &active, step_id};

  std::unordered_map<int, Tensor> client_feeds;
  if (request.feed_indices_size() != request.feeds_size()) InvalidArgument("RunStep: feeds mismatch");
  for (int i = 0; i < request.feeds_size(); ++i) {
    client_feeds.emplace(request.feed_indices(i), TensorFromProto(request.feeds(i)));
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
          if (it == client_feeds.end()) Internal("RunStep misses feed ", input.feed);
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
