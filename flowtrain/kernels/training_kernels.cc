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
#include <vector>

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
  static constexpr int kNumVars = kVars;
  static constexpr int kNumScalars = kScalars;

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

 protected:
  // Checks shared with the sparse form (SparseApplyOp): the variables are initialized, of one
  // shape and of the update's dtype, and the inputs `scalars` are scalars. Called with every
  // vars[i]->mu held.
  void CheckVars(const std::array<Var*, kVars>& vars, DataType dtype) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
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
    for (Var* var : vars) {
      // Reference inputs are typed by the graph; resource variables are checked here.
      if (var->tensor.dtype() != dtype) {
        InvalidArgument(type_string(), ": variable ", var->name, " holds ",
                        DataTypeString(var->tensor.dtype()), " but the update is ", DataTypeString(dtype));
      }
    }
  }
  void CheckScalars(OpKernelContext* ctx, const std::array<int, kScalars>& inputs) const {
    for (int i : inputs) {
      const Tensor& s = ctx->input(i);
      if (s.dims() != 0) {
        InvalidArgument(type_string(), ": ", InputName(i), " is not a scalar: ", s.shape().DebugString());
      }
    }
  }
  // The scalar inputs `inputs` as T (AdagradDA's global_step is an int64).
  template <typename T>
  static std::array<T, kScalars> Scalars(OpKernelContext* ctx, const std::array<int, kScalars>& inputs) {
    std::array<T, kScalars> scalars;
    for (int i = 0; i < kScalars; ++i) {
      const Tensor& t = ctx->input(inputs[i]);
      scalars[i] = t.dtype() == DT_INT64 ? static_cast<T>(t.scalar<int64_t>()) : t.scalar<T>();
    }
    return scalars;
  }
  std::string InputName(int i) const { return node().op_def().input_arg(i).name(); }

  // Maps of `n` elements from `begin` of each of `data`.
  template <typename T>
  static std::array<ArrayMap<T>, kVars> MakeMaps(const std::array<T*, kVars>& data, int64_t begin,
                                                 Eigen::Index n) {
    return MakeMaps<T>(data, begin, n, std::make_index_sequence<kVars>());
  }

 private:
  // Called with every vars[i]->mu held (by a VarsLock). The analysis cannot follow a lock
  // per element of an array, so this and Run are not checked.
  void CheckAndApply(OpKernelContext* ctx, const Derived& self,
                     const std::array<Var*, kVars>& vars) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const Tensor& grad = ctx->input(Derived::kGradInput);
    CheckVars(vars, grad.dtype());
    const TensorShape& shape = vars[0]->tensor.shape();
    if (grad.shape() != shape) {
      InvalidArgument(type_string(), ": var and grad do not have the same shape", shape.DebugString(), " ",
                      grad.shape().DebugString());
    }
    CheckScalars(ctx, Derived::kScalarInputs);
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

  // Called with every vars[i]->mu held.
  template <typename T>
  void Run(OpKernelContext* ctx, const Derived& self, const std::array<Var*, kVars>& vars,
           const Tensor& grad) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const std::array<T, kScalars> scalars = Scalars<T>(ctx, Derived::kScalarInputs);
    std::array<T*, kVars> data;
    for (int i = 0; i < kVars; ++i) data[i] = vars[i]->tensor.template data<T>();
    const T* g = grad.data<T>();
    auto shard = [&](int64_t begin, int64_t end) {
      const Eigen::Index n = static_cast<Eigen::Index>(end - begin);
      std::array<ArrayMap<T>, kVars> maps = MakeMaps<T>(data, begin, n);
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

// SparseApplyX and ResourceSparseApplyX: Dense's (ApplyX's) update on the rows `indices` of the
// variable and its slots only, the gradient holding one row per index. TF's sparse ops take
// the inputs of the dense one with `indices` inserted right after `grad`. Rows are updated in
// the order of `indices`, a repeated row once per occurrence; every index is checked before
// any row changes.
template <typename Dense>
class SparseApplyOp : public Dense {
 public:
  using Dense::Dense;

  void Compute(OpKernelContext* ctx) override {
    KernelVars<kVars> kernel_vars(ctx, Dense::kVarInputs);
    const std::array<Var*, kVars>& vars = kernel_vars.vars();
    {
      VarsLock lock(vars.begin(), vars.end());
      CheckAndApply(ctx, vars);
    }
    kernel_vars.SetOutput(ctx);
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 private:
  static constexpr int kVars = Dense::kNumVars;
  static constexpr int kScalars = Dense::kNumScalars;
  static constexpr int kGrad = Dense::kGradInput;
  static constexpr int kIndices = kGrad + 1;
  static constexpr std::array<int, kScalars> kScalarInputs = [] {
    std::array<int, kScalars> inputs = Dense::kScalarInputs;
    for (int& i : inputs) i += i > kGrad ? 1 : 0;
    return inputs;
  }();

  // Called with every vars[i]->mu held.
  void CheckAndApply(OpKernelContext* ctx,
                     const std::array<Var*, kVars>& vars) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const auto& op = this->type_string();
    const Tensor& grad = ctx->input(kGrad);
    const Tensor& indices = ctx->input(kIndices);
    this->CheckVars(vars, grad.dtype());
    const TensorShape& shape = vars[0]->tensor.shape();
    if (shape.dims() < 1) InvalidArgument(op, ": var must be at least 1 dimensional");
    this->CheckScalars(ctx, kScalarInputs);
    if (indices.dims() != 1) {
      InvalidArgument(op, ": indices must be one-dimensional, got ", indices.shape().DebugString());
    }
    const int64_t n = indices.NumElements();
    bool grad_ok = grad.dims() == shape.dims() && grad.dim_size(0) == n;
    for (int d = 1; grad_ok && d < shape.dims(); ++d) grad_ok = grad.dim_size(d) == shape.dim_size(d);
    if (!grad_ok) {
      InvalidArgument(op, ": grad must be the slices of var at indices: var ", shape.DebugString(), ", grad ",
                      grad.shape().DebugString(), ", ", n, " indices");
    }
    const int64_t rows = shape.dim_size(0);
    std::vector<int64_t> row_of(n);
    for (int64_t i = 0; i < n; ++i) {
      row_of[i] = indices.dtype() == DT_INT32 ? indices.flat<int32_t>()[i] : indices.flat<int64_t>()[i];
      if (row_of[i] < 0 || row_of[i] >= rows) {
        InvalidArgument(op, ": index ", row_of[i], " at offset ", i, " in indices is out of range [0, ", rows,
                        ")");
      }
    }
    for (Var* var : vars) var->PrepareForInPlaceUpdate();
    switch (grad.dtype()) {
      case DT_FLOAT:
        Run<float>(ctx, vars, grad, row_of);
        break;
      case DT_DOUBLE:
        Run<double>(ctx, vars, grad, row_of);
        break;
      default:
        ThrowUnsupportedType(grad.dtype(), op);
    }
  }

  // Called with every vars[i]->mu held.
  template <typename T>
  void Run(OpKernelContext* ctx, const std::array<Var*, kVars>& vars, const Tensor& grad,
           const std::vector<int64_t>& row_of) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const std::array<T, kScalars> scalars = Dense::template Scalars<T>(ctx, kScalarInputs);
    const int64_t rows = vars[0]->tensor.dim_size(0);
    const Eigen::Index row_size = rows == 0 ? 0 : vars[0]->tensor.NumElements() / rows;
    std::array<T*, kVars> data;
    for (int i = 0; i < kVars; ++i) data[i] = vars[i]->tensor.template data<T>();
    const T* g = grad.data<T>();
    for (size_t i = 0; i < row_of.size(); ++i) {
      std::array<ArrayMap<T>, kVars> maps = Dense::template MakeMaps<T>(data, row_of[i] * row_size, row_size);
      std::array<ArrayMap<T>*, kVars> ptrs;
      for (int k = 0; k < kVars; ++k) ptrs[k] = &maps[k];
      ConstArrayMap<T> grad_row(g + i * row_size, row_size);
      this->template Update<T>(ptrs, grad_row, scalars);
    }
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
FT_REGISTER_KERNEL("SparseApplyMomentum", SparseApplyOp<ApplyMomentumOp>);
FT_REGISTER_KERNEL("ResourceSparseApplyMomentum", SparseApplyOp<ApplyMomentumOp>);

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

FT_REGISTER_KERNEL("SparseApplyAdagrad", SparseApplyOp<ApplyAdagradOp>);
FT_REGISTER_KERNEL("ResourceSparseApplyAdagrad", SparseApplyOp<ApplyAdagradOp>);

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
FT_REGISTER_KERNEL("SparseApplyRMSProp", SparseApplyOp<ApplyRMSPropOp>);
FT_REGISTER_KERNEL("ResourceSparseApplyRMSProp", SparseApplyOp<ApplyRMSPropOp>);

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
FT_REGISTER_KERNEL("SparseApplyCenteredRMSProp", SparseApplyOp<ApplyCenteredRMSPropOp>);
FT_REGISTER_KERNEL("ResourceSparseApplyCenteredRMSProp", SparseApplyOp<ApplyCenteredRMSPropOp>);

class ApplyAdadeltaOp : public ApplyKernel<ApplyAdadeltaOp, 3, 3> {
 public:
  using ApplyKernel::ApplyKernel;
  static constexpr std::array<int, 3> kVarInputs{0, 1, 2};     // var, accum, accum_update
  static constexpr std::array<int, 3> kScalarInputs{3, 4, 5};  // lr, rho, epsilon
  static constexpr int kGradInput = 6;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 3> v, ConstArrayMap<T>& grad, const std::array<T, 3>& s) const {
    auto& var = *v[0];
    auto& accum = *v[1];
    auto& accum_update = *v[2];
    const T lr = s[0], rho = s[1], epsilon = s[2];
    accum = accum * rho + grad.square() * (T(1) - rho);
    const Eigen::Array<T, Eigen::Dynamic, 1> update =
        (accum_update + epsilon).sqrt() * (accum + epsilon).rsqrt() * grad;
    var -= update * lr;
    accum_update = accum_update * rho + update.square() * (T(1) - rho);
  }
};
FT_REGISTER_KERNEL("ApplyAdadelta", ApplyAdadeltaOp);
FT_REGISTER_KERNEL("ResourceApplyAdadelta", ApplyAdadeltaOp);
FT_REGISTER_KERNEL("SparseApplyAdadelta", SparseApplyOp<ApplyAdadeltaOp>);
FT_REGISTER_KERNEL("ResourceSparseApplyAdadelta", SparseApplyOp<ApplyAdadeltaOp>);

// The proximal step shared by ProximalGradientDescent and ProximalAdagrad: `var` becomes the
// soft-thresholded (by alpha * l1) and shrunk (by 1 + alpha * l2) `prox`, alpha being a scalar
// or an array.
template <typename V, typename Prox, typename Alpha, typename T>
void ProximalStep(V& var, const Prox& prox, const Alpha& alpha, T l1, T l2) {
  if (l1 > T(0)) {
    var = prox.sign() * (prox.abs() - alpha * l1).max(T(0)) / (alpha * l2 + T(1));
  } else {
    var = prox / (alpha * l2 + T(1));
  }
}

class ApplyProximalGradientDescentOp : public ApplyKernel<ApplyProximalGradientDescentOp, 1, 3> {
 public:
  using ApplyKernel::ApplyKernel;
  static constexpr std::array<int, 1> kVarInputs{0};
  static constexpr std::array<int, 3> kScalarInputs{1, 2, 3};  // alpha, l1, l2
  static constexpr int kGradInput = 4;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 1> v, ConstArrayMap<T>& grad, const std::array<T, 3>& s) const {
    auto& var = *v[0];
    const T alpha = s[0];
    const Eigen::Array<T, Eigen::Dynamic, 1> prox = var - grad * alpha;
    ProximalStep(var, prox, alpha, s[1], s[2]);
  }
};
FT_REGISTER_KERNEL("ApplyProximalGradientDescent", ApplyProximalGradientDescentOp);
FT_REGISTER_KERNEL("ResourceApplyProximalGradientDescent", ApplyProximalGradientDescentOp);
FT_REGISTER_KERNEL("SparseApplyProximalGradientDescent", SparseApplyOp<ApplyProximalGradientDescentOp>);
FT_REGISTER_KERNEL("ResourceSparseApplyProximalGradientDescent",
                   SparseApplyOp<ApplyProximalGradientDescentOp>);

