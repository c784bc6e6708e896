#include "flowtrain/framework/op_kernel.h"

#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {

Var* OpKernelContext::input_ref(int i) const {
  Var* var = params_.input_refs != nullptr ? params_.input_refs[i] : nullptr;
  if (var == nullptr) {
    Internal("Input ", i, " of ", node().DebugName(), " is not a reference input");
  }
  return var;
}

Tensor* OpKernelContext::allocate_output(int i, const TensorShape& shape) {
  params_.outputs[i] = Tensor(output_type(i), shape);
  return &params_.outputs[i];
}

void OpKernelContext::set_output(int i, Tensor tensor) {
  if (tensor.dtype() != output_type(i)) {
    Internal("Kernel of ", node().DebugName(), " set output ", i, " to ", DataTypeString(tensor.dtype()),
             ", expected ", DataTypeString(output_type(i)));
  }
  params_.outputs[i] = std::move(tensor);
}

void OpKernelContext::set_output_ref(int i, Var* var) {
  if (params_.output_refs == nullptr) Internal("Node ", node().DebugName(), " has no ref outputs");
  params_.output_refs[i] = var;
}

struct KernelRegistry::Impl {
  mutable absl::Mutex mu;
  std::map<std::string, KernelFactory, std::less<>> factories ABSL_GUARDED_BY(mu);
};

KernelRegistry::KernelRegistry() : impl_(std::make_unique<Impl>()) {}

KernelRegistry* KernelRegistry::Global() {
  static KernelRegistry* registry = new KernelRegistry();
  return registry;
}

void KernelRegistry::Register(std::string op_type, KernelFactory factory) {
  absl::MutexLock lock(&impl_->mu);
  if (!impl_->factories.emplace(op_type, std::move(factory)).second) {
    AlreadyExists("A kernel for op '", op_type, "' is registered twice");
  }
}

bool KernelRegistry::HasKernel(std::string_view op_type) const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->factories.find(op_type) != impl_->factories.end();
}

std::unique_ptr<OpKernel> KernelRegistry::CreateKernel(const Node& node) const {
  KernelFactory factory;
  {
    absl::MutexLock lock(&impl_->mu);
    auto it = impl_->factories.find(node.type());
    if (it == impl_->factories.end()) {
      NotFound("No OpKernel was registered to support Op '", node.type(), "' used by node ", node.name());
    }
    factory = it->second;
  }
  OpKernelConstruction construction(node);
  return factory(construction);
}

}  // namespace flowtrain
