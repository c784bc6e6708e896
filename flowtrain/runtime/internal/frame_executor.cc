#include "flowtrain/runtime/internal/frame_executor.h"

#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <exception>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {

// How a node's value moves when the executor forwards it itself (see Runner::Forward).
enum class FrameExecutor::Forwarding : uint8_t {
  kKernel,  // the kernel computes the outputs
  kInput0,  // output 0 is input 0: Enter, Exit, NextIteration, LoopCond, Identity
  kSwitch,  // input 0 to output 1 when input 1 is true, else to output 0
  kMerge,   // the first live input to output 0, its index to output 1
};

// Static, per plan item.
struct FrameExecutor::NodeInfo {
  int frame;       // static frame it runs in
  int local;       // its index among the frame's nodes (pending and dead counts)
  int slot_begin;  // its first input slot among the frame's
  int num_inputs;
  int num_outputs;
  CfKind kind;
  bool constant_enter;
  int child_frame;  // Enter: the frame it enters
  int edge_begin;   // into edges_
  int num_edges;
  bool fetched;  // some fetch reads one of its outputs
  Forwarding forwarding;
  bool index_used;  // a Merge whose value_index output is read
};

struct FrameExecutor::Edge {
  int dst;         // item
  int src_output;  // -1: a control edge
  int dst_input;   // the consumer's input index (data edges)
  bool last;       // the last data edge of its output: the value can move along it
};

struct FrameExecutor::Frame {
  std::string name;
  int parent;
  int64_t parallel_iterations;
  int num_enters;
  int num_constant_enters = 0;
  int num_slots = 0;
  std::vector<int> initial_pending;  // per local node
};

// One output of a node as it travels along edges. A loop invariant is lent, not copied:
// its frame instance keeps it until every iteration is done, and a copy would cost two
// atomic reference-count updates per iteration.
struct FrameExecutor::Value {
  const Tensor& value() const { return borrowed != nullptr ? *borrowed : tensor; }
  Tensor tensor;
  const Tensor* borrowed = nullptr;  // not owned: a FrameInstance::invariants entry
  Var* ref = nullptr;
  bool live = false;
};

// A node's outputs, written by its kernel in place: output k is live when the kernel set it.
struct FrameExecutor::Outputs {
  explicit Outputs(int n) : tensors(n), refs(n, nullptr) {}
  bool live(int k) const { return refs[k] != nullptr || tensors[k].IsInitialized(); }
  absl::InlinedVector<Tensor, 4> tensors;
  absl::InlinedVector<Var*, 4> refs;
};

// One iteration of one frame instance: the state TF keeps per (frame, iteration).
struct FrameExecutor::Iteration {
  explicit Iteration(int frame) : frame(frame) {}
  const int frame;             // the static frame whose nodes it counts
  std::vector<int> pending;    // per local node: inputs still to arrive (Merge: TF's encoding)
  std::vector<int> dead;       // per local node: dead inputs arrived
  std::vector<Value> slots;    // per input slot of the frame's nodes
  int outstanding_ops = 0;     // ready or running nodes
  int outstanding_frames = 0;  // child frame instances not done
  absl::InlinedVector<FrameInstance*, 2> children;
};

// One instance of a loop frame (or the root): made by its first Enter in the parent's
// iteration `parent_iter`, gone when all its Enters arrived and all its iterations are done.
struct FrameExecutor::FrameInstance {
  int frame;
  FrameInstance* parent;
  int64_t parent_iter;
  int pending_enters;
  int64_t first_iter = 0;       // the oldest iteration not done
  int64_t iteration_count = 0;  // the newest iteration
  int outstanding_iterations = 1;
  // Iterations [first_iter, iteration_count], iteration i at i % ring.size() (a power of
  // two that only grows, so a warm loop allocates nothing per iteration).
  std::vector<Iteration*> ring = std::vector<Iteration*>(2);
  struct Carried {
    int item;
    Outputs outputs;
  };
  // Constant Enters' values, given to every new iteration (lent: reserved for all of the
  // frame's constant Enters, so it never reallocates under the slots that point into it).
  std::vector<Carried> invariants;
  std::vector<Carried> deferred;  // NextIterations waiting for parallel_iterations room
  std::vector<Carried> starting;  // the deferred ones being delivered (keeps its capacity)
  std::vector<int> dead_exits;    // dead Exits of the newest iteration

  Iteration* Get(int64_t iter) const { return ring[iter & (ring.size() - 1)]; }
  // Makes `it` the newest iteration, iteration_count (already advanced).
  void Append(Iteration* it) {
    if (static_cast<size_t>(iteration_count - first_iter) >= ring.size()) {
      std::vector<Iteration*> grown(ring.size() * 2);
      for (int64_t i = first_iter; i < iteration_count; ++i) grown[i & (grown.size() - 1)] = Get(i);
      ring.swap(grown);
    }
    ring[iteration_count & (ring.size() - 1)] = it;
  }
};

