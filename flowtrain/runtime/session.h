// Session: runs a Graph. Each Run names the tensors to feed, the tensors to fetch and the
// operations to run; the first Run of a signature compiles an execution plan (executor.h),
// later ones reuse it. Variables and other state live in the session's resource manager,
// so two sessions on one graph have separate variable values.
//
//   Session sess(g);
//   sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
//   std::vector<Tensor> out = sess.Run({{x, batch}}, {loss}, {train_op});
//   out = sess.Run({{x, batch}}, {loss, train_op});  // TF's sess.run([loss, train_op]):
//                                                    // out[1] is empty (TF's None)
//   float v = loss.Eval(sess, {{x, batch}}).scalar<float>();
//
// Run may be called from several threads at once. Close() cancels runs in flight (blocking
// kernels wake with Cancelled) and makes later runs fail.
#ifndef FLOWTRAIN_RUNTIME_SESSION_H_
#define FLOWTRAIN_RUNTIME_SESSION_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/thread_pool.h"
#include "flowtrain/graph/fetch.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/framework/cancellation.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/resource_mgr.h"
#include "flowtrain/runtime/executor.h"
#include "flowtrain/runtime/session_options.h"

namespace flowtrain {

using FeedList = std::vector<std::pair<Output, Tensor>>;

// The interface the monitored-session wrappers and hooks program against (TF's
// `SessionInterface`): a local Session, a remote one, or a wrapper around either.
//
// Run's contract, for every implementation: it returns one Tensor per fetch, in order — the
// value of a fetched tensor, or an empty Tensor (IsInitialized() false; TF's None) for a
// fetched Operation, which runs as a target would. Targets run and return nothing. A null
// fetch, feed or target, one of another graph, or an Output whose index is past its op's
// outputs throws InvalidArgument before anything runs; errors of the run itself (a kernel's
// failure, OutOfRange from an exhausted input, Cancelled, DeadlineExceeded) propagate as
// their Error subclasses.
class SessionInterface {
 public:
  virtual ~SessionInterface() = default;
  virtual std::vector<Tensor> Run(const FeedList& feeds, const FetchList& fetches,
                                  const std::vector<Operation>& targets,
                                  const RunOptions* run_options = nullptr,
                                  RunMetadata* run_metadata = nullptr) = 0;
  virtual Graph& graph() const = 0;
  virtual void Close() = 0;
};

class Session : public SessionInterface {
 public:
  // A session on `graph`.
  explicit Session(Graph& graph, SessionOptions options = {});
  // A session whose variables and other state live in `shared_state`, shared with the other
  // sessions given it (how sessions of one in-process "inproc://" target share variables).
  Session(Graph& graph, SessionOptions options, std::shared_ptr<ResourceMgr> shared_state);
  // A session on the calling thread's default graph.
  explicit Session(SessionOptions options = {});
  ~Session() override;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::vector<Tensor> Run(const FeedList& feeds, const FetchList& fetches,
                          const std::vector<Operation>& targets = {}, const RunOptions* run_options = nullptr,
                          RunMetadata* run_metadata = nullptr) override;
  // The same, naming tensors ("x:0") and operations ("train") instead.
  std::vector<Tensor> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetch_names,
                          const std::vector<std::string>& target_names,
                          const RunOptions* run_options = nullptr, RunMetadata* run_metadata = nullptr);

  Graph& graph() const override { return graph_; }
  ResourceMgr* resource_manager() { return resource_mgr_.get(); }
  const SessionOptions& options() const { return options_; }
  std::vector<std::string> ListDevices() const { return {kLocalCpuDevice}; }
  // Number of execution plans compiled so far (one per distinct signature).
  int num_compiled_plans() const;

  // Cancels runs in flight and releases the session's state; idempotent.
  void Close() override;
  bool closed() const { return closed_.load(); }

 private:
  const Executor& GetOrCompile(const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
                               const std::vector<const Node*>& targets);
  // Compiles and caches the plan of `key` on the executable graph's endpoints.
  const Executor& Compile(std::vector<int64_t> key, const std::vector<Endpoint>& feeds,
                          const std::vector<Endpoint>& fetches, const std::vector<const Node*>& targets)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The graph the plans run when graph_ calls functions: graph_ with the calls inlined and
  // functional control flow lowered (runtime/internal/function_lowering.h), never graph_
  // itself. Rebuilt when graph_ has grown; the earlier ones stay alive for the plans
  // compiled on them.
  const Graph& ExecutableGraph() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The runtime of graph_'s library functions for its kernels (OpKernelContext::
  // function_runtime), or null when the library is empty. Made again when graph_ has grown,
  // since it copies the library; the earlier ones stay alive for the plans compiled with them.
  FunctionRuntime* CurrentFunctionRuntime() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  OpKernel* GetKernel(const Node* node);
  void CheckPlacement(const Node* node) const;

  Graph& graph_;
  SessionOptions options_;
  std::shared_ptr<ResourceMgr> resource_mgr_;
  std::unique_ptr<ThreadPool> inter_op_pool_;
  std::unique_ptr<ThreadPool> intra_op_pool_;
  CancellationManager cancellation_;
  std::atomic<bool> closed_{false};
  std::atomic<int64_t> next_step_id_{1};

  mutable absl::Mutex mu_;
  // Before executors_, which point at them.
  std::vector<std::shared_ptr<FunctionRuntime>> function_runtimes_ ABSL_GUARDED_BY(mu_);
  // graph_'s version and function count when the last one was made.
  std::pair<int64_t, size_t> function_runtime_version_ ABSL_GUARDED_BY(mu_){-1, 0};
  // Declared before executors_ and kernels_, so the plans and kernels holding its nodes go first.
  std::vector<std::unique_ptr<Graph>> lowered_graphs_ ABSL_GUARDED_BY(mu_);
  std::map<std::vector<int64_t>, std::unique_ptr<Executor>> executors_ ABSL_GUARDED_BY(mu_);
  int64_t lowered_version_ ABSL_GUARDED_BY(mu_) = -1;  // graph_'s version lowered_graphs_.back() copies
  absl::Mutex kernels_mu_;
  std::unordered_map<const Node*, std::unique_ptr<OpKernel>> kernels_ ABSL_GUARDED_BY(kernels_mu_);

  absl::Mutex runs_mu_;
  absl::CondVar runs_cv_;  // signalled when runs_in_flight_ drops to 0
  int runs_in_flight_ ABSL_GUARDED_BY(runs_mu_) = 0;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_SESSION_H_