class ApplyProximalAdagradOp : public ApplyKernel<ApplyProximalAdagradOp, 2, 3> {
 public:
  using ApplyKernel::ApplyKernel;
  static constexpr std::array<int, 2> kVarInputs{0, 1};
  static constexpr std::array<int, 3> kScalarInputs{2, 3, 4};  // lr, l1, l2
  static constexpr int kGradInput = 5;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 2> v, ConstArrayMap<T>& grad, const std::array<T, 3>& s) const {
    auto& var = *v[0];
    auto& accum = *v[1];
    accum += grad.square();
    const Eigen::Array<T, Eigen::Dynamic, 1> alpha = accum.rsqrt() * s[0];
    const Eigen::Array<T, Eigen::Dynamic, 1> prox = var - grad * alpha;
    ProximalStep(var, prox, alpha, s[1], s[2]);
  }
};
FT_REGISTER_KERNEL("ApplyProximalAdagrad", ApplyProximalAdagradOp);
FT_REGISTER_KERNEL("ResourceApplyProximalAdagrad", ApplyProximalAdagradOp);
FT_REGISTER_KERNEL("SparseApplyProximalAdagrad", SparseApplyOp<ApplyProximalAdagradOp>);
FT_REGISTER_KERNEL("ResourceSparseApplyProximalAdagrad", SparseApplyOp<ApplyProximalAdagradOp>);

