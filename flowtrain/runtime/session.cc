#include "flowtrain/runtime/session.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/runtime/device_spec.h"
#include "flowtrain/runtime/graph_function_runtime.h"
#include "flowtrain/runtime/internal/function_lowering.h"
#include "flowtrain/runtime/run_arguments.h"

namespace flowtrain {
namespace {

int ThreadCount(int requested) { return requested > 0 ? requested : NumSchedulableCPUs(); }

}  // namespace

Session::Session(Graph& graph, SessionOptions options)
    : Session(
          graph,
          [&] {
            if (!options.target.empty()) {
              InvalidArgument("Session target '", options.target,
                              "' is not served by the in-process runtime; use NewSession()");
            }
            return std::move(options);
          }(),
          std::make_shared<ResourceMgr>()) {}

Session::Session(Graph& graph, SessionOptions options, std::shared_ptr<ResourceMgr> shared_state)
    : graph_(graph), options_(std::move(options)), resource_mgr_(std::move(shared_state)) {
  if (resource_mgr_ == nullptr) InvalidArgument("Session needs a resource manager");
  const int inter = ThreadCount(options_.config.inter_op_parallelism_threads);
  const int intra = ThreadCount(options_.config.intra_op_parallelism_threads);
  if (inter > 1) inter_op_pool_ = std::make_unique<ThreadPool>("inter_op", inter);
  intra_op_pool_ = std::make_unique<ThreadPool>("intra_op", intra);
}

Session::Session(SessionOptions options) : Session(GetDefaultGraph(), std::move(options)) {}

Session::~Session() {
  Close();
  absl::MutexLock lock(&runs_mu_);
  while (runs_in_flight_ != 0) runs_cv_.Wait(&runs_mu_);
}

void Session::Close() {
  if (closed_.exchange(true)) return;
  cancellation_.StartCancel();
}

int Session::num_compiled_plans() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(executors_.size());
}

void Session::CheckPlacement(const Node* node) const {
  const std::string& requested = node->requested_device();
  if (requested.empty()) {
    node->set_assigned_device(kLocalCpuDevice);
    return;
  }
  const DeviceSpec spec = DeviceSpec::Parse(requested);
  const bool local_job = spec.job.empty() || spec.job == "localhost";
  const bool local_task = (!spec.task || *spec.task == 0) && (!spec.replica || *spec.replica == 0);
  const bool cpu = spec.device_type.empty() || spec.device_type == "CPU";
  const bool soft = options_.config.allow_soft_placement && local_job && local_task;
  if (!(local_job && local_task && cpu) && !soft) {
    InvalidArgument("Cannot assign a device for operation ", node->name(), ": node ", node->name(),
                    " was explicitly assigned to ", requested, " but available devices are [ ",
                    kLocalCpuDevice, " ]. Make sure the device specification refers to a valid device.");
  }
  node->set_assigned_device(kLocalCpuDevice);
  if (options_.config.log_device_placement) {
    FT_LOG(INFO) << node->name() << ": (" << node->type() << "): " << kLocalCpuDevice;
  }
}

OpKernel* Session::GetKernel(const Node* node) {
  absl::MutexLock lock(&kernels_mu_);
  auto it = kernels_.find(node);
  if (it != kernels_.end()) return it->second.get();
  CheckPlacement(node);
  auto kernel = KernelRegistry::Global()->CreateKernel(*node);
  OpKernel* raw = kernel.get();
  kernels_.emplace(node, std::move(kernel));
  return raw;
}

const Executor& Session::GetOrCompile(const std::vector<Endpoint>& feeds,
                                      const std::vector<Endpoint>& fetches,
                                      const std::vector<const Node*>& targets) {
  std::vector<int64_t> key = RunSignatureKey(feeds, fetches, targets);
  absl::MutexLock lock(&mu_);
  auto it = executors_.find(key);
  if (it != executors_.end()) return *it->second;
  const Graph& executable = ExecutableGraph();
  if (&executable != &graph_) {
    // The lowered graph keeps every name of graph_ (a lowered call leaves a node of its name
    // with its outputs), so the run's endpoints carry over by name.
    auto map = [&](const Node* n) -> Node* {
      Node* m = executable.FindNode(n->name());
      if (m == nullptr) Internal("The lowered graph lost node ", n->name());
      return m;
    };
    std::vector<Endpoint> mapped_feeds, mapped_fetches;
    std::vector<const Node*> mapped_targets;
    for (const Endpoint& e : feeds) mapped_feeds.push_back({map(e.node), e.index});
    for (const Endpoint& e : fetches) mapped_fetches.push_back({map(e.node), e.index});
    for (const Node* n : targets) mapped_targets.push_back(map(n));
    return Compile(std::move(key), mapped_feeds, mapped_fetches, mapped_targets);
  }
  return Compile(std::move(key), feeds, fetches, targets);
}

