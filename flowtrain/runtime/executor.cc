#include "flowtrain/runtime/executor.h"

#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/container/inlined_vector.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/internal/step_resources.h"
#include "flowtrain/runtime/internal/control_flow_info.h"
#include "flowtrain/runtime/internal/frame_executor.h"
#include "flowtrain/runtime/internal/graph_rewrite.h"

namespace flowtrain {
namespace {

struct EndpointHash {
  size_t operator()(const Endpoint& e) const {
    return std::hash<const void*>()(e.node) * 31 + static_cast<size_t>(e.index);
  }
};

int64_t NowMicros() {
  timeval tv;
  gettimeofday(&tv, nullptr);
  return static_cast<int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec;
}

}  // namespace

struct Executor::Plan {
  struct Input {
    int entry;    // index of the entry holding the value
    bool as_ref;  // the kernel takes the variable itself (a TF1 Ref input)
  };
  struct Item {
    const Node* node;  // the graph node it runs (a fused group's last node)
    std::string type;  // its op, or the fused op, for traces
    OpKernel* kernel;
    int input_begin;  // into `inputs`
    int num_inputs;
    int output_begin;  // first entry of this node's outputs
    int num_outputs;
    int out_edge_begin;  // into `out_edges`
    int num_out_edges;
    int initial_pending;
    KernelCost cost;
  };

  ExecutorEnv env;
  std::vector<Item> items;  // in topological order
  std::vector<Input> inputs;
  std::vector<int> out_edges;                            // item indices
  std::vector<int> initial_uses;                         // per entry: consumers left before it can be freed
  std::vector<int> feed_entries;                         // per feed: its entry
  std::vector<int> fetch_entries;                        // per fetch: its entry
  std::vector<int> roots;                                // items with nothing to wait for
  std::vector<std::unique_ptr<OpKernel>> fused_kernels;  // of the fused groups' items
  int num_entries = 0;
  bool run_inline = true;
  // Some item creates resources in the step container (framework/internal/step_resources.h).
  bool creates_step_resources = false;

  // The entry holding endpoint `e`'s value: its feed's, or its producer's output.
  int EntryOf(const Compilation& c, const Endpoint& e) const;

  // Run states are reused across runs so a step allocates nothing for bookkeeping.
  mutable absl::Mutex free_states_mu;
  mutable std::vector<std::unique_ptr<RunState>> free_states ABSL_GUARDED_BY(free_states_mu);
};

struct Executor::RunState {
  explicit RunState(const Plan& plan)
      : tensors(plan.num_entries),
        refs(plan.num_entries, nullptr),
        uses(plan.num_entries),
        atomic_uses(plan.num_entries),
        pending(plan.items.size()) {}

  void Reset(const Plan& plan) {
    std::fill(refs.begin(), refs.end(), nullptr);
    if (plan.run_inline) {
      std::copy(plan.initial_uses.begin(), plan.initial_uses.end(), uses.begin());
    } else {
      for (size_t i = 0; i < atomic_uses.size(); ++i) {
        atomic_uses[i].store(plan.initial_uses[i], std::memory_order_relaxed);
      }
      for (size_t i = 0; i < plan.items.size(); ++i) {
        pending[i].store(plan.items[i].initial_pending, std::memory_order_relaxed);
      }
      outstanding.store(0);
      failed.store(false);
      absl::MutexLock lock(&mu);  // uncontended: the state is not shared until the run starts
      done = false;
      error = nullptr;
    }
  }

  std::vector<Tensor> tensors;
  std::vector<Var*> refs;
  std::vector<int> uses;                      // inline runs
  std::vector<std::atomic<int>> atomic_uses;  // parallel runs
  std::vector<std::atomic<int>> pending;
  std::atomic<int> outstanding{0};
  std::atomic<bool> failed{false};
  absl::Mutex mu;
  absl::CondVar cv;  // signalled when done becomes true
  bool done ABSL_GUARDED_BY(mu) = false;
  std::exception_ptr error ABSL_GUARDED_BY(mu);
  std::vector<tensorflow::NodeExecStats> stats ABSL_GUARDED_BY(mu);
};

struct Executor::Compilation {
  std::unordered_map<Endpoint, int, EndpointHash> feed_index;  // fed endpoint -> feed number
  std::vector<ExecNode> exec;                                  // the nodes to execute, fused groups as one
  std::unordered_map<const Node*, int> exec_of;                // every needed graph node -> its exec index
  std::vector<int> order;                                      // exec indices in execution order
  std::vector<int> position;                                   // exec index -> plan item index
  size_t num_needed = 0;                                       // graph nodes the run needs