struct FrameExecutor::Tagged {
  int item;
  FrameInstance* frame;
  int64_t iter;
  Iteration* iteration;
  bool dead;
};

namespace {

int64_t NowMicros() {
  timeval tv;
  gettimeofday(&tv, nullptr);
  return static_cast<int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec;
}

// The error of that code and message, as the Error subclass ThrowError throws.
std::exception_ptr MakeError(Code code, std::string message) {
  try {
    ThrowError(code, std::move(message));
  } catch (...) {
    return std::current_exception();
  }
}

// The exception being handled, its node's name added as the static plan adds it.
std::exception_ptr WithNodeName(const Node& node) {
  try {
    throw;
  } catch (const Error& e) {
    return MakeError(e.code(), StrCat(e.what(), "\n\t [[node ", node.name(), "]]"));
  } catch (const std::exception& e) {
    return MakeError(Code::kUnknown, StrCat(e.what(), "\n\t [[node ", node.name(), "]]"));
  }
}

// Locks the run's mutex only when the run can have more than one thread: an inline run
// skips the lock on each node (a third of the per-node cost in a tight loop).
class ABSL_SCOPED_LOCKABLE StateLock {
 public:
  StateLock(absl::Mutex* mu, bool parallel) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(parallel ? mu : nullptr) {
    if (mu_ != nullptr) mu_->Lock();
  }
  ~StateLock() ABSL_UNLOCK_FUNCTION() {
    if (mu_ != nullptr) mu_->Unlock();
  }
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

 private:
  absl::Mutex* mu_;
};

}  // namespace

// The control-flow primitives and Identity only pass a value on (control_flow_kernels.cc,
// array_kernels.cc): the executor moves it from the input slot to the output itself. Through
// the kernel the value was copied into the output and the slot then cleared, two atomic
// reference-count updates per node, a fifth of a while loop's time.
FrameExecutor::Forwarding FrameExecutor::ForwardingOf(const Item& item) {
  const Node& node = *item.graph.node;
  if (item.type != node.type()) return Forwarding::kKernel;  // a fused group's kernel
  switch (CfKindOf(node)) {
    case CfKind::kSwitch:
      return Forwarding::kSwitch;
    case CfKind::kMerge:
      return Forwarding::kMerge;
    case CfKind::kEnter:
    case CfKind::kExit:
    case CfKind::kNextIteration:
      return Forwarding::kInput0;
    default:
      return node.type() == "LoopCond" || node.type() == "Identity" ? Forwarding::kInput0
                                                                    : Forwarding::kKernel;
  }
}

