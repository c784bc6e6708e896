// Gradients of the control-flow primitives as TF's control_flow_grad.py builds them. In a
// cond, a Merge's gradient is a Switch of the incoming gradient on the cond's predicate
// ("<Merge>_grad/cond_grad"), a branch Switch's gradient a Merge of its outputs' gradients.
// In a while loop (built in the gradient loop ops::Gradients made, control_flow_state.h), an
// Exit's gradient enters the gradient loop ("b_exit"), a loop Switch's is a Merge
// ("b_switch") whose back edge closes when the body's gradient arrives, a loop Merge's a
// Switch on the gradient loop's LoopCond, NextIteration's passes through, a loop variable's
// Enter's leaves by an Exit and a loop invariant's is summed over the iterations ("b_acc").
#include <cstring>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/internal/control_flow_context.h"
#include "flowtrain/ops/internal/control_flow_grad.h"
#include "flowtrain/ops/internal/control_flow_state.h"
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
using ops::control_flow_internal::ContextScope;
using ops::control_flow_internal::CurrentContext;
using ops::control_flow_internal::GradLoopState;
using ops::control_flow_internal::OutputContext;
using ops::control_flow_internal::WhileContext;

// The gradient loop the current gradient is built in (nullptr outside any loop).
WhileContext* CurrentGradLoop(Graph& graph) {
  ops::control_flow_internal::ControlFlowContext* current = CurrentContext(graph);
  return current == nullptr ? nullptr : current->GetWhileContext();
}

GradLoopState* RequireGradState(const Operation& op) {
  WhileContext* loop = CurrentGradLoop(*op.graph());
  if (loop == nullptr || loop->grad_state() == nullptr) {
    Internal("The gradient of ", op.name(), " must be built in a gradient loop");
  }
  return loop->grad_state();
}

std::vector<Output> SwitchGrad(const Operation& op, const std::vector<Output>& grads) {
  ops::control_flow_internal::ControlFlowContext* context = ContextOf(op);
  if (context != nullptr && context->AsWhile() != nullptr) {
    // Visited twice: from the Exit (creates the Merge), then from the body (closes it).
    GradLoopState* state = RequireGradState(op);
    if (Output merge = state->SwitchGrad(op.node())) {
      if (grads[1]) op.graph()->UpdateInput(merge.op(), 1, ops::NextIteration(grads[1], "NextIteration"));
      return {Output(), Output()};
    }
    if (!grads[0]) return {Output(), Output()};
    Output merge = ops::Merge({grads[0], grads[0]}, "b_switch").output;
    state->SetSwitchGrad(op.node(), merge);
    return {merge, Output()};
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
    ops::SwitchOutputs sw = ops::Switch(grad, RequireGradState(op)->grad_context()->pivot(), "Switch");
    return {sw.output_false, sw.output_true};
  }
  if (context != nullptr) {
    Output pred = context->AsCond()->pred();
    WhileContext* grad_loop = CurrentGradLoop(graph);
    if (grad_loop != nullptr && grad_loop->grad_state() != nullptr) {
      // A cond in a loop: the predicate of each forward iteration, kept for the backprop.
      GradLoopState* state = grad_loop->grad_state();
      auto it = state->history_map().find(pred.name());
      if (it != state->history_map().end()) {
        pred = it->second;
      } else {
        Output history;
        {
          ContextScope out(graph, state->gradients_context());
          history = state->AddForwardAccumulator(pred);
        }
        Output real = state->AddBackpropAccumulatedValue(history, pred);
        state->history_map()[pred.name()] = real;
        pred = real;
      }
    }
    auto colocate = graph.ColocateWith(grad.op());
    ops::SwitchOutputs sw = ops::Switch(grad, pred, "cond_grad");
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

std::vector<Output> ExitGrad(const Operation& op, const std::vector<Output>& grads) {
  WhileContext* grad_loop = CurrentGradLoop(*op.graph());
  if (grad_loop == nullptr) Internal("The gradient of ", op.name(), " must be built in a gradient loop");
  if (!grad_loop->back_prop()) return {Output()};
  if (ContextOf(op)->GetWhileContext()->grad_state() != nullptr) {
    InvalidArgument("Gradients of ", op.name(), ": second-order gradients for while loops are not supported");
  }
  grad_loop->AddName(grads[0].name());
  Output enter =
      ops::Enter(grads[0], grad_loop->frame_name(),
                 {.is_constant = false, .parallel_iterations = grad_loop->parallel_iterations()}, "b_exit");
  grad_loop->AddLoopEnter(enter);
  return {enter};
}

std::vector<Output> NextIterationGrad(const Operation&, const std::vector<Output>& grads) {
  return {grads[0]};
}

std::vector<Output> EnterGrad(const Operation& op, const std::vector<Output>& grads) {
  WhileContext* grad_loop = CurrentGradLoop(*op.graph());
  // An Enter outside the loops being differentiated passes its gradient through.
  if (grad_loop == nullptr || !grad_loop->back_prop() || grad_loop->grad_state() == nullptr)
    return {grads[0]};
  if (ops::control_flow_internal::IsLoopConstantEnter(op)) {
    return {ops::control_flow_internal::AddBackpropAccumulator(grad_loop, op, grads[0])};
  }
  Output exit = ops::Exit(grads[0], "Exit");
  grad_loop->AddLoopExit(exit);
  grad_loop->ExitResult({exit});
  return {exit};
}

}  // namespace

FT_REGISTER_GRADIENT("Exit", ExitGrad);
FT_REGISTER_GRADIENT("RefExit", ExitGrad);
FT_REGISTER_GRADIENT("NextIteration", NextIterationGrad);
FT_REGISTER_GRADIENT("RefNextIteration", NextIterationGrad);
FT_REGISTER_GRADIENT("Enter", EnterGrad);
FT_REGISTER_GRADIENT("RefEnter", EnterGrad);
FT_REGISTER_GRADIENT("Switch", SwitchGrad);
FT_REGISTER_GRADIENT("RefSwitch", SwitchGrad);
FT_REGISTER_GRADIENT("Merge", MergeGrad);
FT_REGISTER_GRADIENT("RefMerge", MergeGrad);
FT_REGISTER_NO_GRADIENT("LoopCond");

}  // namespace flowtrain
