// GraphFunctionRuntime: the FunctionRuntime (framework/function_runtime.h) that sessions give
// their kernels. Instantiating a function builds a small graph: one Placeholder per flattened
// argument, a StatefulPartitionedCall of the function with its attrs, lowered by
// runtime/internal/function_lowering.h as a session lowers its graph (attrs such as "$T"
// resolved, nested calls inlined, functional control flow made TF1 primitives); each Run feeds
// the placeholders and fetches the call's results through one compiled Executor, inline on the
// caller's thread.
//
//   auto runtime = GraphFunctionRuntime::Create(graph.library(), session_resource_mgr);
//   std::vector<Tensor> out = runtime->Run("add_one", {Tensor::Scalar<float>(1.f)});
//
// The runtime copies the library when it is created (functions added to the graph later need
// a new runtime, as a session makes one when its graph has grown). Kernels in function bodies
// share the resource manager given here (variables, iterators of the session); the runtime
// holds it weakly, because the resource manager may hold datasets that hold the runtime, and a
// call after that resource manager is gone fails with FailedPrecondition.
// Thread safety: every method may be called concurrently.
#ifndef FLOWTRAIN_RUNTIME_GRAPH_FUNCTION_RUNTIME_H_
#define FLOWTRAIN_RUNTIME_GRAPH_FUNCTION_RUNTIME_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "flowtrain/framework/function_runtime.h"
#include "flowtrain/framework/resource_mgr.h"
#include "flowtrain/graph/function_library.h"
#include "flowtrain/proto/function.pb.h"

namespace flowtrain {

class GraphFunctionRuntime : public FunctionRuntime {
 public:
  static std::shared_ptr<GraphFunctionRuntime> Create(const FunctionLibrary& library,
                                                      std::shared_ptr<ResourceMgr> resource_mgr);

  bool HasFunction(std::string_view name) const override;
  // Instances are cached while someone holds them (a weak cache: an instance keeps the runtime
  // alive, so the runtime must not keep its instances).
  std::shared_ptr<const InstantiatedFunction> Instantiate(const tensorflow::NameAttrList& function) override;

 private:
  class Instance;
  struct Token {};  // makes the constructor usable by make_shared only through Create

 public:
  GraphFunctionRuntime(Token, const FunctionLibrary& library, std::shared_ptr<ResourceMgr> resource_mgr);

 private:
  tensorflow::FunctionDefLibrary proto_;
  FunctionLibrary library_;
  std::weak_ptr<ResourceMgr> resource_mgr_;
  absl::Mutex mu_;
  std::map<std::string, std::weak_ptr<const Instance>> instances_ ABSL_GUARDED_BY(mu_);
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_GRAPH_FUNCTION_RUNTIME_H_