FrameExecutor::FrameExecutor(std::vector<Item> items, int num_feeds, std::vector<Fetch> fetches,
                             ThreadPool* pool)
    : items_(std::move(items)), fetches_(std::move(fetches)), pool_(pool) {
  std::vector<CfNode> graph;
  graph.reserve(items_.size());
  for (const Item& item : items_) graph.push_back(item.graph);
  const ControlFlowInfo info = AnalyzeControlFlow(graph);

  frames_.resize(info.frames.size());
  for (size_t f = 0; f < info.frames.size(); ++f) {
    frames_[f].name = info.frames[f].name;
    frames_[f].parent = info.frames[f].parent;
    frames_[f].parallel_iterations = info.frames[f].parallel_iterations;
    frames_[f].num_enters = info.frames[f].num_enters;
  }
  std::vector<std::vector<Edge>> out(items_.size());
  feed_edges_.resize(num_feeds);
  nodes_.resize(items_.size());
  for (size_t i = 0; i < items_.size(); ++i) {
    const CfNode& g = items_[i].graph;
    NodeInfo& n = nodes_[i];
    Frame& frame = frames_[info.frame_of[i]];
    n.frame = info.frame_of[i];
    n.local = static_cast<int>(frame.initial_pending.size());
    n.slot_begin = frame.num_slots;
    n.num_inputs = static_cast<int>(g.inputs.size());
    n.num_outputs = g.node->num_outputs();
    n.kind = CfKindOf(*g.node);
    n.constant_enter = n.kind == CfKind::kEnter && g.node->GetAttr<bool>("is_constant");
    n.child_frame = -1;
    n.fetched = false;
    n.forwarding = ForwardingOf(items_[i]);
    n.index_used = false;
    if (n.kind == CfKind::kMerge) {
      while (static_cast<int>(merge_indices_.size()) < n.num_inputs) {
        merge_indices_.push_back(Tensor::Scalar<int32_t>(static_cast<int32_t>(merge_indices_.size())));
      }
    }
    frame.num_slots += n.num_inputs;
    const int control = static_cast<int>(g.control_inputs.size());
    // A Merge waits for one live input (the low bit) and each control input (two each).
    frame.initial_pending.push_back(n.kind == CfKind::kMerge ? 1 + 2 * control : n.num_inputs + control);
    if (n.num_inputs + control == 0) roots_.push_back(static_cast<int>(i));
    for (int k = 0; k < n.num_inputs; ++k) {
      const CfNode::Input& in = g.inputs[k];
      const Edge e{static_cast<int>(i), in.output, k, false};
      if (in.item < 0) {
        feed_edges_[in.output].push_back(e);
      } else {
        out[in.item].push_back(e);
        if (in.output == 1) nodes_[in.item].index_used = true;  // read by a later item
      }
    }
    for (int c : g.control_inputs) out[c].push_back({static_cast<int>(i), -1, -1, false});
  }
  for (size_t i = 0; i < items_.size(); ++i) {
    std::vector<bool> seen(items_[i].graph.node->num_outputs(), false);
    for (auto e = out[i].rbegin(); e != out[i].rend(); ++e) {
      if (e->src_output >= 0 && !seen[e->src_output]) e->last = seen[e->src_output] = true;
    }
    nodes_[i].edge_begin = static_cast<int>(edges_.size());
    nodes_[i].num_edges = static_cast<int>(out[i].size());
    edges_.insert(edges_.end(), out[i].begin(), out[i].end());
    if (nodes_[i].kind == CfKind::kEnter && !out[i].empty()) {
      nodes_[i].child_frame = nodes_[out[i].front().dst].frame;
      if (nodes_[i].constant_enter) ++frames_[nodes_[i].child_frame].num_constant_enters;
    }
  }
  for (const Fetch& f : fetches_) {
    if (f.item < 0) continue;
    // An Exit's outputs are in its loop's parent frame.
    const NodeInfo& n = nodes_[f.item];
    const int frame = n.kind == CfKind::kExit ? frames_[n.frame].parent : n.frame;
    if (frame != 0) {
      InvalidArgument("Cannot fetch ", items_[f.item].graph.node->name(), ":", f.output,
                      ": it is inside loop frame '", info.frames[frame].name,
                      "' (fetch the loop's Exit instead)");
    }
    nodes_[f.item].fetched = true;
    if (f.output == 1) nodes_[f.item].index_used = true;
  }
}

FrameExecutor::~FrameExecutor() = default;

// One run's state: the frame instances and the ready nodes, all guarded by `mu` (kernels run
// outside it). Iterations and frame instances come from free lists, so a long loop
// allocates nothing per iteration once warm; the state itself is pooled across runs.
struct FrameExecutor::RunState {
  absl::Mutex mu;
  absl::CondVar cv;
  int outstanding ABSL_GUARDED_BY(mu) = 0;  // ready or running nodes, all frames
  std::exception_ptr error ABSL_GUARDED_BY(mu);
  std::atomic<bool> failed{false};
  std::vector<std::vector<Iteration*>> free_iterations ABSL_GUARDED_BY(mu);  // per static frame
  std::vector<Value> results ABSL_GUARDED_BY(mu);                            // per fetch
  std::vector<tensorflow::NodeExecStats>* stats = nullptr;                   // appended under mu
  std::vector<std::unique_ptr<Iteration>> owned_iterations ABSL_GUARDED_BY(mu);
  std::vector<std::unique_ptr<FrameInstance>> owned_frames ABSL_GUARDED_BY(mu);
  std::vector<FrameInstance*> free_frames ABSL_GUARDED_BY(mu);
  std::vector<Tagged> ready;  // the caller's ready nodes (only its thread touches them)
};

// Runs nodes and moves their outputs along; one per Run, used by every thread of the run.
class FrameExecutor::Runner {
 public:
  // A plain vector: the caller's is kept in the run state with its capacity, and
  // InlinedVector's out-of-line push was a tenth of the loop's time.
  using Ready = std::vector<Tagged>;

  Runner(const FrameExecutor& x, const OpKernelContext::Params& base, RunState& s)
      : x_(x), base_(base), s_(s) {}

