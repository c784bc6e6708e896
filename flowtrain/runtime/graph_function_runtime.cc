#include "flowtrain/runtime/graph_function_runtime.h"

#include <atomic>
#include <exception>
#include <unordered_map>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/runtime/executor.h"
#include "flowtrain/runtime/internal/function_lowering.h"
#include "flowtrain/runtime/session_options.h"

namespace flowtrain {
namespace {

std::string Deterministic(const google::protobuf::Message& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

tensorflow::AttrValue TypeAttr(DataType t) {
  tensorflow::AttrValue v;
  v.set_type(static_cast<tensorflow::DataType>(t));
  return v;
}

tensorflow::AttrValue TypeListAttr(const std::vector<DataType>& types) {
  tensorflow::AttrValue v;
  for (DataType t : types) v.mutable_list()->add_type(static_cast<tensorflow::DataType>(t));
  return v;
}

std::string TypesString(const std::vector<DataType>& types) {
  std::string s = "[";
  for (size_t i = 0; i < types.size(); ++i) StrAppend(&s, i == 0 ? "" : ", ", DataTypeString(types[i]));
  return s + "]";
}

}  // namespace

// One function with its attrs bound: the lowered call graph, its kernels and its plan.
class GraphFunctionRuntime::Instance : public InstantiatedFunction {
 public:
  Instance(std::shared_ptr<GraphFunctionRuntime> runtime, const tensorflow::NameAttrList& function,
           std::vector<DataType> inputs, std::vector<DataType> outputs)
      : InstantiatedFunction(function.name(), std::move(inputs), std::move(outputs)),
        runtime_(std::move(runtime)) {
    // The call node is named after the function, so that the body's nodes ("<function>/<node>")
    // name it in the executor's errors; a node name cannot start with "_" as TF's generated
    // function names ("__inference_...") do.
    const size_t start = function.name().find_first_not_of('_');
    const std::string call_name =
        start == std::string::npos ? std::string("function") : function.name().substr(start);
    tensorflow::GraphDef def;
    *def.mutable_library() = runtime_->proto_;
    std::vector<std::string> arg_names;
    for (size_t i = 0; i < input_types().size(); ++i) {
      tensorflow::NodeDef* arg = def.add_node();
      arg->set_name(StrCat(call_name, "_arg_", i));  // apart from "<call_name>/..."
      arg->set_op("Placeholder");
      (*arg->mutable_attr())["dtype"] = TypeAttr(input_types()[i]);
      arg_names.push_back(arg->name());
    }
    tensorflow::NodeDef* call = def.add_node();
    call->set_name(call_name);
    call->set_op("StatefulPartitionedCall");
    for (const std::string& a : arg_names) call->add_input(a);
    (*call->mutable_attr())["Tin"] = TypeListAttr(input_types());
    (*call->mutable_attr())["Tout"] = TypeListAttr(output_types());
    *(*call->mutable_attr())["f"].mutable_func() = function;
    ImportGraphDef(LowerFunctionCalls(def), &graph_);

    std::vector<Endpoint> feeds, fetches;
    for (const std::string& a : arg_names) feeds.push_back({graph_.FindNode(a), 0});
    Node* stand_in = graph_.FindNode(call_name);
    if (stand_in == nullptr) Internal("The lowered call of function ", function.name(), " lost its node");
    for (size_t i = 0; i < output_types().size(); ++i) fetches.push_back({stand_in, static_cast<int>(i)});
    std::vector<const Node*> targets;
    if (fetches.empty()) targets.push_back(stand_in);  // its control_rets still run

    ExecutorEnv env;
    env.get_kernel = [this](const Node* n) { return GetKernel(n); };
    env.function_runtime = runtime_.get();
    // Run checks that the resource manager still lives and keeps it alive while it runs.
    std::shared_ptr<ResourceMgr> resources = runtime_->resource_mgr_.lock();
    env.resource_mgr = resources.get();
    executor_ = std::make_unique<Executor>(env, feeds, fetches, targets);
  }

