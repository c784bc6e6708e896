// OpKernel: the CPU implementation of one op, instantiated once per node per session and
// called by the executor with an OpKernelContext holding that run's inputs and outputs.
// Kernels report errors by throwing flowtrain errors; the executor adds the node name.
//
//   class SquareOp : public OpKernel {
//    public:
//     using OpKernel::OpKernel;
//     void Compute(OpKernelContext* ctx) override {
//       const Tensor& x = ctx->input(0);
//       Tensor* y = ctx->allocate_output(0, x.shape());
//       ...
//     }
//   };
//   FT_REGISTER_KERNEL("Square", SquareOp);
//
// Kernels must be thread-safe: two runs of one session may execute the same node at once.
#ifndef FLOWTRAIN_FRAMEWORK_OP_KERNEL_H_
#define FLOWTRAIN_FRAMEWORK_OP_KERNEL_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/thread_pool.h"
#include "flowtrain/graph/node.h"
#include "flowtrain/framework/cancellation.h"
#include "flowtrain/framework/function_runtime.h"
#include "flowtrain/framework/resource_mgr.h"

namespace flowtrain {

// What a kernel sees when it is created: its node (attrs, types, name).
class OpKernelConstruction {
 public:
  explicit OpKernelConstruction(const Node& node) : node_(node) {}
  const Node& node() const { return node_; }
  const std::string& name() const { return node_.name(); }
  template <typename T>
  T GetAttr(std::string_view name) const {
    return node_.GetAttr<T>(name);
  }
  bool HasAttr(std::string_view name) const { return node_.FindAttr(name) != nullptr; }
  DataType input_type(int i) const { return node_.input_type(i); }
  DataType output_type(int i) const { return node_.output_type(i); }
  int num_inputs() const { return node_.num_inputs(); }
  int num_outputs() const { return node_.num_outputs(); }

 private:
  const Node& node_;
};

// How the executor should schedule a kernel: cheap ones always run inline; normal ones are
// dispatched to the inter-op pool only when their inputs are large; expensive ones whenever
// there is other work to overlap with.
enum class KernelCost { kCheap, kNormal, kExpensive };

class OpKernelContext;

class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction& construction) : node_(construction.node()) {}
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  virtual void Compute(OpKernelContext* ctx) = 0;
  virtual KernelCost cost() const { return KernelCost::kNormal; }

  const Node& node() const { return node_; }
  const std::string& name() const { return node_.name(); }
  const std::string& type_string() const { return node_.type(); }

 private:
  const Node& node_;
};

// Everything one execution of a kernel needs, set up by the executor.
class OpKernelContext {
 public:
  struct Params {
    const Tensor* const* inputs = nullptr;  // one per input; null for a Merge's dead inputs
    Var* const* input_refs = nullptr;       // per input: the variable behind a ref input
    Tensor* outputs = nullptr;              // one per output, to be filled
    Var** output_refs = nullptr;            // per output: set for ref outputs
    ResourceMgr* resource_mgr = nullptr;
    CancellationManager* cancellation = nullptr;
    ThreadPool* intra_op_pool = nullptr;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    int64_t step_id = 0;
    // The resource-manager container of this run's per-step resources (TensorArrays,
    // stacks), dropped by the executor when the run ends.
    std::string_view step_container;
    // Runs the functions of the graph's library; null when the graph has none.
    FunctionRuntime* function_runtime = nullptr;
  };

  OpKernelContext(const Params& params, const OpKernel& kernel) : params_(params), kernel_(kernel) {}

  const Node& node() const { return kernel_.node(); }
  int num_inputs() const { return kernel_.node().num_inputs(); }
  const Tensor& input(int i) const { return *params_.inputs[i]; }
  // Whether input i arrived alive. Only a Merge ever runs with a dead input (the executor
  // skips every other node one reaches), so only its kernel needs to ask.
  bool has_input(int i) const { return params_.inputs[i] != nullptr; }
  // The variable behind reference input i (TF1 `Ref(T)` inputs such as Assign's first).
  Var* input_ref(int i) const;

  int num_outputs() const { return kernel_.node().num_outputs(); }
  DataType output_type(int i) const { return BaseType(kernel_.node().output_type(i)); }
  // Outputs a kernel leaves unset are dead (how a Switch leaves its untaken side); only
  // control-flow kernels do so.
  // Allocates output i with the node's output dtype.
  Tensor* allocate_output(int i, const TensorShape& shape);
  // Sets output i (dtype must match the node's).
  void set_output(int i, Tensor tensor);
  // Sets reference output i to `var` (its current value is the output's value).
  void set_output_ref(int i, Var* var);

  ResourceMgr* resource_manager() const { return params_.resource_mgr; }
  CancellationManager* cancellation_manager() const { return params_.cancellation; }
  ThreadPool* intra_op_pool() const { return params_.intra_op_pool; }
  std::chrono::steady_clock::time_point deadline() const { return params_.deadline; }
  int64_t step_id() const { return params_.step_id; }
  // Resources created here live until the end of the run (TF's per-step container).
  std::string step_container() const { return std::string(params_.step_container); }
  // The runtime of the graph's library functions, or null when the graph has no library (it
  // is owned by shared_ptrs: shared_from_this() keeps it beyond this call).
  FunctionRuntime* function_runtime() const { return params_.function_runtime; }

 private:
  const Params& params_;
  const OpKernel& kernel_;
};

using KernelFactory = std::function<std::unique_ptr<OpKernel>(OpKernelConstruction&)>;

class KernelRegistry {
 public:
  static KernelRegistry* Global();
  void Register(std::string op_type, KernelFactory factory);
  bool HasKernel(std::string_view op_type) const;
  // Throws NotFound if no kernel is registered for the node's op.
  std::unique_ptr<OpKernel> CreateKernel(const Node& node) const;

 private:
  struct Impl;
  KernelRegistry();
  std::unique_ptr<Impl> impl_;
};

namespace kernel_registry_internal {
template <typename Kernel>
struct KernelRegistrar {
  explicit KernelRegistrar(const char* op_type) {
    KernelRegistry::Global()->Register(
        op_type, [](OpKernelConstruction& c) { return std::unique_ptr<OpKernel>(new Kernel(c)); });
  }
};
}  // namespace kernel_registry_internal

#define FT_REGISTER_KERNEL_UNIQ_HELPER(ctr, op, ...) FT_REGISTER_KERNEL_UNIQ(ctr, op, __VA_ARGS__)
#define FT_REGISTER_KERNEL_UNIQ(ctr, op, ...)                                                                \
  static const ::flowtrain::kernel_registry_internal::KernelRegistrar<__VA_ARGS__> ft_kernel_registrar_##ctr \
      [[maybe_unused]] (op)
#define FT_REGISTER_KERNEL(op, ...) FT_REGISTER_KERNEL_UNIQ_HELPER(__COUNTER__, op, __VA_ARGS__)

}  // namespace flowtrain

#endif  // FLOWTRAIN_FRAMEWORK_OP_KERNEL_H_