const Graph& Session::ExecutableGraph() {
  const int64_t version = graph_.version();
  if (version == lowered_version_) return *lowered_graphs_.back();
  if (!CallsFunctions(graph_)) return graph_;
  lowered_graphs_.push_back(LowerFunctionCalls(graph_));
  lowered_version_ = version;
  return *lowered_graphs_.back();
}

FunctionRuntime* Session::CurrentFunctionRuntime() {
  if (graph_.library().empty()) return nullptr;
  // Functions can be added without adding nodes, so their count is part of the version.
  const std::pair<int64_t, size_t> version{graph_.version(), graph_.library().ListFunctions().size()};
  if (version != function_runtime_version_) {
    function_runtimes_.push_back(GraphFunctionRuntime::Create(graph_.library(), resource_mgr_));
    function_runtime_version_ = version;
  }
  return function_runtimes_.back().get();
}

const Executor& Session::Compile(std::vector<int64_t> key, const std::vector<Endpoint>& feeds,
                                 const std::vector<Endpoint>& fetches,
                                 const std::vector<const Node*>& targets) {
  ExecutorEnv env;
  env.resource_mgr = resource_mgr_.get();
  env.inter_op_pool = inter_op_pool_.get();
  env.intra_op_pool = intra_op_pool_.get();
  env.get_kernel = [this](const Node* n) { return GetKernel(n); };
  env.function_runtime = CurrentFunctionRuntime();
  env.remapping = options_.config.remapping;
  env.dependency_optimization = options_.config.dependency_optimization;
  auto executor = std::make_unique<Executor>(env, feeds, fetches, targets);
  const Executor& ref = *executor;
  executors_.emplace(std::move(key), std::move(executor));
  return ref;
}

std::vector<Tensor> Session::Run(const FeedList& feeds, const FetchList& fetches,
                                 const std::vector<Operation>& targets, const RunOptions* run_options,
                                 RunMetadata* run_metadata) {
  if (closed_.load()) FailedPrecondition("Attempted to use a closed Session.");
  const RunArguments checked = CheckRunArguments(graph_, feeds, fetches, targets);
  const Executor& executor = GetOrCompile(checked.feeds, checked.fetches, checked.targets);

  ExecutorRunArgs args;
  args.cancellation = &cancellation_;
  args.step_id = next_step_id_.fetch_add(1, std::memory_order_relaxed);
  const int64_t timeout_ms = RunTimeoutMs(options_, run_options);
  if (timeout_ms > 0) {
    args.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  }
  if (run_options != nullptr && run_options->trace_level != RunOptions::kNoTrace && run_metadata != nullptr) {
    args.trace = run_metadata;
  }
  {
    absl::MutexLock lock(&runs_mu_);
    ++runs_in_flight_;
  }
  struct RunsInFlightGuard {
    Session* self;
    ~RunsInFlightGuard() {
      absl::MutexLock lock(&self->runs_mu_);
      if (--self->runs_in_flight_ == 0) self->runs_cv_.SignalAll();
    }
  } guard{this};
  return PlaceFetchedValues(checked, executor.Run(args, checked.feed_values));
}

std::vector<Tensor> Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                 const std::vector<std::string>& fetch_names,
                                 const std::vector<std::string>& target_names, const RunOptions* run_options,
                                 RunMetadata* run_metadata) {
  FeedList feed_list;
  for (const auto& [name, value] : feeds) feed_list.emplace_back(graph_.GetTensorByName(name), value);
  FetchList fetches;
  for (const std::string& name : fetch_names) {
    fetches.push_back(name.find(':') == std::string::npos ? graph_.GetTensorByName(name + ":0")
                                                          : graph_.GetTensorByName(name));
  }
  std::vector<Operation> targets;
  for (const std::string& name : target_names) targets.push_back(graph_.GetOperationByName(name));
  return Run(feed_list, fetches, targets, run_options, run_metadata);
}

}  // namespace flowtrain
