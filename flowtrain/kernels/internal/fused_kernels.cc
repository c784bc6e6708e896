#include "flowtrain/kernels/internal/fused_kernels.h"

#include <type_traits>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/gemm.h"

namespace flowtrain {
namespace {

// Runs fn.template operator()<T>() for float32 and float64, the dtypes Gemm computes.
template <typename Fn>
void DispatchGemmType(DataType dtype, const OpKernel& kernel, Fn&& fn) {
  switch (BaseType(dtype)) {
    case DT_FLOAT:
      fn.template operator()<float>();
      return;
    case DT_DOUBLE:
      fn.template operator()<double>();
      return;
    default:
      InvalidArgument(kernel.name(), ": the fused MatMul has no CPU kernel for ", DataTypeString(dtype));
  }
}

// Inputs (a, b, bias); c = relu(op(a) * op(b) + bias).
class FusedMatMulOp : public OpKernel {
 public:
  FusedMatMulOp(OpKernelConstruction& c, const Node& matmul, bool relu)
      : OpKernel(c),
        transpose_a_(matmul.GetAttr<bool>("transpose_a")),
        transpose_b_(matmul.GetAttr<bool>("transpose_b")),
        relu_(relu) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    const MatMulShape s = CheckMatMulShape(a, b, transpose_a_, transpose_b_);
    if (bias.dims() != 1) InvalidArgument("Biases must be 1D: ", bias.shape().DebugString());
    if (bias.dim_size(0) != s.n) {
      InvalidArgument("Must provide as many biases as the last dimension of the input tensor: ",
                      bias.shape().DebugString(), " vs. ", TensorShape({s.m, s.n}).DebugString());
    }
    Tensor* out = ctx->allocate_output(0, TensorShape({s.m, s.n}));
    DispatchGemmType(a.dtype(), *this, [&]<typename T>() {
      GemmArgs<T> args = s.Args<T>(a, b, out->data<T>());
      args.bias = bias.data<T>();
      args.relu = relu_;
      Gemm<T>(ctx, args);
    });
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 private:
  const bool transpose_a_, transpose_b_, relu_;
};

// Inputs (a, b, features); c = op(a) * op(b) where features > 0, else 0.
class MatMulReluGradOp : public OpKernel {
 public:
  MatMulReluGradOp(OpKernelConstruction& c, const Node& matmul)
      : OpKernel(c),
        transpose_a_(matmul.GetAttr<bool>("transpose_a")),
        transpose_b_(matmul.GetAttr<bool>("transpose_b")) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const Tensor& features = ctx->input(2);
    const MatMulShape s = CheckMatMulShape(a, b, transpose_a_, transpose_b_);
    const TensorShape shape({s.m, s.n});
    if (features.shape() != shape || features.dtype() != a.dtype()) {
      InvalidArgument("ReluGrad: gradients and features must have the same shape and type: ",
                      shape.DebugString(), " vs. ", features.shape().DebugString());
    }
    Tensor* out = ctx->allocate_output(0, shape);
    DispatchGemmType(a.dtype(), *this, [&]<typename T>() {
      GemmArgs<T> args = s.Args<T>(a, b, out->data<T>());
      args.relu_features = features.data<T>();
      args.ldf = s.n;
      Gemm<T>(ctx, args);
    });
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 private:
  const bool transpose_a_, transpose_b_;
};

// Inputs (var: ref, alpha, a, b); var -= alpha * op(a) * op(b). The variable is locked for the
// update, as the Apply* kernels lock it (training_kernels.cc), use_locking or not.
class MatMulApplyGradientDescentOp : public OpKernel {
 public:
  MatMulApplyGradientDescentOp(OpKernelConstruction& c, const Node& matmul)
      : OpKernel(c),
        transpose_a_(matmul.GetAttr<bool>("transpose_a")),
        transpose_b_(matmul.GetAttr<bool>("transpose_b")) {}

  void Compute(OpKernelContext* ctx) override {
    Var* var = ctx->input_ref(0);
    const Tensor& alpha = ctx->input(1);
    const Tensor& a = ctx->input(2);
    const Tensor& b = ctx->input(3);
    const MatMulShape s = CheckMatMulShape(a, b, transpose_a_, transpose_b_);
    absl::ReleasableMutexLock lock(&var->mu);
    if (!var->initialized) FailedPrecondition("Attempting to use uninitialized value ", var->name);
    const TensorShape grad_shape({s.m, s.n});
    if (var->tensor.shape() != grad_shape) {
      InvalidArgument("ApplyGradientDescent: var and grad do not have the same shape",
                      var->tensor.shape().DebugString(), " ", grad_shape.DebugString());
    }
    if (alpha.dims() != 0)
      InvalidArgument("ApplyGradientDescent: alpha is not a scalar: ", alpha.shape().DebugString());
    if (var->tensor.dtype() != a.dtype() || alpha.dtype() != a.dtype()) {
      InvalidArgument(
          "ApplyGradientDescent: var, alpha and grad differ in type: ", DataTypeString(var->tensor.dtype()),
          ", ", DataTypeString(alpha.dtype()), ", ", DataTypeString(a.dtype()));
    }
    var->PrepareForInPlaceUpdate();
    // The lambda runs inside DispatchGemmType, beyond the analysis' sight of the lock held
    // here, so it writes through a pointer taken under it.
    Tensor* const target = &var->tensor;
    DispatchGemmType(a.dtype(), *this, [&]<typename T>() {
      GemmArgs<T> args = s.Args<T>(a, b, target->data<T>());
      args.accumulate = true;
      args.alpha = -alpha.scalar<T>();
      Gemm<T>(ctx, args);
    });
    lock.Release();
    ctx->set_output_ref(0, var);
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 private:
  const bool transpose_a_, transpose_b_;
};

}  // namespace

std::unique_ptr<OpKernel> CreateFusedMatMulKernel(const Node& matmul, const Node& bias_add,
                                                  const Node* relu) {
  OpKernelConstruction construction(relu != nullptr ? *relu : bias_add);
  return std::make_unique<FusedMatMulOp>(construction, matmul, relu != nullptr);
}

std::unique_ptr<OpKernel> CreateMatMulReluGradKernel(const Node& matmul, const Node& relu_grad) {
  OpKernelConstruction construction(relu_grad);
  return std::make_unique<MatMulReluGradOp>(construction, matmul);
}

std::unique_ptr<OpKernel> CreateMatMulApplyGradientDescentKernel(const Node& matmul, const Node& apply) {
  OpKernelConstruction construction(apply);
  return std::make_unique<MatMulApplyGradientDescentOp>(construction, matmul);
}

}  // namespace flowtrain