// ApplyFtrl (kV2 = false) and ApplyFtrlV2, whose extra l2_shrinkage input sits before lr_power.
template <bool kV2>
class ApplyFtrlOp : public ApplyKernel<ApplyFtrlOp<kV2>, 3, kV2 ? 5 : 4> {
  using Base = ApplyKernel<ApplyFtrlOp<kV2>, 3, kV2 ? 5 : 4>;

 public:
  explicit ApplyFtrlOp(OpKernelConstruction& c)
      : Base(c), multiply_linear_by_lr_(c.GetAttr<bool>("multiply_linear_by_lr")) {}
  static constexpr std::array<int, 3> kVarInputs{0, 1, 2};  // var, accum, linear
  // lr, l1, l2, (l2_shrinkage,) lr_power
  static constexpr std::array<int, Base::kNumScalars> kScalarInputs = [] {
    std::array<int, Base::kNumScalars> inputs;
    for (int i = 0; i < Base::kNumScalars; ++i) inputs[i] = 4 + i;
    return inputs;
  }();
  static constexpr int kGradInput = 3;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 3> v, ConstArrayMap<T>& grad,
              const std::array<T, Base::kNumScalars>& s) const {
    using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
    auto& var = *v[0];
    auto& accum = *v[1];
    auto& linear = *v[2];
    const T lr = s[0], l1 = s[1], l2 = s[2], lr_power = s[Base::kNumScalars - 1];
    const Array new_accum = accum + grad.square();
    // accum^-lr_power, with TF's exact sqrt for the default lr_power -0.5.
    Array new_pow, old_pow;
    if (lr_power == T(-0.5)) {
      new_pow = new_accum.sqrt();
      old_pow = accum.sqrt();
    } else {
      new_pow = new_accum.pow(-lr_power);
      old_pow = accum.pow(-lr_power);
    }
    Array g = grad;
    if constexpr (kV2) g += var * (T(2) * s[3]);
    if (multiply_linear_by_lr_) {
      linear += g * lr - (new_pow - old_pow) * var;
      var = (linear.abs() > l1 * lr)
                .select((linear.sign() * (l1 * lr) - linear) / (new_pow + T(2) * l2 * lr), T(0));
    } else {
      linear += g - (new_pow - old_pow) / lr * var;
      var = (linear.abs() > l1).select((linear.sign() * l1 - linear) / (new_pow / lr + T(2) * l2), T(0));
    }
    accum = new_accum;
  }

 private:
  bool multiply_linear_by_lr_;
};
FT_REGISTER_KERNEL("ApplyFtrl", ApplyFtrlOp<false>);
FT_REGISTER_KERNEL("ResourceApplyFtrl", ApplyFtrlOp<false>);
FT_REGISTER_KERNEL("SparseApplyFtrl", SparseApplyOp<ApplyFtrlOp<false>>);
FT_REGISTER_KERNEL("ResourceSparseApplyFtrl", SparseApplyOp<ApplyFtrlOp<false>>);
FT_REGISTER_KERNEL("ApplyFtrlV2", ApplyFtrlOp<true>);
FT_REGISTER_KERNEL("ResourceApplyFtrlV2", ApplyFtrlOp<true>);
FT_REGISTER_KERNEL("SparseApplyFtrlV2", SparseApplyOp<ApplyFtrlOp<true>>);
FT_REGISTER_KERNEL("ResourceSparseApplyFtrlV2", SparseApplyOp<ApplyFtrlOp<true>>);

