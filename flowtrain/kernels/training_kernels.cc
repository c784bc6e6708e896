// Kernels of the fused optimizer updates (ops/training_ops.h). Each updates a variable and its
// slot variables in place; one kernel class serves ApplyX (reference inputs) and
// ResourceApplyX (handle inputs), differing only in how the variables are found, element-wise, with Eigen
// array expressions (vectorized; sqrt too, thanks to -fno-math-errno), split across the intra-op pool when
// the variable is large.
//
// The variables are locked for the update even when use_locking is false: the copy-on-write
// below replaces a variable's tensor object, which must not race with a concurrent reader.
// (use_locking=false in TF permits racy "Hogwild" updates; here concurrent steps serialize
// per variable instead, which gives the same or better results.)
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <functional>
#include <initializer_list>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/float_kernel_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/work_sharder.h"
#include "flowtrain/kernels/internal/variable_util.h"

namespace flowtrain {
namespace {

// Roughly the cycles an update spends per element and variable or slot it streams through.
constexpr int64_t kCyclesPerVariable = 1;

// Holds the locks of a kernel's variables (each distinct one once) from construction to
// destruction. They are taken in address order, so kernels locking overlapping sets cannot
// deadlock; a variable passed twice (var and slot aliased) is locked once. A run-time set of
// locks is beyond the analysis, so the locking itself is unchecked; callers that name the
// variables can tell it with `var->mu.AssertHeld()`.
//
//   VarsLock lock({var, accum});
class VarsLock {
 public:
  explicit VarsLock(std::initializer_list<Var*> vars) : VarsLock(vars.begin(), vars.end()) {}
  template <typename It>
  VarsLock(It begin, It end) ABSL_NO_THREAD_SAFETY_ANALYSIS : locked_(begin, end) {
    std::sort(locked_.begin(), locked_.end(), std::less<Var*>());
    locked_.erase(std::unique(locked_.begin(), locked_.end()), locked_.end());
    for (Var* var : locked_) var->mu.Lock();
  }
  ~VarsLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (auto it = locked_.rbegin(); it != locked_.rend(); ++it) (*it)->mu.Unlock();
  }
  VarsLock(const VarsLock&) = delete;
  VarsLock& operator=(const VarsLock&) = delete;

 private:
  absl::InlinedVector<Var*, 4> locked_;
};

// The variables an update kernel works on: behind reference inputs (ApplyX), or behind
// resource handles (ResourceApplyX), which this keeps alive until the update is done.
template <int kVars>
class KernelVars {
 public:
  KernelVars(OpKernelContext* ctx, const std::array<int, kVars>& inputs) {
    const bool resource = ctx->node().input_type(inputs[0]) == DT_RESOURCE;
    for (int i = 0; i < kVars; ++i) {
      if (resource) {
        held_[i] = LookupResourceVar(ctx, inputs[i]);
        vars_[i] = held_[i].get();
      } else {
        vars_[i] = ctx->input_ref(inputs[i]);
      }
    }
  }
  const std::array<Var*, kVars>& vars() const { return vars_; }
  // Sets the ref op's output to the variable; ResourceApplyX has none.
  void SetOutput(OpKernelContext* ctx) const {
    if (ctx->num_outputs() > 0) ctx->set_output_ref(0, vars_[0]);
  }

