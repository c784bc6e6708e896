// The frame-aware run of a plan holding TF1 control flow (Switch, Merge, Enter, Exit,
// NextIteration, LoopCond, ControlTrigger). Executor (executor.h) uses it instead of its
// static plan when the pruned graph holds such a node; graphs without keep the static plan.
//
// Semantics are TF's: every node runs in a frame (the root, or one instance of a loop per
// iteration of the frame around it) and an iteration; a node reached by a dead input is dead
// (not computed, its outputs dead) except a Merge, which runs on its first live input and is
// dead only when all its inputs are, and a ControlTrigger, which always runs. An Enter moves
// its value into iteration 0 of its child frame (into every iteration when is_constant), a
// NextIteration into the next iteration (at most parallel_iterations in flight), a live Exit
// out to the parent frame; dead Exits of a loop's last iteration reach the parent when the
// loop ends. A new iteration past the run's deadline fails with DeadlineExceeded, one after
// cancellation with Cancelled.
//
//   FrameExecutor frames(std::move(items), num_feeds, fetches, pool);  // throws on bad loops
//   std::vector<Tensor> out = frames.Run(params, feed_values, nullptr);
//
// Thread-safe: concurrent Runs share nothing but the kernels (each takes a run state of its
// own from the executor's pool of them).
#ifndef FLOWTRAIN_RUNTIME_INTERNAL_FRAME_EXECUTOR_H_
#define FLOWTRAIN_RUNTIME_INTERNAL_FRAME_EXECUTOR_H_

#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/core/thread_pool.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/proto/step_stats.pb.h"
#include "flowtrain/runtime/internal/control_flow_info.h"

namespace flowtrain {

// A normal-cost kernel with an input this large is worth another thread: parallel runs, the
// static plan's and the frame-aware one's, hand it to the inter-op pool.
inline constexpr int64_t kDispatchElements = 16384;

class FrameExecutor {
 public:
  // One plan item: what it runs and where its inputs come from (CfNode's numbering).
  struct Item {
    CfNode graph;      // its node, inputs and control inputs
    std::string type;  // its op, or the fused op, for traces
    OpKernel* kernel;  // not owned
    KernelCost cost;
    std::vector<bool> ref_inputs;  // per input: the kernel takes the variable itself
  };
  // A fetched tensor: output `output` of item `item`, or feed number `output` when item < 0.
  struct Fetch {
    int item;
    int output;
  };

  // Throws InvalidArgument for malformed control flow (AnalyzeControlFlow) and for a fetch
  // of a tensor inside a loop. `pool` (not owned, may be null) runs costly nodes when given.
  FrameExecutor(std::vector<Item> items, int num_feeds, std::vector<Fetch> fetches, ThreadPool* pool);
  ~FrameExecutor();
  FrameExecutor(const FrameExecutor&) = delete;
  FrameExecutor& operator=(const FrameExecutor&) = delete;

  // Runs the plan once with `base` (deadline, cancellation, resources...) given to every
  // kernel; returns the fetches. Appends per-node timings to `stats` when not null. Feed f
  // arrives dead when `dead_feeds` (null: all live) says so. A dead or never computed fetch
  // is an InvalidArgument naming the tensor, unless `dead_fetches` is given: then it is an
  // empty Tensor, flagged there. A kernel's error propagates with its node's name added.
  std::vector<Tensor> Run(const OpKernelContext::Params& base, std::span<const Tensor> feed_values,
                          std::vector<tensorflow::NodeExecStats>* stats,
                          const std::vector<bool>* dead_feeds = nullptr,
                          std::vector<bool>* dead_fetches = nullptr) const;

 private:
  enum class Forwarding : uint8_t;
  struct NodeInfo;
  struct Edge;
  struct Frame;
  struct RunState;
  struct Iteration;
  struct FrameInstance;
  struct Value;
  struct Outputs;
  struct Tagged;
  class Runner;

  static Forwarding ForwardingOf(const Item& item);

  // Run states are reused across runs (and their iterations and frame instances with them),
  // so a warm plan allocates no bookkeeping per run or per iteration.
  std::unique_ptr<RunState> AcquireRunState(std::vector<tensorflow::NodeExecStats>* stats) const;
  // Drops every tensor the state still holds and keeps it for the next run.
  void ReleaseRunState(std::unique_ptr<RunState> state) const;
  // The fetched values of a finished run, called with s.mu held; sets `error` for a dead or
  // missing fetch, unless `dead_fetches` is given: then a dead fetch is an empty Tensor
  // flagged there.
  std::vector<Tensor> CollectResults(RunState& s, std::span<const Tensor> feed_values,
                                     const std::vector<bool>* dead_feeds, std::vector<bool>* dead_fetches,
                                     std::exception_ptr& error) const;

  std::vector<NodeInfo> nodes_;
  std::vector<Edge> edges_;
  std::vector<Frame> frames_;
  std::vector<Item> items_;
  std::vector<Fetch> fetches_;
  std::vector<std::vector<Edge>> feed_edges_;  // per feed: its consumers
  std::vector<int> roots_;                     // items with no inputs at all
  std::vector<Tensor> merge_indices_;          // scalar i: a Merge's value_index for input i
  ThreadPool* pool_;
  mutable absl::Mutex free_states_mu_;
  mutable std::vector<std::unique_ptr<RunState>> free_states_ ABSL_GUARDED_BY(free_states_mu_);
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_INTERNAL_FRAME_EXECUTOR_H_