  bool fed(const Endpoint& e) const { return feed_index.count(e) != 0; }
  int item_of(const Node* n) const { return position[exec_of.at(n)]; }
};

Executor::Executor(const ExecutorEnv& env, const std::vector<Endpoint>& feeds,
                   const std::vector<Endpoint>& fetches, const std::vector<const Node*>& targets)
    : plan_(std::make_unique<Plan>()) {
  plan_->env = env;
  Compilation c;
  for (size_t i = 0; i < feeds.size(); ++i) c.feed_index.emplace(feeds[i], static_cast<int>(i));
  const std::vector<const Node*> needed = PruneToNeededNodes(c, fetches, targets);
  FuseForExecution(c, needed, feeds, fetches, targets, env.remapping, env.dependency_optimization);
  OrderTopologically(c);
  LayOutItems(c);
  ConnectInputs(c);
  ReserveFetchedEntries(c, fetches);
  ChooseInlineOrParallel();
  CompileFrames(c, fetches);
}

std::vector<const Node*> Executor::PruneToNeededNodes(const Compilation& c,
                                                      const std::vector<Endpoint>& fetches,
                                                      const std::vector<const Node*>& targets) {
  std::unordered_set<const Node*> needed;
  std::vector<const Node*> stack;
  auto need = [&](const Node* n) {
    if (needed.insert(n).second) stack.push_back(n);
  };
  for (const Endpoint& e : fetches) {
    if (!c.fed(e)) need(e.node);
  }
  for (const Node* n : targets) need(n);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Endpoint& in : n->inputs()) {
      if (!c.fed(in)) need(in.node);
    }
    for (const Node* control : n->control_inputs()) need(control);
  }
  std::vector<const Node*> pruned(needed.begin(), needed.end());
  std::sort(pruned.begin(), pruned.end(), [](const Node* a, const Node* b) { return a->id() < b->id(); });
  return pruned;
}

void Executor::FuseForExecution(Compilation& c, const std::vector<const Node*>& needed,
                                const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
                                const std::vector<const Node*>& targets, bool remapping,
                                bool dependency_optimization) {
  c.num_needed = needed.size();
  c.exec = flowtrain::RewriteForExecution(needed, feeds, fetches, targets, remapping);
  if (dependency_optimization) SkipKernelsNothingReads(c.exec, feeds, fetches, targets);
  for (size_t i = 0; i < c.exec.size(); ++i) {
    c.exec_of[c.exec[i].node] = static_cast<int>(i);
    for (const Node* f : c.exec[i].fused) c.exec_of[f] = static_cast<int>(i);
  }
}

// A topological order in which, among nodes whose inputs are ready, those that update a
// variable (they take a reference input: Assign, AssignAdd, Apply*) run after the others.
// So reads that no dependency orders against an update see the value from before the step,
// as they mostly do in TF (its updates sit at the end of deep gradient chains) and as the
// hooks' "stale global step" logic assumes. Ties go by creation order. A loop's back edge
// (NextIteration to Merge) is left out: it carries values to the next iteration.
void Executor::OrderTopologically(Compilation& c) {
  const std::vector<ExecNode>& exec = c.exec;
  c.order.reserve(exec.size());
  std::vector<int> in_degree(exec.size(), 0);
  std::vector<std::vector<int>> successors(exec.size());
  for (size_t i = 0; i < exec.size(); ++i) {
    for (const Endpoint& in : exec[i].inputs) {
      if (!c.fed(in) && CfKindOf(*in.node) != CfKind::kNextIteration) {
        ++in_degree[i];
        successors[c.exec_of.at(in.node)].push_back(static_cast<int>(i));
      }
    }
    for (const Node* control : exec[i].control_inputs) {
      ++in_degree[i];
      successors[c.exec_of.at(control)].push_back(static_cast<int>(i));
    }
  }
  auto priority = [&](int i) {
    bool updates = false;
    for (bool ref : exec[i].ref_inputs) updates = updates || ref;
    return (static_cast<int64_t>(updates) << 40) + exec[i].node->id();
  };
  using Entry = std::pair<int64_t, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (size_t i = 0; i < exec.size(); ++i) {
    if (in_degree[i] == 0) ready.emplace(priority(static_cast<int>(i)), static_cast<int>(i));
  }
  while (!ready.empty()) {
    const int n = ready.top().second;
    ready.pop();
    c.order.push_back(n);
    for (const int successor : successors[n]) {
      if (--in_degree[successor] == 0) ready.emplace(priority(successor), successor);
    }
  }
  if (c.order.size() != exec.size()) {
    Internal("The graph has a cycle among the ", c.num_needed, " nodes a run needs");
  }
}