  // Makes the root frame, delivers the feeds (dead where `dead_feeds`, null: all live, says so)
  // and puts the nodes ready to start in `ready`.
  void Start(std::span<const Tensor> feed_values, const std::vector<bool>* dead_feeds, Ready& ready) {
    StateLock lock(&s_.mu, x_.pool_ != nullptr);
    FrameInstance* root = NewFrame(0, nullptr, 0);
    Iteration* it = root->Get(0);
    for (size_t f = 0; f < x_.feed_edges_.size(); ++f) {
      const bool live = dead_feeds == nullptr || !(*dead_feeds)[f];
      for (const Edge& e : x_.feed_edges_[f])
        DeliverEdge(e, &feed_values[f], nullptr, live, root, 0, it, ready);
    }
    for (int r : x_.roots_) Push(ready, {r, root, 0, it, false});
  }

  // Runs `ready` and the nodes they make ready; costly ones beyond the first go to the pool.
  void Process(Ready& ready) {
    Ready next;
    while (!ready.empty()) {
      const Tagged t = ready.back();
      ready.pop_back();
      if (x_.pool_ == nullptr) {  // one thread: everything continues here
        RunNode(t, ready);
        continue;
      }
      next.clear();
      RunNode(t, next);
      bool kept_costly = false;
      for (const Tagged& n : next) {
        const bool costly = !n.dead && Costly(n);
        if (costly && kept_costly) {
          // The task builds its own Runner: this one lives on a stack that may be gone.
          x_.pool_->Schedule([&x = x_, &base = base_, s = &s_, n] {
            Ready ready{n};
            Runner(x, base, *s).Process(ready);
          });
        } else {
          kept_costly = kept_costly || costly;
          ready.push_back(n);
        }
      }
    }
  }

 private:
  // Worth another thread, by the static plan's rule: an expensive kernel, or a normal one
  // with a large input. Reads the slots of a ready node, which no other thread writes now.
  bool Costly(const Tagged& t) const {
    const Item& item = x_.items_[t.item];
    if (item.cost != KernelCost::kNormal) return item.cost == KernelCost::kExpensive;
    const NodeInfo& n = x_.nodes_[t.item];
    const Value* slots = t.iteration->slots.data() + n.slot_begin;
    for (int k = 0; k < n.num_inputs; ++k) {
      if (slots[k].live && slots[k].value().NumElements() >= kDispatchElements) return true;
    }
    return false;
  }

  void Push(Ready& ready, const Tagged& t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    ready.push_back(t);
    ++t.iteration->outstanding_ops;
    ++s_.outstanding;
  }

  void Fail(std::exception_ptr error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    if (s_.error == nullptr) s_.error = error;
    s_.failed.store(true, std::memory_order_release);
  }

  // Computes one node (unless it is dead), then propagates its outputs under the lock.
  void RunNode(const Tagged& t, Ready& ready) {
    const NodeInfo& n = x_.nodes_[t.item];
    const Item& item = x_.items_[t.item];
    Outputs outputs(n.num_outputs);
    std::exception_ptr error;
    const bool failed = s_.failed.load(std::memory_order_acquire);
    if (!failed && (!t.dead || n.kind == CfKind::kControlTrigger)) {
      try {
        Compute(t, n, item, outputs);
      } catch (...) {
        error = WithNodeName(*item.graph.node);
      }
    }
    StateLock lock(&s_.mu, x_.pool_ != nullptr);
    if (error != nullptr) Fail(error);
    if (!failed && error == nullptr) Propagate(t, n, outputs, ready);
    --t.iteration->outstanding_ops;
    if (!s_.failed.load(std::memory_order_relaxed)) CleanUp(t.frame, t.iter, ready);
    if (--s_.outstanding == 0) s_.cv.SignalAll();
  }

  void Compute(const Tagged& t, const NodeInfo& n, const Item& item, Outputs& outputs) {
    if (base_.cancellation != nullptr && base_.cancellation->IsCancelled()) Cancelled("Run was cancelled");
    Value* slots = t.iteration->slots.data() + n.slot_begin;
    if (n.forwarding != Forwarding::kKernel) {
      const bool tracing = s_.stats != nullptr;
      const int64_t start = tracing ? NowMicros() : 0;
      Forward(n, item, slots, outputs);
      if (tracing) Trace(item, start);
      for (int k = 0; k < n.num_inputs; ++k) slots[k] = Value();
      return;
    }
    absl::InlinedVector<const Tensor*, 8> inputs(n.num_inputs, nullptr);
    absl::InlinedVector<Var*, 8> input_refs(n.num_inputs, nullptr);
    absl::InlinedVector<Tensor, 4> dereferenced;
    dereferenced.reserve(n.num_inputs);
    for (int k = 0; k < n.num_inputs; ++k) {
      Value& v = slots[k];
      if (!v.live) continue;  // a Merge's dead input
      if (item.ref_inputs[k]) {
        if (v.ref == nullptr)
          InvalidArgument("Input ", k, " of ", item.graph.node->DebugName(), " needs a variable");
        input_refs[k] = v.ref;
        dereferenced.emplace_back();
        inputs[k] = &dereferenced.back();
      } else if (v.ref != nullptr) {
        dereferenced.push_back(v.ref->Read());
        inputs[k] = &dereferenced.back();
      } else {
        inputs[k] = &v.value();
      }
    }
    OpKernelContext::Params params = base_;
    params.inputs = inputs.data();
    params.input_refs = input_refs.data();
    params.outputs = outputs.tensors.data();
    params.output_refs = outputs.refs.data();
    OpKernelContext ctx(params, *item.kernel);
    const bool tracing = s_.stats != nullptr;
    const int64_t start = tracing ? NowMicros() : 0;
    item.kernel->Compute(&ctx);
    if (tracing) Trace(item, start);
    for (int k = 0; k < n.num_inputs; ++k) {  // consumed: free early
      if (slots[k].tensor.IsInitialized()) slots[k].tensor = Tensor();
      slots[k].borrowed = nullptr;
      slots[k].ref = nullptr;
      slots[k].live = false;
    }
  }

