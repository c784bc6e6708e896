// Kernels of TF1 reference variables: VariableV2 looks up (or creates) the variable in the
// session's resource manager and outputs a reference to it; Assign and friends update it.
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/kernels/internal/variable_util.h"

namespace flowtrain {
namespace {

class VariableOp : public OpKernel {
 public:
  explicit VariableOp(OpKernelConstruction& c)
      : OpKernel(c),
        container_(c.GetAttr<std::string>("container")),
        shared_name_(c.GetAttr<std::string>("shared_name")) {
    if (shared_name_.empty()) shared_name_ = c.name();
  }
  void Compute(OpKernelContext* ctx) override {
    // The variable is cached per kernel (one kernel per node per session), but looked up
    // under the lock the first time so concurrent first runs agree on one variable.
    absl::MutexLock lock(&mu_);
    if (var_ == nullptr) {
      const std::string var_name = name();
      var_ = ctx->resource_manager()->LookupOrCreate<Var>(container_, shared_name_,
                                                          [&] { return std::make_shared<Var>(var_name); });
    }
    ctx->set_output_ref(0, var_.get());
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  std::string container_;
  std::string shared_name_;
  absl::Mutex mu_;
  std::shared_ptr<Var> var_ ABSL_GUARDED_BY(mu_);
};
FT_REGISTER_KERNEL("VariableV2", VariableOp);

class AssignOp : public OpKernel {
 public:
  explicit AssignOp(OpKernelConstruction& c)
      : OpKernel(c),
        validate_shape_(c.GetAttr<bool>("validate_shape")),
        use_locking_(c.GetAttr<bool>("use_locking")) {}
  void Compute(OpKernelContext* ctx) override {
    Var* var = ctx->input_ref(0);
    const Tensor& value = ctx->input(1);
    {
      // Even without use_locking the swap of the tensor object must not tear.
      absl::MutexLock lock(&var->mu);
      if (var->initialized && validate_shape_ && var->tensor.shape() != value.shape()) {
        InvalidArgument("Assign requires shapes of both tensors to match. lhs shape= ",
                        var->tensor.shape().DebugString(), " rhs shape= ", value.shape().DebugString());
      }
      AssignToVar(*var, value);
    }
    ctx->set_output_ref(0, var);
  }

 private:
  bool validate_shape_;
  bool use_locking_;
};
FT_REGISTER_KERNEL("Assign", AssignOp);

template <bool kAdd>
class AssignUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Var* var = ctx->input_ref(0);
    const Tensor& delta = ctx->input(1);
    {
      absl::MutexLock lock(&var->mu);
      AddToVar(*var, delta, kAdd, type_string());
    }
    ctx->set_output_ref(0, var);
  }
};
FT_REGISTER_KERNEL("AssignAdd", AssignUpdateOp<true>);

class CountUpToOp : public OpKernel {
 public:
  explicit CountUpToOp(OpKernelConstruction& c) : OpKernel(c), limit_(c.GetAttr<int64_t>("limit")) {}
  void Compute(OpKernelContext* ctx) override {
    Var* var = ctx->input_ref(0);
    absl::MutexLock lock(&var->mu);
    if (!var->initialized) FailedPrecondition("Attempting to use uninitialized value ", var->name);
    if (var->tensor.dims() != 0) {
      InvalidArgument("Not a scalar: ", var->tensor.shape().DebugString());
    }
    auto count = [&]<typename T>() ABSL_EXCLUSIVE_LOCKS_REQUIRED(var->mu) {
      const T before = *var->tensor.data<T>();
      if (static_cast<int64_t>(before) >= limit_) OutOfRange("Reached limit of ", limit_);
      var->PrepareForInPlaceUpdate();
      *var->tensor.data<T>() = before + 1;
      ctx->set_output(0, Tensor::Scalar<T>(before));
    };
    if (var->tensor.dtype() == DT_INT32) {
      count.template operator()<int32_t>();
    } else {
      count.template operator()<int64_t>();
    }
  }

 private:
  int64_t limit_;
};
FT_REGISTER_KERNEL("CountUpTo", CountUpToOp);
FT_REGISTER_KERNEL("AssignSub", AssignUpdateOp<false>);

template <bool kAdd>
class ScatterUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Var* var = ctx->input_ref(0);
    {
      absl::MutexLock lock(&var->mu);
      ScatterAddToVar(*var, ctx->input(1), ctx->input(2), kAdd, type_string());
    }
    ctx->set_output_ref(0, var);
  }
};
FT_REGISTER_KERNEL("ScatterAdd", ScatterUpdateOp<true>);
FT_REGISTER_KERNEL("ScatterSub", ScatterUpdateOp<false>);

class IsVariableInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Var* var = ctx->input_ref(0);
    bool initialized;
    {
      absl::MutexLock lock(&var->mu);
      initialized = var->initialized;
    }
    ctx->set_output(0, Tensor::Scalar<bool>(initialized));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("IsVariableInitialized", IsVariableInitializedOp);

}  // namespace
}  // namespace flowtrain