  std::vector<Tensor> Run(const std::vector<Tensor>& args,
                          const FunctionCallOptions& options) const override {
    if (args.size() != input_types().size()) {
      InvalidArgument("Function ", name(), " takes ", input_types().size(), " arguments ",
                      TypesString(input_types()), ", got ", args.size());
    }
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].dtype() != input_types()[i]) {
        InvalidArgument("Function ", name(), ": argument ", i, " must be ", DataTypeString(input_types()[i]),
                        ", got ", DataTypeString(args[i].dtype()));
      }
    }
    std::shared_ptr<ResourceMgr> resources = runtime_->resource_mgr_.lock();
    if (resources == nullptr) {
      FailedPrecondition("Function ", name(), " was called after the session that ran its graph was deleted");
    }
    static std::atomic<int64_t> next_step_id{int64_t{1} << 40};  // apart from sessions' step ids
    ExecutorRunArgs run;
    run.cancellation = options.cancellation;
    run.deadline = options.deadline;
    run.step_id = next_step_id.fetch_add(1, std::memory_order_relaxed);
    try {
      return executor_->Run(run, args);
    } catch (...) {
      RethrowWithContext(ErrorFromException(std::current_exception()), StrCat("In function ", name(), ": "));
    }
  }

 private:
  OpKernel* GetKernel(const Node* node) {
    absl::MutexLock lock(&kernels_mu_);
    auto it = kernels_.find(node);
    if (it != kernels_.end()) return it->second.get();
    node->set_assigned_device(kLocalCpuDevice);
    auto kernel = KernelRegistry::Global()->CreateKernel(*node);
    OpKernel* raw = kernel.get();
    kernels_.emplace(node, std::move(kernel));
    return raw;
  }

  std::shared_ptr<GraphFunctionRuntime> runtime_;  // keeps the library and resources alive
  // In destruction order reversed: the plan goes first, then the kernels, then their nodes.
  Graph graph_;
  absl::Mutex kernels_mu_;
  std::unordered_map<const Node*, std::unique_ptr<OpKernel>> kernels_ ABSL_GUARDED_BY(kernels_mu_);
  std::unique_ptr<Executor> executor_;
};

std::shared_ptr<GraphFunctionRuntime> GraphFunctionRuntime::Create(
    const FunctionLibrary& library, std::shared_ptr<ResourceMgr> resource_mgr) {
  return std::make_shared<GraphFunctionRuntime>(Token{}, library, std::move(resource_mgr));
}

GraphFunctionRuntime::GraphFunctionRuntime(Token, const FunctionLibrary& library,
                                           std::shared_ptr<ResourceMgr> resource_mgr)
    : proto_(library.ToProto()), resource_mgr_(resource_mgr) {
  library_.AddLibrary(proto_);
}

bool GraphFunctionRuntime::HasFunction(std::string_view name) const { return library_.Find(name) != nullptr; }

std::shared_ptr<const InstantiatedFunction> GraphFunctionRuntime::Instantiate(
    const tensorflow::NameAttrList& function) {
  const tensorflow::FunctionDef* def = library_.Find(function.name());
  if (def == nullptr) NotFound("Function ", function.name(), " is not in the graph's function library");
  const std::string key = Deterministic(function);
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(key);
  if (it != instances_.end()) {
    if (std::shared_ptr<const Instance> live = it->second.lock()) return live;
  }
  // Built under the lock, so that concurrent first calls compile the function once.
  std::shared_ptr<const Instance> instance;
  try {
    std::vector<DataType> inputs, outputs;
    FunctionSignatureTypes(*def, function.attr(), &inputs, &outputs);
    instance = std::make_shared<Instance>(std::static_pointer_cast<GraphFunctionRuntime>(shared_from_this()),
                                          function, std::move(inputs), std::move(outputs));
  } catch (...) {
    const Error error = ErrorFromException(std::current_exception());
    if (error.code() == Code::kNotFound)
      RethrowWithContext(error, StrCat("In function ", function.name(), ": "));
    InvalidArgument("Cannot instantiate function ", function.name(), ": ", error.what());
  }
  instances_[key] = instance;
  return instance;
}

}  // namespace flowtrain