  // What the node's kernel would output, the input moved rather than copied; the same
  // errors as the kernels'.
  void Forward(const NodeInfo& n, const Item& item, Value* slots, Outputs& outputs) {
    switch (n.forwarding) {
      case Forwarding::kSwitch: {
        Tensor read;  // only for a variable's value: a copy of a tensor costs an atomic update
        const Tensor* pred = &slots[1].value();
        if (slots[1].ref != nullptr) pred = &(read = slots[1].ref->Read());
        if (pred->dims() != 0) {
          InvalidArgument("The second input must be a scalar, but it has shape ",
                          pred->shape().DebugString());
        }
        MoveToOutput(item, 0, slots[0], pred->scalar<bool>() ? 1 : 0, outputs);
        return;
      }
      case Forwarding::kMerge:
        for (int k = 0; k < n.num_inputs; ++k) {
          if (!slots[k].live) continue;
          MoveToOutput(item, k, slots[k], 0, outputs);
          if (n.index_used) outputs.tensors[1] = x_.merge_indices_[k];
          return;
        }
        Internal("Merge ", item.graph.node->name(), " ran with no live input");
      default:
        MoveToOutput(item, 0, slots[0], 0, outputs);
    }
  }

  // Input `k`'s value as output `out`: the variable itself for a reference input, else its
  // value (a variable's read now, as a kernel taking the value sees it).
  static void MoveToOutput(const Item& item, int k, Value& v, int out, Outputs& outputs) {
    if (item.ref_inputs[k]) {
      if (v.ref == nullptr)
        InvalidArgument("Input ", k, " of ", item.graph.node->DebugName(), " needs a variable");
      outputs.refs[out] = v.ref;
    } else if (v.ref != nullptr) {
      outputs.tensors[out] = v.ref->Read();
    } else if (v.borrowed != nullptr) {
      outputs.tensors[out] = *v.borrowed;
    } else {
      outputs.tensors[out] = std::move(v.tensor);
    }
  }

  void Trace(const Item& item, int64_t start) {
    const int64_t end = NowMicros();
    tensorflow::NodeExecStats stats;
    stats.set_node_name(item.graph.node->name());
    stats.set_timeline_label(StrCat(item.graph.node->name(), " = ", item.type, "()"));
    stats.set_all_start_micros(start);
    stats.set_op_start_rel_micros(0);
    stats.set_op_end_rel_micros(end - start);
    stats.set_all_end_rel_micros(end - start);
    stats.set_thread_id(static_cast<uint32_t>(gettid()));
    absl::MutexLock lock(&s_.mu);
    s_.stats->push_back(std::move(stats));
  }

