// Gradients of the control-flow primitives as TF's control_flow_grad.py builds them for
// conds: a Merge's gradient is a Switch of the incoming gradient on the cond's predicate
// ("<Merge>_grad/cond_grad"), a branch Switch's gradient a Merge of its outputs' gradients.
// Gradients through while loops (Enter, Exit, NextIteration) are not registered, so
// ops::Gradients reports them as undefined.
#include <cstring>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/internal/control_flow_context.h"
#include "flowtrain/ops/internal/control_flow_grad.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain {
namespace ops::control_flow_internal {
namespace {

bool IsSwitch(const Operation& op) { return op.type() == "Switch" || op.type() == "RefSwitch"; }

Output ZerosLikeOutsideLoop(const Operation& op, int index) {
  Graph& graph = *op.graph();
  CondContext* context = ContextOf(op)->AsCond();
  SwitchOutputs sw = ops::Switch(op.input(0), context->pred(), "Switch");
  const Output switch_val = context->branch() == 1 ? sw.output_false : sw.output_true;
  // The zeros' constant needs a data path from the switch to be dead with it.
  Output pivot = ops::Identity(switch_val, "Identity");
  Output shape = ops::Shape(switch_val, DT_INT32, "Shape");
  OpNameScope zeros(graph, "zeros");
  Output zero;
  {
    auto gate = graph.ControlDependencies({pivot.op()});
    Tensor value(BaseType(op.output(index).dtype()), TensorShape({}));
    std::memset(value.raw_data(), 0, value.TotalBytes());
    zero = ops::Const(value, "Const");
  }
  zeros.Exit();
  return NodeBuilder("Fill", zeros.op_name()).ExactName().Input(shape).Input(zero).Finalize();
}

}  // namespace

void FillMissingCondSwitchGradients(const Operation& op, std::vector<Output>& out_grads) {
  if (!IsSwitch(op)) return;
  ControlFlowContext* context = ContextOf(op);
  if (context == nullptr || context->AsCond() == nullptr) return;
  for (int i = 0; i < op.num_outputs(); ++i) {
    if (!out_grads[i] && IsFloatingType(BaseType(op.output(i).dtype())))
      out_grads[i] = ZerosLikeOutsideLoop(op, i);
  }
}

}  // namespace ops::control_flow_internal

namespace {

using ops::control_flow_internal::ContextOf;
using ops::control_flow_internal::OutputContext;

std::vector<Output> SwitchGrad(const Operation& op, const std::vector<Output>& grads) {
  ops::control_flow_internal::ControlFlowContext* context = ContextOf(op);
  if (context != nullptr && context->AsWhile() != nullptr) {
    InvalidArgument("Gradients of ", op.name(), ": differentiating inside a while loop is not supported");
  }
  if (context != nullptr) {
    const int branch = context->AsCond()->branch();
    if (!grads[1 - branch]) {
      // Only a resource handle has no zero gradient on the other side.
      if (!grads[branch] || BaseType(op.input(0).dtype()) != DT_RESOURCE) return {Output(), Output()};
      return {ops::Merge({grads[branch], grads[branch]}, "cond_resource_grad").output, Output()};
    }
    return {ops::Merge({grads[0], grads[1]}, "cond_grad").output, Output()};
  }
  // A Switch outside any cond: each gradient passes where its side was taken.
  const Output pred = op.input(1);
  auto side = [&](int i) { return grads[i] ? grads[i] : ops::ZerosLike(op.output(i)); };
  Output false_grad = ops::Switch(side(0), pred).output_false;
  Output true_grad = ops::Switch(side(1), pred).output_true;
  return {ops::Merge({false_grad, true_grad}).output, Output()};
}

std::vector<Output> MergeGrad(const Operation& op, const std::vector<Output>& grads) {
  Graph& graph = *op.graph();
  const Output& grad = grads[0];
  ops::control_flow_internal::ControlFlowContext* context = OutputContext(op.input(0).op());
  if (context != nullptr && context->AsWhile() != nullptr) {
    InvalidArgument("Gradients of ", op.name(), ": differentiating through a while loop is not supported");
  }
  if (context != nullptr) {
    auto colocate = graph.ColocateWith(grad.op());
    ops::SwitchOutputs sw = ops::Switch(grad, context->AsCond()->pred(), "cond_grad");
    return {sw.output_false, sw.output_true};
  }
  // A Merge outside any cond: input i's gradient flows where value_index == i.
  std::vector<Output> in_grads;
  for (int i = 0; i < op.num_inputs(); ++i) {
    Output is_i = ops::Equal(op.output(1), ops::Const(Tensor::Scalar<int32_t>(i)));
    in_grads.push_back(ops::Switch(grad, is_i).output_true);
  }
  return in_grads;
}

}  // namespace

FT_REGISTER_GRADIENT("Switch", SwitchGrad);
FT_REGISTER_GRADIENT("RefSwitch", SwitchGrad);
FT_REGISTER_GRADIENT("Merge", MergeGrad);
FT_REGISTER_GRADIENT("RefMerge", MergeGrad);
FT_REGISTER_NO_GRADIENT("LoopCond");

}  // namespace flowtrain
