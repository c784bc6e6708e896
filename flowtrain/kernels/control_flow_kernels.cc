// Kernels of TF1's control-flow primitives (ops/control_flow_ops.h). They only move values:
// what makes them control flow is how the executor treats their nodes (frames, iterations,
// dead tensors; runtime/internal/frame_executor.h). The Ref variants forward the variable
// itself, so an Assign in a branch or a loop body updates the variable outside.
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

// Output `out` becomes input `in`: the variable for a reference input, else the value.
void Forward(OpKernelContext* ctx, int in, int out) {
  if (IsRefType(ctx->node().input_type(in))) {
    ctx->set_output_ref(out, ctx->input_ref(in));
  } else {
    ctx->set_output(out, ctx->input(in));
  }
}

// Switch, RefSwitch: `data` to output 1 when `pred` is true, else to output 0; the other
// output is left unset, which makes it dead.
class SwitchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& pred = ctx->input(1);
    if (pred.dims() != 0) {
      InvalidArgument("The second input must be a scalar, but it has shape ", pred.shape().DebugString());
    }
    Forward(ctx, 0, pred.scalar<bool>() ? 1 : 0);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("Switch", SwitchOp);
FT_REGISTER_KERNEL("RefSwitch", SwitchOp);

// Merge, RefMerge: the first live input and its index. The executor runs a Merge as soon as
// one input is alive, so usually only that one is present. The index tensors are made once:
// a loop's Merge runs every iteration, and shared scalars are never written in place.
class MergeOp : public OpKernel {
 public:
  explicit MergeOp(OpKernelConstruction& c) : OpKernel(c) {
    for (int i = 0; i < c.num_inputs(); ++i) indices_.push_back(Tensor::Scalar<int32_t>(i));
  }
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      if (!ctx->has_input(i)) continue;
      Forward(ctx, i, 0);
      ctx->set_output(1, indices_[i]);
      return;
    }
    Internal("Merge ", name(), " ran with no live input");
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  std::vector<Tensor> indices_;
};
FT_REGISTER_KERNEL("Merge", MergeOp);
FT_REGISTER_KERNEL("RefMerge", MergeOp);

// Enter, Exit, NextIteration (and Ref variants), LoopCond: the input as it is; the executor
// moves it between frames and iterations.
class ForwardOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { Forward(ctx, 0, 0); }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("Enter", ForwardOp);
FT_REGISTER_KERNEL("RefEnter", ForwardOp);
FT_REGISTER_KERNEL("Exit", ForwardOp);
FT_REGISTER_KERNEL("RefExit", ForwardOp);
FT_REGISTER_KERNEL("NextIteration", ForwardOp);
FT_REGISTER_KERNEL("RefNextIteration", ForwardOp);
FT_REGISTER_KERNEL("LoopCond", ForwardOp);

// ControlTrigger: nothing to compute; the executor runs it even when its inputs are dead.
class ControlTriggerOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("ControlTrigger", ControlTriggerOp);

}  // namespace
}  // namespace flowtrain