 private:
  std::array<Var*, kVars> vars_;
  std::array<std::shared_ptr<Var>, kVars> held_;
};

// The common part of the Apply* kernels. `Derived` provides
//   static constexpr std::array<int, kVars> kVarInputs;   // variable and slots, var first
//   static constexpr std::array<int, kScalars> kScalarInputs;
//   static constexpr int kGradInput;
//   template <typename T> void Update(std::array<ArrayMap<T>*, kVars>, ConstArrayMap<T>& grad,
//                                     const std::array<T, kScalars>&) const;
template <typename Derived, int kVars, int kScalars>
class ApplyKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Derived& self = static_cast<const Derived&>(*this);
    KernelVars<kVars> kernel_vars(ctx, Derived::kVarInputs);
    const std::array<Var*, kVars>& vars = kernel_vars.vars();
    {
      VarsLock lock(vars.begin(), vars.end());
      CheckAndApply(ctx, self, vars);
    }
    kernel_vars.SetOutput(ctx);
  }

 private:
  // Called with every vars[i]->mu held (by a VarsLock). The analysis cannot follow a lock
  // per element of an array, so this and Run are not checked.
  void CheckAndApply(OpKernelContext* ctx, const Derived& self,
                     const std::array<Var*, kVars>& vars) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (Var* var : vars) {
      if (!var->initialized) FailedPrecondition("Attempting to use uninitialized value ", var->name);
    }
    const TensorShape& shape = vars[0]->tensor.shape();
    for (int i = 1; i < kVars; ++i) {
      if (vars[i]->tensor.shape() != shape) {
        InvalidArgument(type_string(), ": var and ", InputName(Derived::kVarInputs[i]),
                        " do not have the same shape", shape.DebugString(), " ",
                        vars[i]->tensor.shape().DebugString());
      }
    }
    const Tensor& grad = ctx->input(Derived::kGradInput);
    for (Var* var : vars) {
      // Reference inputs are typed by the graph; resource variables are checked here.
      if (var->tensor.dtype() != grad.dtype()) {
        InvalidArgument(type_string(), ": variable ", var->name, " holds ",
                        DataTypeString(var->tensor.dtype()), " but the update is ",
                        DataTypeString(grad.dtype()));
      }
    }
    if (grad.shape() != shape) {
      InvalidArgument(type_string(), ": var and grad do not have the same shape", shape.DebugString(), " ",
                      grad.shape().DebugString());
    }
    for (int i = 0; i < kScalars; ++i) {
      const Tensor& s = ctx->input(Derived::kScalarInputs[i]);
      if (s.dims() != 0) {
        InvalidArgument(type_string(), ": ", InputName(Derived::kScalarInputs[i]),
                        " is not a scalar: ", s.shape().DebugString());
      }
    }
    for (Var* var : vars) var->PrepareForInPlaceUpdate();
    switch (grad.dtype()) {
      case DT_FLOAT:
        Run<float>(ctx, self, vars, grad);
        break;
      case DT_DOUBLE:
        Run<double>(ctx, self, vars, grad);
        break;
      default:
        ThrowUnsupportedType(grad.dtype(), type_string());
    }
  }

  std::string InputName(int i) const { return node().op_def().input_arg(i).name(); }

  // Called with every vars[i]->mu held.
  template <typename T>
  void Run(OpKernelContext* ctx, const Derived& self, const std::array<Var*, kVars>& vars,
           const Tensor& grad) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    std::array<T, kScalars> scalars;
    for (int i = 0; i < kScalars; ++i)
      scalars[i] = ctx->input(Derived::kScalarInputs[i]).template scalar<T>();
    std::array<T*, kVars> data;
    for (int i = 0; i < kVars; ++i) data[i] = vars[i]->tensor.template data<T>();
    const T* g = grad.data<T>();
    auto shard = [&](int64_t begin, int64_t end) {
      const Eigen::Index n = static_cast<Eigen::Index>(end - begin);
      std::array<ArrayMap<T>, kVars> maps = MakeMaps<T>(data, begin, n, std::make_index_sequence<kVars>());
      std::array<ArrayMap<T>*, kVars> ptrs;
      for (int i = 0; i < kVars; ++i) ptrs[i] = &maps[i];
      ConstArrayMap<T> grad_map(g + begin, n);
      self.template Update<T>(ptrs, grad_map, scalars);
    };
    ParallelRange(ctx, grad.NumElements(), kCyclesPerVariable * kVars, shard);
  }

  template <typename T, size_t... I>
  static std::array<ArrayMap<T>, kVars> MakeMaps(const std::array<T*, kVars>& data, int64_t begin,
                                                 Eigen::Index n, std::index_sequence<I...>) {
    return {ArrayMap<T>(data[I] + begin, n)...};
  }
};

class ApplyGradientDescentOp : public ApplyKernel<ApplyGradientDescentOp, 1, 1> {
 public:
  using ApplyKernel::ApplyKernel;
  static constexpr std::array<int, 1> kVarInputs{0};
  static constexpr std::array<int, 1> kScalarInputs{1};
  static constexpr int kGradInput = 2;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 1> v, ConstArrayMap<T>& grad, const std::array<T, 1>& s) const {
    *v[0] -= grad * s[0];
  }
};
FT_REGISTER_KERNEL("ApplyGradientDescent", ApplyGradientDescentOp);
FT_REGISTER_KERNEL("ResourceApplyGradientDescent", ApplyGradientDescentOp);

class ApplyMomentumOp : public ApplyKernel<ApplyMomentumOp, 2, 2> {
 public:
  explicit ApplyMomentumOp(OpKernelConstruction& c)
      : ApplyKernel(c), use_nesterov_(c.GetAttr<bool>("use_nesterov")) {}
  static constexpr std::array<int, 2> kVarInputs{0, 1};
  static constexpr std::array<int, 2> kScalarInputs{2, 4};  // lr, momentum
  static constexpr int kGradInput = 3;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 2> v, ConstArrayMap<T>& grad, const std::array<T, 2>& s) const {
    auto& var = *v[0];
    auto& accum = *v[1];
    const T lr = s[0], momentum = s[1];
    accum = accum * momentum + grad;
    if (use_nesterov_) {
      var -= grad * lr + accum * (momentum * lr);
    } else {
      var -= accum * lr;
    }
  }

 private:
  bool use_nesterov_;
};
FT_REGISTER_KERNEL("ApplyMomentum", ApplyMomentumOp);
FT_REGISTER_KERNEL("ResourceApplyMomentum", ApplyMomentumOp);