void Executor::LayOutItems(Compilation& c) {
  Plan& plan = *plan_;
  int next_entry = 0;
  plan.items.resize(c.order.size());
  c.position.resize(c.exec.size());
  for (size_t i = 0; i < c.order.size(); ++i) {
    ExecNode& x = c.exec[c.order[i]];
    c.position[c.order[i]] = static_cast<int>(i);
    Plan::Item& item = plan.items[i];
    item.node = x.node;
    item.type = x.type;
    // The graph nodes' own kernels are created for a fused group too: that checks their
    // placement, and the session keeps them for runs that do not fuse.
    for (const Node* f : x.fused) plan.env.get_kernel(f);
    item.kernel = plan.env.get_kernel(x.node);
    if (x.kernel != nullptr) {
      item.kernel = x.kernel.get();
      plan.fused_kernels.push_back(std::move(x.kernel));
    }
    item.cost = item.kernel->cost();
    if (CreatesStepResources(x.node->type())) plan.creates_step_resources = true;
    item.output_begin = next_entry;
    item.num_outputs = x.node->num_outputs();
    next_entry += x.node->num_outputs();
  }
  plan.feed_entries.resize(c.feed_index.size());
  for (size_t i = 0; i < plan.feed_entries.size(); ++i) plan.feed_entries[i] = next_entry++;
  plan.num_entries = next_entry;
  plan.initial_uses.assign(plan.num_entries, 0);
}

int Executor::Plan::EntryOf(const Compilation& c, const Endpoint& e) const {
  auto fed = c.feed_index.find(e);
  if (fed != c.feed_index.end()) return feed_entries[fed->second];
  return items[c.item_of(e.node)].output_begin + e.index;
}

void Executor::ConnectInputs(const Compilation& c) {
  Plan& plan = *plan_;
  std::vector<std::vector<int>> consumers(c.order.size());
  for (size_t i = 0; i < c.order.size(); ++i) {
    Plan::Item& item = plan.items[i];
    const ExecNode& x = c.exec[c.order[i]];
    item.input_begin = static_cast<int>(plan.inputs.size());
    item.num_inputs = static_cast<int>(x.inputs.size());
    int pending = 0;
    for (size_t k = 0; k < x.inputs.size(); ++k) {
      const Endpoint& in = x.inputs[k];
      const int entry = plan.EntryOf(c, in);
      plan.inputs.push_back({entry, x.ref_inputs[k]});
      ++plan.initial_uses[entry];
      if (!c.fed(in)) {
        consumers[c.item_of(in.node)].push_back(static_cast<int>(i));
        ++pending;
      }
    }
    for (const Node* control : x.control_inputs) {
      consumers[c.item_of(control)].push_back(static_cast<int>(i));
      ++pending;
    }
    item.initial_pending = pending;
    if (pending == 0) plan.roots.push_back(static_cast<int>(i));
  }
  for (size_t i = 0; i < c.order.size(); ++i) {
    plan.items[i].out_edge_begin = static_cast<int>(plan.out_edges.size());
    plan.items[i].num_out_edges = static_cast<int>(consumers[i].size());
    plan.out_edges.insert(plan.out_edges.end(), consumers[i].begin(), consumers[i].end());
  }
}

void Executor::ReserveFetchedEntries(const Compilation& c, const std::vector<Endpoint>& fetches) {
  Plan& plan = *plan_;
  // Fetched entries are never freed during the run (they are read at the end).
  for (const Endpoint& e : fetches) {
    const int entry = plan.EntryOf(c, e);
    plan.fetch_entries.push_back(entry);
    plan.initial_uses[entry] += 1 << 20;
  }
}