  void Propagate(const Tagged& t, const NodeInfo& n, Outputs& outputs, Ready& ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    const bool dead = t.dead && n.kind != CfKind::kControlTrigger;
    FrameInstance* frame = t.frame;
    if (n.fetched) Record(t.item, outputs);
    switch (n.kind) {
      case CfKind::kEnter: {
        if (n.child_frame < 0) return;  // nothing in the loop reads it
        FrameInstance* child = ChildFrame(frame, t.iter, t.iteration, n.child_frame);
        if (n.constant_enter) {
          child->invariants.push_back({t.item, std::move(outputs)});  // reserved: no reallocation
          const Outputs& kept = child->invariants.back().outputs;
          for (int64_t i = child->first_iter; i <= child->iteration_count; ++i) {
            Deliver(t.item, kept, dead, child, i, ready, nullptr, true);
          }
        } else {
          Deliver(t.item, outputs, dead, child, 0, ready, &outputs);
        }
        if (--child->pending_enters == 0) CleanUp(child, 0, ready);
        return;
      }
      case CfKind::kExit:
        if (outputs.live(0)) {
          Deliver(t.item, outputs, false, frame->parent, frame->parent_iter, ready, &outputs);
        } else if (t.iter == frame->iteration_count) {
          frame->dead_exits.push_back(t.item);
        }
        return;
      case CfKind::kNextIteration:
        if (!outputs.live(0)) return;  // the loop ends here
        if (t.iter == frame->iteration_count) {
          if (frame->outstanding_iterations == x_.frames_[frame->frame].parallel_iterations) {
            frame->deferred.push_back({t.item, outputs});
            return;
          }
          if (!NextIteration(frame, ready)) return;
        }
        Deliver(t.item, outputs, false, frame, t.iter + 1, ready, &outputs);
        return;
      default:
        Deliver(t.item, outputs, dead, frame, t.iter, ready, &outputs);
    }
  }

  void Record(int item, const Outputs& outputs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    for (size_t f = 0; f < x_.fetches_.size(); ++f) {
      // Only live values: an Exit is dead in every iteration but the last.
      const int k = x_.fetches_[f].output;
      if (x_.fetches_[f].item == item && outputs.live(k))
        s_.results[f] = {outputs.tensors[k], nullptr, outputs.refs[k], true};
    }
  }

  // Delivers `outputs` of `item` along its edges into iteration `iter` of `frame`.
  // With `consumed` (the same outputs, no longer needed after), values move along their
  // last edges instead of being copied; `lent` outputs (a loop invariant's, which outlive
  // the iteration) are pointed to.
  void Deliver(int item, const Outputs& outputs, bool dead, FrameInstance* frame, int64_t iter, Ready& ready,
               Outputs* consumed = nullptr, bool lent = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    const NodeInfo& n = x_.nodes_[item];
    Iteration* it = frame->Get(iter);
    for (int k = 0; k < n.num_edges; ++k) {
      const Edge& e = x_.edges_[n.edge_begin + k];
      if (e.src_output < 0) {
        DeliverEdge(e, nullptr, nullptr, !dead, frame, iter, it, ready);
      } else {
        Tensor* movable = consumed != nullptr && e.last ? &consumed->tensors[e.src_output] : nullptr;
        DeliverEdge(e, &outputs.tensors[e.src_output], outputs.refs[e.src_output], outputs.live(e.src_output),
                    frame, iter, it, ready, movable, lent);
      }
    }
  }

  // One edge's arrival: TF's pending/dead-count rules, Merge's included.
  void DeliverEdge(const Edge& e, const Tensor* tensor, Var* ref, bool live, FrameInstance* frame,
                   int64_t iter, Iteration* it, Ready& ready, Tensor* movable = nullptr, bool lent = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    const NodeInfo& d = x_.nodes_[e.dst];
    int& pending = it->pending[d.local];
    int& dead = it->dead[d.local];
    bool store = false, is_ready = false, dst_dead = false;
    if (d.kind == CfKind::kMerge) {
      if (tensor == nullptr) {
        pending -= 2;
        dst_dead = dead == d.num_inputs;
        is_ready = pending == 0 || (pending == 1 && dst_dead);
      } else if (live) {
        store = (pending & 1) != 0;
        is_ready = pending == 1;
        pending &= ~1;
      } else {
        ++dead;
        dst_dead = dead == d.num_inputs;
        is_ready = pending == 1 && dst_dead;
      }
    } else {
      if (!live) ++dead;
      store = live && tensor != nullptr;
      is_ready = --pending == 0;
      dst_dead = dead > 0;
    }
    if (store) {
      Value& slot = it->slots[d.slot_begin + e.dst_input];
      if (movable != nullptr) {
        slot.tensor = std::move(*movable);
      } else if (lent) {
        slot.borrowed = tensor;
      } else {
        slot.tensor = *tensor;
      }
      slot.ref = ref;
      slot.live = true;
    }
    if (is_ready) Push(ready, {e.dst, frame, iter, it, dst_dead && d.kind != CfKind::kControlTrigger});
  }

