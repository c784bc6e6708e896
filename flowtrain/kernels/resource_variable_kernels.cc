// Kernels of the resource-variable ops (ops/resource_variable_ops.h). VarHandleOp only names
// the variable; AssignVariableOp creates it in the session's resource manager on first
// assignment (as TF does), and the other ops find it through the handle. The value lives in a
// Var, the same object ref variables use, so saving, updating and copy-on-write behave alike.
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/resource_handle.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/kernels/internal/array_util.h"
#include "flowtrain/kernels/internal/variable_util.h"

namespace flowtrain {
namespace {

class VarHandleOp : public OpKernel {
 public:
  explicit VarHandleOp(OpKernelConstruction& c) : OpKernel(c), handle_(DT_RESOURCE, TensorShape()) {
    std::string shared_name = c.GetAttr<std::string>("shared_name");
    if (shared_name.empty()) shared_name = c.name();
    handle_.scalar<ResourceHandle>() = {.container = c.GetAttr<std::string>("container"),
                                        .name = shared_name,
                                        .type_name = kVarHandleTypeName};
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, handle_); }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  Tensor handle_;
};
FT_REGISTER_KERNEL("VarHandleOp", VarHandleOp);

class ReadVariableOp : public OpKernel {
 public:
  explicit ReadVariableOp(OpKernelConstruction& c) : OpKernel(c), dtype_(c.GetAttr<DataType>("dtype")) {}
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Var> var = LookupResourceVar(ctx, 0);
    Tensor value;
    {
      absl::MutexLock lock(&var->mu);
      if (!var->initialized) {
        const ResourceHandle& h = VariableHandle(ctx, 0);
        FailedPrecondition("Error while reading resource variable ", h.name, " from Container: ",
                           h.container.empty() ? ResourceMgr::kDefaultContainer : h.container,
                           ". This could mean that the variable was uninitialized.");
      }
      // Sharing the buffer is safe: writers copy a shared buffer before updating it.
      value = var->tensor;
    }
    if (value.dtype() != dtype_) {
      InvalidArgument("Trying to read variable ", var->name, " with wrong dtype. Expected ",
                      DataTypeString(dtype_), " got ", DataTypeString(value.dtype()));
    }
    ctx->set_output(0, std::move(value));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  DataType dtype_;
};
FT_REGISTER_KERNEL("ReadVariableOp", ReadVariableOp);

class AssignVariableOp : public OpKernel {
 public:
  explicit AssignVariableOp(OpKernelConstruction& c)
      : OpKernel(c),
        dtype_(c.GetAttr<DataType>("dtype")),
        validate_shape_(c.GetAttr<bool>("validate_shape")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    if (value.dtype() != dtype_) {
      InvalidArgument("Variable and value dtypes don't match; respectively, ", DataTypeString(dtype_),
                      " and ", DataTypeString(value.dtype()));
    }
    std::shared_ptr<Var> var = LookupOrCreateResourceVar(ctx, 0);
    absl::MutexLock lock(&var->mu);
    if (var->initialized && var->tensor.dtype() != dtype_) {
      InvalidArgument("Trying to assign variable ", var->name, " with wrong dtype. Expected ",
                      DataTypeString(var->tensor.dtype()), " got ", DataTypeString(dtype_));
    }
    if (var->initialized && validate_shape_ && var->tensor.shape() != value.shape()) {
      InvalidArgument("Trying to assign to variable ", var->name, " with tensor with wrong shape. Expected ",
                      var->tensor.shape().DebugString(), " got ", value.shape().DebugString());
    }
    AssignToVar(*var, value);
  }

 private:
  DataType dtype_;
  bool validate_shape_;
};
FT_REGISTER_KERNEL("AssignVariableOp", AssignVariableOp);

template <bool kAdd>
class AssignUpdateVariableOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Var> var = LookupResourceVar(ctx, 0);
    absl::MutexLock lock(&var->mu);
    AddToVar(*var, ctx->input(1), kAdd, type_string());
  }
};
FT_REGISTER_KERNEL("AssignAddVariableOp", AssignUpdateVariableOp<true>);
FT_REGISTER_KERNEL("AssignSubVariableOp", AssignUpdateVariableOp<false>);

class ResourceScatterAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Var> var = LookupResourceVar(ctx, 0);
    absl::MutexLock lock(&var->mu);
    ScatterAddToVar(*var, ctx->input(1), ctx->input(2), /*add=*/true, type_string());
  }
};
FT_REGISTER_KERNEL("ResourceScatterAdd", ResourceScatterAddOp);

class VarIsInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle& h = VariableHandle(ctx, 0);
    std::shared_ptr<Var> var = ctx->resource_manager()->Lookup<Var>(h.container, h.name);
    bool initialized = false;
    if (var != nullptr) {
      absl::MutexLock lock(&var->mu);
      initialized = var->initialized;
    }
    ctx->set_output(0, Tensor::Scalar<bool>(initialized));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("VarIsInitializedOp", VarIsInitializedOp);

class DestroyResourceOp : public OpKernel {
 public:
  explicit DestroyResourceOp(OpKernelConstruction& c)
      : OpKernel(c), ignore_lookup_error_(c.GetAttr<bool>("ignore_lookup_error")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    if (t.dtype() != DT_RESOURCE || t.dims() != 0) {
      InvalidArgument(name(), " expects a scalar resource handle, got ", t.shape().DebugString());
    }
    const ResourceHandle& h = t.scalar<ResourceHandle>();
    if (!ctx->resource_manager()->Delete(h.container, h.name) && !ignore_lookup_error_) {
      NotFound("Resource ", h.DebugString(), "/", h.type_name, " does not exist.");
    }
  }

 private:
  bool ignore_lookup_error_;
};
FT_REGISTER_KERNEL("DestroyResourceOp", DestroyResourceOp);

class VariableShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Var> var = LookupResourceVar(ctx, 0);
    TensorShape shape;
    {
      absl::MutexLock lock(&var->mu);
      if (!var->initialized) FailedPrecondition("Attempting to use uninitialized value ", var->name);
      shape = var->tensor.shape();
    }
    Tensor* out = ctx->allocate_output(0, TensorShape({shape.dims()}));
    for (int d = 0; d < shape.dims(); ++d) {
      if (out->dtype() == DT_INT32) {
        out->flat<int32_t>()[d] = static_cast<int32_t>(shape.dim_size(d));
      } else {
        out->flat<int64_t>()[d] = shape.dim_size(d);
      }
    }
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("VariableShape", VariableShapeOp);

// TF turns a variable's copy-on-read mode off here; flowtrain's variables have none, so what
// remains is TF's check that the handle names an existing variable.
class DisableCopyOnReadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { LookupResourceVar(ctx, 0); }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("DisableCopyOnRead", DisableCopyOnReadOp);

// Gathers rows of the variable along axis 0, as GatherV2 with a constant axis of 0.
class ResourceGatherOp : public OpKernel {
 public:
  using OpKernel::OpKernel;  // batch_dims is 0: the shape function refuses others
  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Var> var = LookupResourceVar(ctx, 0);
    Tensor params;
    {
      absl::MutexLock lock(&var->mu);
      if (!var->initialized) FailedPrecondition("Attempting to use uninitialized value ", var->name);
      params = var->tensor;
    }
    if (params.dtype() != ctx->output_type(0)) {
      InvalidArgument("Trying to read variable ", var->name, " with wrong dtype. Expected ",
                      DataTypeString(ctx->output_type(0)), " got ", DataTypeString(params.dtype()));
    }
    if (params.dims() < 1) InvalidArgument(name(), ": the variable must be at least 1-D, got a scalar");
    const Tensor& indices = ctx->input(1);
    const int64_t rows = params.dim_size(0);
    const int64_t row_size = rows == 0 ? 0 : params.NumElements() / rows;
    std::vector<int64_t> dims;
    for (int d = 0; d < indices.dims(); ++d) dims.push_back(indices.dim_size(d));
    for (int d = 1; d < params.dims(); ++d) dims.push_back(params.dim_size(d));
    Tensor* out = ctx->allocate_output(0, TensorShape(dims));
    const int64_t n = indices.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = indices.dtype() == DT_INT32 ? indices.flat<int32_t>()[i] : indices.flat<int64_t>()[i];
      if (r < 0 || r >= rows) {
        InvalidArgument("indices[", i, "] = ", r, " is not in [0, ", rows, ")");
      }
      CopyElements(params, r * row_size, *out, i * row_size, row_size);
    }
  }
};
FT_REGISTER_KERNEL("ResourceGather", ResourceGatherOp);

}  // namespace
}  // namespace flowtrain