// Can two non-cheap nodes ever be ready together? Simulate a schedule that runs cheap nodes
// as soon as they are ready and count the ready non-cheap ones.
// Overlapping kernels pays only for cores the intra-op pool leaves idle: kernels worth
// overlapping split themselves over that pool, so when it spans every core, two at once
// just take turns on the same cores (an MLP step ran 25% slower on 2 cores that way).
void Executor::ChooseInlineOrParallel() {
  Plan& plan = *plan_;
  const ExecutorEnv& env = plan.env;
  plan.run_inline = true;
  const bool cores_left_over =
      env.intra_op_pool == nullptr || env.intra_op_pool->NumThreads() < NumSchedulableCPUs();
  if (!cores_left_over || env.inter_op_pool == nullptr || env.inter_op_pool->NumThreads() <= 1) return;
  std::vector<int> pending(plan.items.size());
  for (size_t i = 0; i < plan.items.size(); ++i) pending[i] = plan.items[i].initial_pending;
  std::vector<int> cheap_ready, costly_ready;
  for (int r : plan.roots) {
    (plan.items[r].cost == KernelCost::kCheap ? cheap_ready : costly_ready).push_back(r);
  }
  auto complete = [&](int i) {
    const Plan::Item& item = plan.items[i];
    for (int k = 0; k < item.num_out_edges; ++k) {
      const int dst = plan.out_edges[item.out_edge_begin + k];
      if (--pending[dst] == 0) {
        (plan.items[dst].cost == KernelCost::kCheap ? cheap_ready : costly_ready).push_back(dst);
      }
    }
  };
  while (!cheap_ready.empty() || !costly_ready.empty()) {
    if (!cheap_ready.empty()) {
      const int i = cheap_ready.back();
      cheap_ready.pop_back();
      complete(i);
      continue;
    }
    if (costly_ready.size() > 1) {
      plan.run_inline = false;
      return;
    }
    const int i = costly_ready.back();
    costly_ready.pop_back();
    complete(i);
  }
}

void Executor::CompileFrames(const Compilation& c, const std::vector<Endpoint>& fetches) {
  const Plan& plan = *plan_;
  const bool control_flow = std::any_of(c.exec.begin(), c.exec.end(), [](const ExecNode& x) {
    if (IsControlFlowOp(*x.node)) return true;
    return std::any_of(x.fused.begin(), x.fused.end(), [](const Node* f) { return IsControlFlowOp(*f); });
  });
  if (!control_flow && !plan.env.feeds_may_be_dead) return;
  std::vector<FrameExecutor::Item> items(c.order.size());
  for (size_t i = 0; i < c.order.size(); ++i) {
    const ExecNode& x = c.exec[c.order[i]];
    FrameExecutor::Item& item = items[i];
    item.graph.node = x.node;
    for (const Endpoint& in : x.inputs) {
      auto fed = c.feed_index.find(in);
      item.graph.inputs.push_back(fed != c.feed_index.end() ? CfNode::Input{-1, fed->second}
                                                            : CfNode::Input{c.item_of(in.node), in.index});
    }
    for (const Node* control : x.control_inputs) item.graph.control_inputs.push_back(c.item_of(control));
    item.type = plan.items[i].type;
    item.kernel = plan.items[i].kernel;
    item.cost = plan.items[i].cost;
    item.ref_inputs = x.ref_inputs;
  }
  std::vector<FrameExecutor::Fetch> frame_fetches;
  for (const Endpoint& e : fetches) {
    auto fed = c.feed_index.find(e);
    frame_fetches.push_back(fed != c.feed_index.end() ? FrameExecutor::Fetch{-1, fed->second}
                                                      : FrameExecutor::Fetch{c.item_of(e.node), e.index});
  }
  const ExecutorEnv& env = plan.env;
  const bool cores_left_over =
      env.intra_op_pool == nullptr || env.intra_op_pool->NumThreads() < NumSchedulableCPUs();
  ThreadPool* pool = cores_left_over && env.inter_op_pool != nullptr && env.inter_op_pool->NumThreads() > 1
                         ? env.inter_op_pool
                         : nullptr;
  frames_ = std::make_unique<FrameExecutor>(std::move(items), static_cast<int>(c.feed_index.size()),
                                            std::move(frame_fetches), pool);
}

Executor::~Executor() = default;

int Executor::num_nodes() const { return static_cast<int>(plan_->items.size()); }
bool Executor::runs_inline() const { return plan_->run_inline; }