class ApplyAdamOp : public ApplyKernel<ApplyAdamOp, 3, 6> {
 public:
  explicit ApplyAdamOp(OpKernelConstruction& c)
      : ApplyKernel(c), use_nesterov_(c.GetAttr<bool>("use_nesterov")) {}
  static constexpr std::array<int, 3> kVarInputs{0, 1, 2};
  // beta1_power, beta2_power, lr, beta1, beta2, epsilon
  static constexpr std::array<int, 6> kScalarInputs{3, 4, 5, 6, 7, 8};
  static constexpr int kGradInput = 9;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 3> v, ConstArrayMap<T>& grad, const std::array<T, 6>& s) const {
    auto& var = *v[0];
    auto& m = *v[1];
    auto& vv = *v[2];
    const T beta1_power = s[0], beta2_power = s[1], lr = s[2], beta1 = s[3], beta2 = s[4], epsilon = s[5];
    const T lr_t = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
    m += (grad - m) * (T(1) - beta1);
    vv += (grad.square() - vv) * (T(1) - beta2);
    if (use_nesterov_) {
      var -= ((grad * (T(1) - beta1) + m * beta1) * lr_t) / (vv.sqrt() + epsilon);
    } else {
      var -= (m * lr_t) / (vv.sqrt() + epsilon);
    }
  }

 private:
  bool use_nesterov_;
};
FT_REGISTER_KERNEL("ApplyAdam", ApplyAdamOp);
FT_REGISTER_KERNEL("ResourceApplyAdam", ApplyAdamOp);

class ApplyAdagradOp : public ApplyKernel<ApplyAdagradOp, 2, 1> {
 public:
  explicit ApplyAdagradOp(OpKernelConstruction& c)
      : ApplyKernel(c), update_slots_(c.GetAttr<bool>("update_slots")) {}
  static constexpr std::array<int, 2> kVarInputs{0, 1};
  static constexpr std::array<int, 1> kScalarInputs{2};
  static constexpr int kGradInput = 3;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 2> v, ConstArrayMap<T>& grad, const std::array<T, 1>& s) const {
    auto& var = *v[0];
    auto& accum = *v[1];
    if (update_slots_) accum += grad.square();
    var -= grad * s[0] * accum.rsqrt();
  }

 private:
  bool update_slots_;
};
FT_REGISTER_KERNEL("ApplyAdagrad", ApplyAdagradOp);
FT_REGISTER_KERNEL("ResourceApplyAdagrad", ApplyAdagradOp);

class SparseApplyAdagradOp : public OpKernel {
 public:
  explicit SparseApplyAdagradOp(OpKernelConstruction& c)
      : OpKernel(c), update_slots_(c.GetAttr<bool>("update_slots")) {}

