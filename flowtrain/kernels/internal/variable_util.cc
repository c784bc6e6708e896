#include "flowtrain/kernels/internal/variable_util.h"

#include <vector>

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

void ScatterAddToVar(Var& var, const Tensor& indices, const Tensor& updates, bool add, std::string_view op) {
  if (!var.initialized) FailedPrecondition("Attempting to use uninitialized value ", var.name);
  if (var.tensor.dtype() != updates.dtype()) {
    InvalidArgument(op, ": variable ", var.name, " holds ", DataTypeString(var.tensor.dtype()),
                    ", the updates are ", DataTypeString(updates.dtype()));
  }
  if (indices.dtype() != DT_INT32 && indices.dtype() != DT_INT64) {
    InvalidArgument(op, ": indices must be int32 or int64, got ", DataTypeString(indices.dtype()));
  }
  const TensorShape& shape = var.tensor.shape();
  if (shape.dims() < 1) InvalidArgument(op, ": variable ", var.name, " must be at least 1-D, got a scalar");
  std::vector<int64_t> want;
  for (int d = 0; d < indices.dims(); ++d) want.push_back(indices.dim_size(d));
  for (int d = 1; d < shape.dims(); ++d) want.push_back(shape.dim_size(d));
  if (updates.shape() != TensorShape(want)) {
    InvalidArgument(op, " requires updates.shape = indices.shape + params.shape[1:], got updates.shape ",
                    updates.shape().DebugString(), ", indices.shape ", indices.shape().DebugString(),
                    ", params.shape ", shape.DebugString());
  }
  const int64_t rows = shape.dim_size(0);
  const int64_t n = indices.NumElements();
  std::vector<int64_t> row_of(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    row_of[i] = indices.dtype() == DT_INT32 ? indices.flat<int32_t>()[i] : indices.flat<int64_t>()[i];
    if (row_of[i] < 0 || row_of[i] >= rows) {
      InvalidArgument(op, ": indices[", i, "] = ", row_of[i], " is not in [0, ", rows, ") (variable ",
                      var.name, ")");
    }
  }
  const int64_t row_size = rows == 0 ? 0 : shape.num_elements() / rows;
  var.PrepareForInPlaceUpdate();
  // As in AddToVar, the lambda writes through a pointer taken under the caller's lock.
  Tensor* const target = &var.tensor;
  DispatchNumericType(updates.dtype(), op, [&]<typename T>() {
    T* out = target->data<T>();
    const T* u = updates.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      T* row = out + row_of[i] * row_size;
      const T* src = u + i * row_size;
      for (int64_t j = 0; j < row_size; ++j) row[j] = add ? T(row[j] + src[j]) : T(row[j] - src[j]);
    }
  });
}

}  // namespace flowtrain
