// Executor: one compiled execution plan for a (feeds, fetches, targets) signature, built
// once by a Session and cached. Compiling prunes the graph to the nodes the fetches and
// targets need (stopping at fed tensors), orders them, binds their kernels and counts every
// tensor's consumers; running executes the plan and frees each tensor after its last use.
//
// A plan whose nodes can never overlap (a chain), or whose kernels already split over an
// intra-op pool spanning every core, runs inline on the caller's thread with no
// synchronisation; otherwise ready nodes run on the inter-op pool, cheap ones inline.
#ifndef FLOWTRAIN_RUNTIME_EXECUTOR_H_
#define FLOWTRAIN_RUNTIME_EXECUTOR_H_

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/thread_pool.h"
#include "flowtrain/graph/node.h"
#include "flowtrain/framework/cancellation.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/resource_mgr.h"
#include "flowtrain/runtime/session_options.h"

namespace flowtrain {

struct ExecutorEnv {
  ResourceMgr* resource_mgr = nullptr;
  ThreadPool* inter_op_pool = nullptr;  // nullptr: always inline
  ThreadPool* intra_op_pool = nullptr;
  // Returns the session's kernel for a node (created once per node and session).
  std::function<OpKernel*(const Node*)> get_kernel;
  std::string device_name = kLocalCpuDevice;
  // Fuse groups of nodes in the plan (graph_rewrite.h; ConfigProto::remapping).
  bool remapping = true;
};

struct ExecutorRunArgs {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  CancellationManager* cancellation = nullptr;
  int64_t step_id = 0;
  RunMetadata* trace = nullptr;  // filled with per-node timings when not null
};

class Executor {
 public:
  Executor(const ExecutorEnv& env, const std::vector<Endpoint>& feeds,
           const std::vector<Endpoint>& fetches, const std::vector<const Node*>& targets);
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
  std::unique_ptr<Plan> plan_;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_EXECUTOR_H_