namespace {

[[noreturn]] void RethrowForNode(const Node& node) {
  try {
    throw;
  } catch (const Error& e) {
    ThrowError(e.code(), StrCat(e.what(), "\n\t [[node ", node.name(), "]]"));
  } catch (const std::exception& e) {
    Unknown(e.what(), "\n\t [[node ", node.name(), "]]");
  }
}

}  // namespace

struct Executor::Step {
  const ExecutorRunArgs& args;
  OpKernelContext::Params base_params;  // what every kernel of the run is given
  bool tracing;
};

std::vector<Tensor> Executor::Run(const ExecutorRunArgs& args, std::span<const Tensor> feed_values) const {
  const Plan& plan = *plan_;
  if (feed_values.size() != plan.feed_entries.size()) {
    Internal("Executor::Run got ", feed_values.size(), " feeds for ", plan.feed_entries.size());
  }
  Step step{args, {}, args.trace != nullptr};
  step.base_params.resource_mgr = plan.env.resource_mgr;
  step.base_params.cancellation = args.cancellation;
  step.base_params.intra_op_pool = plan.env.intra_op_pool;
  step.base_params.deadline = args.deadline;
  step.base_params.step_id = args.step_id;
  step.base_params.step_container = args.step_container;
  step.base_params.function_runtime = plan.env.function_runtime;
  // Only plans that make TensorArrays or stacks pay for a container of their own.
  std::string own_step_container;
  if (args.step_container.empty() && plan.creates_step_resources) {
    // Unique per run even when sessions share a resource manager (their step ids may collide).
    static std::atomic<int64_t> next_step_container{0};
    own_step_container = StrCat("__per_step_", next_step_container.fetch_add(1, std::memory_order_relaxed));
    step.base_params.step_container = own_step_container;
  }
  // The run's own TensorArrays and stacks go when it ends, however it ends.
  struct DropStepContainer {
    ResourceMgr* resource_mgr;
    const std::string& name;
    ~DropStepContainer() {
      if (resource_mgr != nullptr && !name.empty()) resource_mgr->Cleanup(name);
    }
  } drop_step_container{plan.env.resource_mgr, own_step_container};
  if (args.dead_feeds != nullptr && args.dead_feeds->size() != feed_values.size()) {
    Internal("Executor::Run got ", args.dead_feeds->size(), " dead flags for ", feed_values.size(), " feeds");
  }
  if (frames_ != nullptr) return RunFrames(step, feed_values);
  if (args.dead_feeds != nullptr &&
      std::find(args.dead_feeds->begin(), args.dead_feeds->end(), true) != args.dead_feeds->end()) {
    Internal("A dead feed for a plan compiled without ExecutorEnv::feeds_may_be_dead");
  }
  if (args.dead_fetches != nullptr) args.dead_fetches->assign(plan.fetch_entries.size(), false);

  std::unique_ptr<RunState> state = AcquireRunState();
  RunState& s = *state;
  for (size_t i = 0; i < feed_values.size(); ++i) s.tensors[plan.feed_entries[i]] = feed_values[i];
  std::exception_ptr error = plan.run_inline ? RunInline(s, step) : RunParallel(s, step);
  std::vector<Tensor> results = CollectFetches(s, error);
  RecordTrace(s, step);
  ReleaseRunState(std::move(state));
  if (error != nullptr) std::rethrow_exception(error);
  return results;
}

std::vector<Tensor> Executor::RunFrames(const Step& step, std::span<const Tensor> feed_values) const {
  std::vector<tensorflow::NodeExecStats> stats;
  std::vector<Tensor> results;
  std::exception_ptr error;
  try {
    results = frames_->Run(step.base_params, feed_values, step.tracing ? &stats : nullptr,
                           step.args.dead_feeds, step.args.dead_fetches);
  } catch (...) {
    error = std::current_exception();
  }
  if (step.tracing) {
    auto* dev = step.args.trace->mutable_step_stats()->add_dev_stats();
    dev->set_device(plan_->env.device_name);
    for (auto& node_stats : stats) *dev->add_node_stats() = std::move(node_stats);
  }
  if (error != nullptr) std::rethrow_exception(error);
  return results;
}

