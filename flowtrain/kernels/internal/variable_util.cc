#include "flowtrain/kernels/internal/variable_util.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/resource_handle.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {

const ResourceHandle& VariableHandle(OpKernelContext* ctx, int i) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_RESOURCE || t.dims() != 0) {
    InvalidArgument(ctx->node().name(), " expects a scalar resource variable handle, got a ",
                    DataTypeString(t.dtype()), " tensor of shape ", t.shape().DebugString());
  }
  const ResourceHandle& handle = t.scalar<ResourceHandle>();
  if (handle.type_name != kVarHandleTypeName) {
    InvalidArgument(ctx->node().name(), " expects a resource variable handle, got a handle to ",
                    handle.type_name.empty() ? std::string("an unknown resource") : handle.type_name, " ",
                    handle.DebugString());
  }
  return handle;
}

std::shared_ptr<Var> LookupResourceVar(OpKernelContext* ctx, int i) {
  const ResourceHandle& handle = VariableHandle(ctx, i);
  std::shared_ptr<Var> var = ctx->resource_manager()->Lookup<Var>(handle.container, handle.name);
  if (var == nullptr) {
    FailedPrecondition("Error while reading resource variable ", handle.name, " from Container: ",
                       handle.container.empty() ? ResourceMgr::kDefaultContainer : handle.container,
                       ". This could mean that the variable was uninitialized. Not found: Resource ",
                       handle.DebugString(), "/Var does not exist.");
  }
  return var;
}

std::shared_ptr<Var> LookupOrCreateResourceVar(OpKernelContext* ctx, int i) {
  const ResourceHandle& handle = VariableHandle(ctx, i);
  return ctx->resource_manager()->LookupOrCreate<Var>(handle.container, handle.name,
                                                      [&] { return std::make_shared<Var>(handle.name); });
}

void AssignToVar(Var& var, const Tensor& value) {
  if (value.RefCountIsOne()) {
    // Only this run holds the value (a fresh result, e.g. a restored checkpoint tensor): take
    // its buffer. Updates copy shared buffers before writing, so a later reader is safe.
    var.tensor = value;
  } else if (var.initialized && var.tensor.shape() == value.shape() && var.tensor.dtype() == value.dtype() &&
             var.tensor.RefCountIsOne()) {
    var.tensor.CopyDataFrom(value);
  } else {
    var.tensor = value.DeepCopy();
  }
  var.initialized = true;
}

void AddToVar(Var& var, const Tensor& delta, bool add, std::string_view op) {
  if (!var.initialized) FailedPrecondition("Attempting to use uninitialized value ", var.name);
  if (var.tensor.dtype() != delta.dtype()) {
    InvalidArgument(op, ": variable ", var.name, " holds ", DataTypeString(var.tensor.dtype()),
                    ", the update is ", DataTypeString(delta.dtype()));
  }
  if (var.tensor.shape() != delta.shape()) {
    InvalidArgument(op, " requires shapes of both tensors to match. lhs shape= ",
                    var.tensor.shape().DebugString(), " rhs shape= ", delta.shape().DebugString());
  }
  var.PrepareForInPlaceUpdate();
  // The lambda runs inside DispatchNumericType, beyond the analysis' sight of the lock held
  // by the caller, so it writes through a pointer taken under it.
  Tensor* const target = &var.tensor;
  DispatchNumericType(delta.dtype(), op, [&]<typename T>() {
    T* out = target->data<T>();
    const T* d = delta.data<T>();
    const int64_t n = delta.NumElements();
    for (int64_t i = 0; i < n; ++i) out[i] = add ? T(out[i] + d[i]) : T(out[i] - d[i]);
  });
}

}  // namespace flowtrain