  Iteration* NewIteration(int frame) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    std::vector<Iteration*>& free = s_.free_iterations[frame];
    Iteration* it;
    if (free.empty()) {
      s_.owned_iterations.push_back(std::make_unique<Iteration>(frame));
      it = s_.owned_iterations.back().get();
      it->slots.resize(x_.frames_[frame].num_slots);
    } else {
      it = free.back();
      free.pop_back();
    }
    const std::vector<int>& initial = x_.frames_[frame].initial_pending;
    it->pending.assign(initial.begin(), initial.end());
    it->dead.assign(initial.size(), 0);
    it->outstanding_ops = 0;
    it->outstanding_frames = 0;
    it->children.clear();
    return it;
  }

  void FreeIteration(int frame, Iteration* it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    for (Value& v : it->slots) {  // unconsumed inputs (nodes that never ran)
      if (v.tensor.IsInitialized()) v.tensor = Tensor();
      v.borrowed = nullptr;
      v.ref = nullptr;
      v.live = false;
    }
    s_.free_iterations[frame].push_back(it);
  }

  FrameInstance* NewFrame(int frame, FrameInstance* parent, int64_t parent_iter)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    FrameInstance* f;
    if (s_.free_frames.empty()) {
      s_.owned_frames.push_back(std::make_unique<FrameInstance>());
      f = s_.owned_frames.back().get();
    } else {
      f = s_.free_frames.back();
      s_.free_frames.pop_back();
    }
    f->frame = frame;
    f->parent = parent;
    f->parent_iter = parent_iter;
    f->pending_enters = x_.frames_[frame].num_enters;
    f->first_iter = 0;
    f->iteration_count = 0;
    f->outstanding_iterations = 1;
    f->Append(NewIteration(frame));
    f->invariants.clear();
    f->invariants.reserve(x_.frames_[frame].num_constant_enters);
    f->deferred.clear();
    f->dead_exits.clear();
    return f;
  }

  FrameInstance* ChildFrame(FrameInstance* parent, int64_t iter, Iteration* it, int frame)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    for (FrameInstance* c : it->children) {
      if (c->frame == frame) return c;
    }
    FrameInstance* child = NewFrame(frame, parent, iter);
    it->children.push_back(child);
    ++it->outstanding_frames;
    return child;
  }

  // Starts the frame's next iteration, giving it the loop invariants; false (and the run
  // failed) past the deadline or after cancellation, so a runaway loop stops.
  bool NextIteration(FrameInstance* frame, Ready& ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    if (base_.cancellation != nullptr && base_.cancellation->IsCancelled()) {
      Fail(MakeError(Code::kCancelled, "Run was cancelled"));
      return false;
    }
    if (base_.deadline != std::chrono::steady_clock::time_point::max() &&
        std::chrono::steady_clock::now() > base_.deadline) {
      Fail(MakeError(Code::kDeadlineExceeded,
                     StrCat("Timed out: the run's deadline passed in iteration ", frame->iteration_count + 1,
                            " of loop '", x_.frames_[frame->frame].name, "'")));
      return false;
    }
    ++frame->iteration_count;
    frame->Append(NewIteration(frame->frame));
    ++frame->outstanding_iterations;
    frame->dead_exits.clear();
    for (const FrameInstance::Carried& c : frame->invariants) {
      Deliver(c.item, c.outputs, false, frame, frame->iteration_count, ready, nullptr, true);
    }
    return true;
  }

  bool IterationDone(FrameInstance* frame, int64_t iter) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    const Iteration* it = frame->Get(iter);
    if (it->outstanding_ops != 0 || it->outstanding_frames != 0) return false;
    return iter == 0 ? frame->pending_enters == 0 : iter == frame->first_iter;
  }

  // Retires the done iterations from `iter` on (starting deferred ones), then the frame if
  // it is done, then what that completes in the parent.
  void CleanUp(FrameInstance* frame, int64_t iter, Ready& ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_.mu) {
    while (frame != nullptr) {
      if (iter < frame->first_iter) return;
      while (iter <= frame->iteration_count && IterationDone(frame, iter)) {
        FreeIteration(frame->frame, frame->Get(iter));
        ++frame->first_iter;
        --frame->outstanding_iterations;
        ++iter;
        if (!frame->deferred.empty()) {
          if (!NextIteration(frame, ready)) return;
          frame->starting.swap(frame->deferred);
          for (const FrameInstance::Carried& c : frame->starting) {
            Deliver(c.item, c.outputs, false, frame, frame->iteration_count, ready);
          }
          frame->starting.clear();
        }
      }
      if (frame->pending_enters != 0 || frame->outstanding_iterations != 0 || frame->parent == nullptr)
        return;
      FrameInstance* parent = frame->parent;
      const int64_t parent_iter = frame->parent_iter;
      Iteration* pit = parent->Get(parent_iter);
      const Outputs dead_value(1);
      for (int exit : frame->dead_exits) Deliver(exit, dead_value, true, parent, parent_iter, ready);
      pit->children.erase(std::find(pit->children.begin(), pit->children.end(), frame));
      --pit->outstanding_frames;
      frame->invariants.clear();  // their tensors go now, not when the instance is reused
      s_.free_frames.push_back(frame);
      frame = parent;
      iter = parent_iter;
    }
  }

  const FrameExecutor& x_;
  const OpKernelContext::Params& base_;
  RunState& s_;
};