class ApplyAdagradDAOp : public ApplyKernel<ApplyAdagradDAOp, 3, 4> {
 public:
  using ApplyKernel::ApplyKernel;
  // var, gradient_accumulator, gradient_squared_accumulator
  static constexpr std::array<int, 3> kVarInputs{0, 1, 2};
  static constexpr std::array<int, 4> kScalarInputs{4, 5, 6, 7};  // lr, l1, l2, global_step
  static constexpr int kGradInput = 3;
  template <typename T>
  void Update(std::array<ArrayMap<T>*, 3> v, ConstArrayMap<T>& grad, const std::array<T, 4>& s) const {
    auto& var = *v[0];
    auto& gradient_accum = *v[1];
    auto& gradient_squared_accum = *v[2];
    const T lr = s[0], l1 = s[1], l2 = s[2], step = s[3];
    gradient_accum += grad;
    gradient_squared_accum += grad.square();
    if (l1 > T(0)) {
      var = gradient_accum.sign() * (-lr) * (gradient_accum.abs() - l1 * step).max(T(0)) /
            (gradient_squared_accum.sqrt() + l2 * step * lr);
    } else {
      var = gradient_accum * (-lr) / (gradient_squared_accum.sqrt() + l2 * step * lr);
    }
  }
};
FT_REGISTER_KERNEL("ApplyAdagradDA", ApplyAdagradDAOp);
FT_REGISTER_KERNEL("ResourceApplyAdagradDA", ApplyAdagradDAOp);
FT_REGISTER_KERNEL("SparseApplyAdagradDA", SparseApplyOp<ApplyAdagradDAOp>);
FT_REGISTER_KERNEL("ResourceSparseApplyAdagradDA", SparseApplyOp<ApplyAdagradDAOp>);

}  // namespace
}  // namespace flowtrain