std::unique_ptr<Executor::RunState> Executor::AcquireRunState() const {
  const Plan& plan = *plan_;
  std::unique_ptr<RunState> state;
  {
    absl::MutexLock lock(&plan.free_states_mu);
    if (!plan.free_states.empty()) {
      state = std::move(plan.free_states.back());
      plan.free_states.pop_back();
    }
  }
  if (state == nullptr) state = std::make_unique<RunState>(plan);
  state->Reset(plan);
  return state;
}

void Executor::ExecuteItem(RunState& s, const Step& step, int index, bool parallel) const {
  const Plan& plan = *plan_;
  const Plan::Item& item = plan.items[index];
  absl::InlinedVector<const Tensor*, 8> inputs(item.num_inputs);
  absl::InlinedVector<Var*, 8> input_refs(item.num_inputs, nullptr);
  absl::InlinedVector<Tensor, 4> dereferenced;
  dereferenced.reserve(item.num_inputs);
  for (int k = 0; k < item.num_inputs; ++k) {
    const Plan::Input& in = plan.inputs[item.input_begin + k];
    Var* ref = s.refs[in.entry];
    if (in.as_ref) {
      if (ref == nullptr) {
        InvalidArgument("Input ", k, " of ", item.node->DebugName(), " needs a variable");
      }
      input_refs[k] = ref;
      dereferenced.emplace_back();  // ref inputs are read through input_ref()
      inputs[k] = &dereferenced.back();
    } else if (ref != nullptr) {
      // A variable read by value: its value now (TF1 dereferences at the consumer).
      dereferenced.push_back(ref->Read());
      inputs[k] = &dereferenced.back();
    } else {
      inputs[k] = &s.tensors[in.entry];
      if (!inputs[k]->IsInitialized()) {
        Internal("Input ", k, " of ", item.node->DebugName(), " has no value");
      }
    }
  }
  OpKernelContext::Params params = step.base_params;
  params.inputs = inputs.data();
  params.input_refs = input_refs.data();
  params.outputs = s.tensors.data() + item.output_begin;
  params.output_refs = s.refs.data() + item.output_begin;
  OpKernelContext ctx(params, *item.kernel);
  const int64_t start = step.tracing ? NowMicros() : 0;
  item.kernel->Compute(&ctx);
  if (step.tracing) {
    const int64_t end = NowMicros();
    tensorflow::NodeExecStats stats;
    stats.set_node_name(item.node->name());
    stats.set_timeline_label(StrCat(item.node->name(), " = ", item.type, "()"));
    stats.set_all_start_micros(start);
    stats.set_op_start_rel_micros(0);
    stats.set_op_end_rel_micros(end - start);
    stats.set_all_end_rel_micros(end - start);
    stats.set_thread_id(static_cast<uint32_t>(gettid()));
    absl::MutexLock lock(&s.mu);
    s.stats.push_back(std::move(stats));
  }
  for (int k = 0; k < item.num_inputs; ++k) {
    const int entry = plan.inputs[item.input_begin + k].entry;
    const bool last =
        parallel ? s.atomic_uses[entry].fetch_sub(1, std::memory_order_acq_rel) == 1 : --s.uses[entry] == 0;
    if (last) s.tensors[entry] = Tensor();
  }
  for (int k = 0; k < item.num_outputs; ++k) {
    const int entry = item.output_begin + k;
    if (plan.initial_uses[entry] == 0) s.tensors[entry] = Tensor();  // nobody reads it
  }
}