  void Compute(OpKernelContext* ctx) override {
    KernelVars<2> kernel_vars(ctx, {0, 1});
    Var* var = kernel_vars.vars()[0];
    Var* accum = kernel_vars.vars()[1];
    VarsLock lock({var, accum});
    var->mu.AssertHeld();
    accum->mu.AssertHeld();
    if (!var->initialized) FailedPrecondition("Attempting to use uninitialized value ", var->name);
    if (!accum->initialized) FailedPrecondition("Attempting to use uninitialized value ", accum->name);
    const TensorShape& shape = var->tensor.shape();
    if (accum->tensor.shape() != shape) {
      InvalidArgument("SparseApplyAdagrad: var and accum do not have the same shape", shape.DebugString(),
                      " ", accum->tensor.shape().DebugString());
    }
    if (shape.dims() < 1) InvalidArgument("SparseApplyAdagrad: var must be at least 1 dimensional");
    const Tensor& lr = ctx->input(2);
    const Tensor& grad = ctx->input(3);
    const Tensor& indices = ctx->input(4);
    if (var->tensor.dtype() != grad.dtype() || accum->tensor.dtype() != grad.dtype()) {
      InvalidArgument(type_string(), ": var, accum and grad must have one dtype, got ",
                      DataTypeString(var->tensor.dtype()), ", ", DataTypeString(accum->tensor.dtype()), ", ",
                      DataTypeString(grad.dtype()));
    }
    if (lr.dims() != 0) InvalidArgument("SparseApplyAdagrad: lr is not a scalar: ", lr.shape().DebugString());
    if (indices.dims() != 1) {
      InvalidArgument("SparseApplyAdagrad: indices must be one-dimensional, got ",
                      indices.shape().DebugString());
    }
    const int64_t n = indices.NumElements();
    bool grad_ok = grad.dims() == shape.dims() && grad.dims() >= 1 && grad.dim_size(0) == n;
    for (int d = 1; grad_ok && d < shape.dims(); ++d) grad_ok = grad.dim_size(d) == shape.dim_size(d);
    if (!grad_ok) {
      InvalidArgument("SparseApplyAdagrad: grad must be the slices of var at indices: var ",
                      shape.DebugString(), ", grad ", grad.shape().DebugString(), ", ", n, " indices");
    }
    const int64_t rows = shape.dim_size(0);
    const int64_t row_size = rows == 0 ? 0 : shape.num_elements() / rows;
    auto index = [&](int64_t i) -> int64_t {
      return indices.dtype() == DT_INT32 ? indices.flat<int32_t>()[i] : indices.flat<int64_t>()[i];
    };
    for (int64_t i = 0; i < n; ++i) {
      if (index(i) < 0 || index(i) >= rows) {
        InvalidArgument("SparseApplyAdagrad: index ", index(i), " at offset ", i,
                        " in indices is out of range [0, ", rows, ")");
      }
    }
    var->PrepareForInPlaceUpdate();
    accum->PrepareForInPlaceUpdate();
    auto run = [&]<typename T>() ABSL_EXCLUSIVE_LOCKS_REQUIRED(var->mu, accum->mu) {
      const T step = lr.scalar<T>();
      T* v = var->tensor.data<T>();
      T* a = accum->tensor.data<T>();
      const T* g = grad.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = index(i);
        ArrayMap<T> vr(v + r * row_size, row_size), ar(a + r * row_size, row_size);
        ConstArrayMap<T> gr(g + i * row_size, row_size);
        if (update_slots_) ar += gr.square();
        vr -= gr * step * ar.rsqrt();
      }
    };
    switch (grad.dtype()) {
      case DT_FLOAT:
        run.template operator()<float>();
        break;
      case DT_DOUBLE:
        run.template operator()<double>();
        break;
      default:
        ThrowUnsupportedType(grad.dtype(), type_string());
    }
    kernel_vars.SetOutput(ctx);
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 private:
  bool update_slots_;
};
FT_REGISTER_KERNEL("SparseApplyAdagrad", SparseApplyAdagradOp);
FT_REGISTER_KERNEL("ResourceSparseApplyAdagrad", SparseApplyAdagradOp);

class ApplyRMSPropOp : public ApplyKernel<ApplyRMSPropOp, 3, 4> {
 public:
  using ApplyKernel::ApplyKernel;
  static constexpr std::array<int, 3> kVarInputs{0, 1, 2};
  static constexpr std::array<int, 4> kScalarInputs{3, 4, 5, 6};  // lr, rho, momentum, epsilon
  static constexpr int kGradInput = 7;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 3> v, ConstArrayMap<T>& grad, const std::array<T, 4>& s) const {
    auto& var = *v[0];
    auto& ms = *v[1];
    auto& mom = *v[2];
    const T lr = s[0], rho = s[1], momentum = s[2], epsilon = s[3];
    ms += (grad.square() - ms) * (T(1) - rho);
    mom = mom * momentum + (grad * lr) / (ms + epsilon).sqrt();
    var -= mom;
  }
};
FT_REGISTER_KERNEL("ApplyRMSProp", ApplyRMSPropOp);
FT_REGISTER_KERNEL("ResourceApplyRMSProp", ApplyRMSPropOp);

class ApplyCenteredRMSPropOp : public ApplyKernel<ApplyCenteredRMSPropOp, 4, 4> {
 public:
  using ApplyKernel::ApplyKernel;
  static constexpr std::array<int, 4> kVarInputs{0, 1, 2, 3};     // var, mg, ms, mom
  static constexpr std::array<int, 4> kScalarInputs{4, 5, 6, 7};  // lr, rho, momentum, epsilon
  static constexpr int kGradInput = 8;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 4> v, ConstArrayMap<T>& grad, const std::array<T, 4>& s) const {
    auto& var = *v[0];
    auto& mg = *v[1];
    auto& ms = *v[2];
    auto& mom = *v[3];
    const T lr = s[0], rho = s[1], momentum = s[2], epsilon = s[3];
    ms += (grad.square() - ms) * (T(1) - rho);
    mg += (grad - mg) * (T(1) - rho);
    mom = mom * momentum + (grad * lr) / (ms - mg.square() + epsilon).sqrt();
    var -= mom;
  }
};
FT_REGISTER_KERNEL("ApplyCenteredRMSProp", ApplyCenteredRMSPropOp);
FT_REGISTER_KERNEL("ResourceApplyCenteredRMSProp", ApplyCenteredRMSPropOp);

}  // namespace
}  // namespace flowtrain
