// Executor: one compiled execution plan for a (feeds, fetches, targets) signature, built
// once by a Session and cached. Compiling prunes the graph to the nodes the fetches and
// targets need (stopping at fed tensors), orders them, binds their kernels and counts every
// tensor's consumers; running executes the plan and frees each tensor after its last use.
//
// A plan whose nodes can never overlap (a chain), or whose kernels already split over an
// intra-op pool spanning every core, runs inline on the caller's thread with no
// synchronisation; otherwise ready nodes run on the inter-op pool, cheap ones inline.
// A plan holding TF1 control flow (Switch, Merge, loops) runs frame-aware instead
// (runtime/internal/frame_executor.h): dead tensors, frames and iterations as in TF.
#ifndef FLOWTRAIN_RUNTIME_EXECUTOR_H_
#define FLOWTRAIN_RUNTIME_EXECUTOR_H_

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/core/thread_pool.h"
#include "flowtrain/graph/node.h"
#include "flowtrain/framework/cancellation.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/resource_mgr.h"
#include "flowtrain/runtime/session_options.h"

namespace flowtrain {

class FrameExecutor;

struct ExecutorEnv {
  ResourceMgr* resource_mgr = nullptr;
  ThreadPool* inter_op_pool = nullptr;  // nullptr: always inline
  ThreadPool* intra_op_pool = nullptr;
  // Returns the session's kernel for a node (created once per node and session).
  std::function<OpKernel*(const Node*)> get_kernel;
  std::string device_name = kLocalCpuDevice;
  // Fuse groups of nodes in the plan (graph_rewrite.h; ConfigProto::remapping).
  bool remapping = true;
  // Skip the kernels of nodes whose outputs nothing reads (graph_rewrite.h;
  // ConfigProto::dependency_optimization).
  bool dependency_optimization = true;
  // Feeds may arrive dead (ExecutorRunArgs::dead_feeds): the plan runs frame-aware even
  // without control flow ops, so that their consumers are dead instead of run.
  bool feeds_may_be_dead = false;
  // Given to every kernel (OpKernelContext::function_runtime); not owned, outlives the plan.
  FunctionRuntime* function_runtime = nullptr;
};

struct ExecutorRunArgs {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  CancellationManager* cancellation = nullptr;
  int64_t step_id = 0;
  RunMetadata* trace = nullptr;  // filled with per-node timings when not null
  // For a distributed partition, whose inputs and outputs may be dead tensors of an untaken
  // cond branch on another task. Per feed, whether it arrives dead (null: all live; only
  // with ExecutorEnv::feeds_may_be_dead).
  const std::vector<bool>* dead_feeds = nullptr;
  // When not null, a dead fetch is returned as an empty Tensor and flagged here (one flag
  // per fetch) instead of failing the run.
  std::vector<bool>* dead_fetches = nullptr;
  // Where the run's per-step resources (TensorArrays, stacks) go. Empty: the executor makes
  // a container for the run when the plan creates such resources and drops it as the run
  // ends. Set: they go to this container and outlive the run, so that several runs of one
  // step (a distributed worker's stages) share them; the caller drops it (ResourceMgr::Cleanup).
  std::string_view step_container;
};

class Executor {
 public:
  Executor(const ExecutorEnv& env, const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
           const std::vector<const Node*>& targets);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // `feed_values` are in the order of the feeds given at construction; returns the fetches.
  std::vector<Tensor> Run(const ExecutorRunArgs& args, std::span<const Tensor> feed_values) const;

  int num_nodes() const;
  // True when the plan runs inline (no two nodes can overlap, or there is no pool).
  bool runs_inline() const;

 private:
  struct Plan;
  struct RunState;
  struct Compilation;  // the constructor's working state, graph nodes to plan items
  struct Step;         // one Run's arguments and the kernel parameters they give

  // ---- Compiling, in the constructor's order ----
  // The nodes the fetches and targets need (stopping at fed tensors), in creation order.
  static std::vector<const Node*> PruneToNeededNodes(const Compilation& c,
                                                     const std::vector<Endpoint>& fetches,
                                                     const std::vector<const Node*>& targets);
  // The nodes to execute (some groups fused) and which of them stands for each graph node.
  static void FuseForExecution(Compilation& c, const std::vector<const Node*>& needed,
                               const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
                               const std::vector<const Node*>& targets, bool remapping,
                               bool dependency_optimization);
  // Orders the executable nodes, updates of variables after the reads beside them.
  static void OrderTopologically(Compilation& c);
  // One plan item per executable node, its kernel bound and its output entries numbered,
  // then one entry per feed.
  void LayOutItems(Compilation& c);
  // Each item's inputs (entries), the consumers it waits for and those it releases.
  void ConnectInputs(const Compilation& c);
  // Keeps fetched entries alive to the end of the run.
  void ReserveFetchedEntries(const Compilation& c, const std::vector<Endpoint>& fetches);
  // Whether two costly nodes can ever be ready together; if not, the plan runs inline.
  void ChooseInlineOrParallel();
  // When the plan holds control flow, its frame-aware form (malformed loops throw here).
  void CompileFrames(const Compilation& c, const std::vector<Endpoint>& fetches);

  // ---- Running, in Run's order ----
  std::unique_ptr<RunState> AcquireRunState() const;
  // Runs plan item `index`: gathers its inputs, computes, frees inputs it was the last user of.
  void ExecuteItem(RunState& s, const Step& step, int index, bool parallel) const;
  std::exception_ptr RunInline(RunState& s, const Step& step) const;
  std::exception_ptr RunParallel(RunState& s, const Step& step) const;
  // Runs the ready items and those they make ready (the costly ones beyond the first on the
  // pool), until none is left for this thread.
  void ProcessReadyItems(RunState& s, const Step& step, absl::InlinedVector<int, 16> ready) const;
  std::vector<Tensor> CollectFetches(RunState& s, std::exception_ptr& error) const;
  void RecordTrace(RunState& s, const Step& step) const;
  // Runs the frame-aware form of a plan with control flow.
  std::vector<Tensor> RunFrames(const Step& step, std::span<const Tensor> feed_values) const;
  // Drops the tensors the state still holds and keeps it for the next run.
  void ReleaseRunState(std::unique_ptr<RunState> state) const;

  std::unique_ptr<Plan> plan_;
  std::unique_ptr<FrameExecutor> frames_;  // null: the plan has no control flow
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_EXECUTOR_H_