std::exception_ptr Executor::RunInline(RunState& s, const Step& step) const {
  const Plan& plan = *plan_;
  try {
    for (size_t i = 0; i < plan.items.size(); ++i) {
      try {
        ExecuteItem(s, step, static_cast<int>(i), false);
      } catch (...) {
        RethrowForNode(*plan.items[i].node);
      }
    }
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

// Parallel: each finished node decrements its consumers' pending counts; a consumer that
// reaches zero is ready. `outstanding` counts ready-or-running nodes; the run ends at 0.
std::exception_ptr Executor::RunParallel(RunState& s, const Step& step) const {
  const Plan& plan = *plan_;
  if (plan.roots.empty()) return nullptr;
  s.outstanding.store(static_cast<int>(plan.roots.size()));
  // Roots run here as newly ready nodes do: the cheap ones (variables, constants) and one
  // expensive one on this thread, other expensive ones on the pool. Handing every root to
  // the pool made the step's chain hop between threads, each hop a wake-up.
  absl::InlinedVector<int, 16> here;
  bool kept_expensive = false;
  for (const int root : plan.roots) {
    const bool expensive = plan.items[root].cost == KernelCost::kExpensive;
    if (expensive && kept_expensive) {
      plan.env.inter_op_pool->Schedule([this, &s, &step, root] { ProcessReadyItems(s, step, {root}); });
    } else {
      kept_expensive = kept_expensive || expensive;
      here.push_back(root);
    }
  }
  // Ready nodes are taken from the back: reverse so roots start in plan order.
  std::reverse(here.begin(), here.end());
  ProcessReadyItems(s, step, std::move(here));
  absl::MutexLock lock(&s.mu);
  while (!s.done) s.cv.Wait(&s.mu);
  return s.error;
}

void Executor::ProcessReadyItems(RunState& s, const Step& step, absl::InlinedVector<int, 16> ready) const {
  const Plan& plan = *plan_;
  while (!ready.empty()) {
    const int index = ready.back();
    ready.pop_back();
    const Plan::Item& item = plan.items[index];
    if (!s.failed.load(std::memory_order_acquire)) {
      try {
        if (step.args.cancellation != nullptr && step.args.cancellation->IsCancelled()) {
          Cancelled("Run was cancelled");
        }
        ExecuteItem(s, step, index, true);
      } catch (...) {
        absl::MutexLock lock(&s.mu);
        if (s.error == nullptr) {
          try {
            RethrowForNode(*item.node);
          } catch (...) {
            s.error = std::current_exception();
          }
        }
        s.failed.store(true, std::memory_order_release);
      }
    }
    // Newly ready consumers: cheap ones and one costly one continue on this thread,
    // other costly ones go to the pool.
    int newly_ready = 0;
    absl::InlinedVector<int, 8> to_dispatch;
    bool kept_costly = false;
    for (int k = 0; k < item.num_out_edges; ++k) {
      const int dst = plan.out_edges[item.out_edge_begin + k];
      if (s.pending[dst].fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
      ++newly_ready;
      const Plan::Item& next = plan.items[dst];
      bool costly = next.cost == KernelCost::kExpensive;
      if (next.cost == KernelCost::kNormal) {
        for (int i = 0; i < next.num_inputs && !costly; ++i) {
          const Tensor& t = s.tensors[plan.inputs[next.input_begin + i].entry];
          costly = t.IsInitialized() && t.NumElements() >= kDispatchElements;
        }
      }
      if (costly && kept_costly) {
        to_dispatch.push_back(dst);
      } else {
        kept_costly = kept_costly || costly;
        ready.push_back(dst);
      }
    }
    if (newly_ready > 0) s.outstanding.fetch_add(newly_ready, std::memory_order_acq_rel);
    for (int dst : to_dispatch) {
      plan.env.inter_op_pool->Schedule([this, &s, &step, dst] { ProcessReadyItems(s, step, {dst}); });
    }
    if (s.outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      absl::MutexLock lock(&s.mu);
      s.done = true;
      s.cv.SignalAll();
    }
  }
}

std::vector<Tensor> Executor::CollectFetches(RunState& s, std::exception_ptr& error) const {
  std::vector<Tensor> results;
  if (error != nullptr) return results;
  try {
    results.reserve(plan_->fetch_entries.size());
    for (int entry : plan_->fetch_entries) {
      results.push_back(s.refs[entry] != nullptr ? s.refs[entry]->Read() : s.tensors[entry]);
    }
  } catch (...) {
    error = std::current_exception();
  }
  return results;
}

void Executor::RecordTrace(RunState& s, const Step& step) const {
  if (!step.tracing) return;
  auto* dev = step.args.trace->mutable_step_stats()->add_dev_stats();
  dev->set_device(plan_->env.device_name);
  absl::MutexLock lock(&s.mu);  // every node has finished: only for the analysis' sake
  for (auto& stats : s.stats) *dev->add_node_stats() = std::move(stats);
  s.stats.clear();
}

void Executor::ReleaseRunState(std::unique_ptr<RunState> state) const {
  // Drop every tensor still held (fetched ones, feeds) before recycling the state.
  for (Tensor& t : state->tensors) t = Tensor();
  absl::MutexLock lock(&plan_->free_states_mu);
  plan_->free_states.push_back(std::move(state));
}

}  // namespace flowtrain