std::unique_ptr<FrameExecutor::RunState> FrameExecutor::AcquireRunState(
    std::vector<tensorflow::NodeExecStats>* stats) const {
  std::unique_ptr<RunState> state;
  {
    absl::MutexLock lock(&free_states_mu_);
    if (!free_states_.empty()) {
      state = std::move(free_states_.back());
      free_states_.pop_back();
    }
  }
  if (state == nullptr) {
    state = std::make_unique<RunState>();
    absl::MutexLock lock(&state->mu);
    state->free_iterations.resize(frames_.size());
    state->results.resize(fetches_.size());
  }
  absl::MutexLock lock(&state->mu);  // uncontended: the state is not shared until the run starts
  state->outstanding = 0;
  state->error = nullptr;
  state->failed.store(false, std::memory_order_relaxed);
  state->stats = stats;
  return state;
}

void FrameExecutor::ReleaseRunState(std::unique_ptr<RunState> state) const {
  {
    // A failed run leaves iterations and frames anywhere: every one goes back to the free
    // lists, holding no tensor.
    absl::MutexLock lock(&state->mu);
    for (std::vector<Iteration*>& free : state->free_iterations) free.clear();
    for (const std::unique_ptr<Iteration>& it : state->owned_iterations) {
      for (Value& v : it->slots) v = Value();
      state->free_iterations[it->frame].push_back(it.get());
    }
    state->free_frames.clear();
    for (const std::unique_ptr<FrameInstance>& f : state->owned_frames) {
      f->invariants.clear();
      f->deferred.clear();
      state->free_frames.push_back(f.get());
    }
    for (Value& v : state->results) v = Value();
    state->stats = nullptr;
  }
  absl::MutexLock lock(&free_states_mu_);
  free_states_.push_back(std::move(state));
}

std::vector<Tensor> FrameExecutor::Run(const OpKernelContext::Params& base,
                                       std::span<const Tensor> feed_values,
                                       std::vector<tensorflow::NodeExecStats>* stats,
                                       const std::vector<bool>* dead_feeds,
                                       std::vector<bool>* dead_fetches) const {
  std::unique_ptr<RunState> state = AcquireRunState(stats);
  RunState& s = *state;
  std::vector<Tensor> results;
  std::exception_ptr error;
  {
    Runner runner(*this, base, s);
    runner.Start(feed_values, dead_feeds, s.ready);
    std::reverse(s.ready.begin(), s.ready.end());  // roots start in plan order
    runner.Process(s.ready);
    absl::MutexLock lock(&s.mu);
    while (s.outstanding != 0) s.cv.Wait(&s.mu);
    error = s.error;
    if (error == nullptr) results = CollectResults(s, feed_values, dead_feeds, dead_fetches, error);
  }
  ReleaseRunState(std::move(state));
  if (error != nullptr) std::rethrow_exception(error);
  return results;
}

std::vector<Tensor> FrameExecutor::CollectResults(RunState& s, std::span<const Tensor> feed_values,
                                                  const std::vector<bool>* dead_feeds,
                                                  std::vector<bool>* dead_fetches,
                                                  std::exception_ptr& error) const {
  s.mu.AssertHeld();  // Run calls it with the run's mutex held, after the last node finished
  std::vector<Tensor> results;
  try {
    results.reserve(fetches_.size());
    if (dead_fetches != nullptr) dead_fetches->assign(fetches_.size(), false);
    for (size_t f = 0; f < fetches_.size(); ++f) {
      const Fetch& fetch = fetches_[f];
      if (fetch.item < 0) {
        const bool dead = dead_feeds != nullptr && (*dead_feeds)[fetch.output];
        if (dead && dead_fetches != nullptr) (*dead_fetches)[f] = true;
        results.push_back(dead ? Tensor() : feed_values[fetch.output]);
        continue;
      }
      const Value& v = s.results[f];
      if (!v.live && dead_fetches != nullptr) {
        (*dead_fetches)[f] = true;
        results.emplace_back();
        continue;
      }
      if (!v.live) {
        InvalidArgument("Retval[", f, "] does not have value: the fetched tensor ",
                        items_[fetch.item].graph.node->name(), ":", fetch.output,
                        " is dead (it is on a branch the run did not take) or was never computed");
      }
      results.push_back(v.ref != nullptr ? v.ref->Read() : v.tensor);
    }
  } catch (...) {
    error = std::current_exception();
  }
  return results;
}

}  // namespace flowtrain
