#include "flowtrain/ops/internal/control_flow_state.h"

#include <cstring>
#include <memory>
#include <tuple>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/stack_ops.h"

namespace flowtrain::ops::control_flow_internal {
namespace {

// Where the graph keeps the states alive (gradient loop contexts point to them).
constexpr const char* kGradLoopStatesKey = "__grad_loop_states";

bool IsSwitch(const Operation& op) { return op.type() == "Switch" || op.type() == "RefSwitch"; }

// A constant of zeros (TF's constant(0, shape=...)).
Output ZerosConst(const PartialTensorShape& shape, DataType dtype, std::string_view name) {
  Tensor value(dtype, shape.AsTensorShape());
  std::memset(value.raw_data(), 0, value.TotalBytes());
  return ops::Const(value, name);
}

// TF's zeros(shape_tensor, dtype): "zeros/Const" filled into "zeros".
Output ZerosOfShape(Graph& graph, const Output& shape, DataType dtype) {
  OpNameScope zeros(graph, "zeros");
  Output zero = ZerosConst(PartialTensorShape({}), dtype, "Const");
  zeros.Exit();
  return NodeBuilder("Fill", zeros.op_name()).ExactName().Input(shape).Input(zero).Finalize();
}

// x + 1 as TF's math_ops.add(x, 1): "Add/y" and "Add".
Output AddOne(Graph& graph, const Output& x) {
  OpNameScope add(graph, "Add");
  Output one = ops::Const(Tensor::Scalar<int32_t>(1), "y");
  add.Exit();
  return NodeBuilder("AddV2", add.op_name()).ExactName().Input(x).Input(one).Finalize();
}

EnterOptions VariableEnter(const WhileContext* loop) {
  return {.is_constant = false, .parallel_iterations = loop->parallel_iterations()};
}

// The forward loop's iteration counter, built in the loop's outer context (TF's
// AddForwardLoopCounter). Returns the count (an Exit) and the counter's NextIteration.
std::pair<Output, Output> AddForwardLoopCounter(Graph& graph, WhileContext* loop, GradLoopState* outer) {
  Output n = ops::Const(Tensor::Scalar<int32_t>(0), "f_count");
  if (outer != nullptr) graph.AddControlInput(n.op(), outer->forward_index().op().input(0).op());
  ContextScope in(graph, loop);
  loop->AddName(n.name());
  Output enter = ops::Enter(n, loop->frame_name(), VariableEnter(loop), "f_count");
  loop->AddLoopEnter(enter);
  Output merge = ops::Merge({enter, enter}, "Merge").output;
  SwitchOutputs sw = ops::Switch(merge, loop->pivot(), "Switch");
  Output next = ops::NextIteration(AddOne(graph, sw.output_true), "NextIteration");
  graph.UpdateInput(merge.op(), 1, next);
  Output total = ops::Exit(sw.output_false, "f_count");
  loop->AddLoopExit(total);
  loop->ExitResult({total});
  return {total, next};
}

}  // namespace

GradLoopState::GradLoopState(Graph& graph, WhileContext* forward, GradLoopState* outer,
                             ControlFlowContext* gradients_context)
    : graph_(graph),
      outer_(outer),
      forward_(forward),
      gradients_context_(gradients_context),
      forward_loop_exits_(forward->loop_exits()),
      pending_exits_count_(static_cast<int>(forward->loop_exits().size())) {
  ControlFlowContext* outer_forward = outer != nullptr ? outer->forward_context() : forward->outer();
  Output count;
  {
    ContextScope in_outer(graph, outer_forward);
    std::tie(count, forward_index_) = AddForwardLoopCounter(graph, forward, outer);
  }
  auto new_grad_context = [&] {
    grad_ =
        NewWhileContext(graph, graph.UniqueName(StrCat(graph.CurrentNameScope(), forward->name())),
                        forward->parallel_iterations(), forward->back_prop(), /*add_to_collection=*/false);
    grad_->set_grad_state(this);
    if (forward->maximum_iterations()) grad_->set_maximum_iterations(forward->maximum_iterations());
  };
  if (outer != nullptr) {
    // A nested loop runs once per outer iteration: its count is itself accumulated.
    outer_forward->AddName(count.name());
    Output history = outer->AddForwardAccumulator(count);
    ContextScope in_outer_grad(graph, outer->grad_context());
    new_grad_context();
    Output real_count = outer->AddBackpropAccumulatedValue(history, count);
    grad_index_ = AddBackpropLoopCounter(real_count);
  } else {
    ContextScope in_outer(graph, outer_forward);
    new_grad_context();
    grad_index_ = AddBackpropLoopCounter(count);
  }
}

Output GradLoopState::AddBackpropLoopCounter(const Output& count) {
  Output one = ops::Const(Tensor::Scalar<int32_t>(1), "b_count");
  ContextScope in(graph_, grad_);
  grad_->AddName(count.name());
  Output enter = ops::Enter(count, grad_->frame_name(), VariableEnter(grad_), "b_count");
  grad_->AddLoopEnter(enter);
  Output merge = ops::Merge({enter, enter}, "Merge").output;
  grad_->set_pivot_for_pred(merge);
  Output pivot = ops::LoopCond(ops::GreaterEqual(merge, one, "GreaterEqual"), "b_count");
  grad_->set_pivot(pivot);
  SwitchOutputs sw = ops::Switch(merge, pivot, "Switch");
  Output index = ops::Sub(sw.output_true, one, "Sub");
  grad_->set_pivot_for_body(index);
  Output next = ops::NextIteration(index, "NextIteration");
  graph_.UpdateInput(merge.op(), 1, next);
  Output final_zero = ops::Exit(sw.output_false, "b_count");
  grad_->AddLoopExit(final_zero);
  if (outer_ != nullptr) graph_.AddControlInput(outer_->GradSync(), final_zero.op());
  grad_->ExitResult({final_zero});
  return next;
}

Operation GradLoopState::ForwardSync() {
  if (!forward_sync_) {
    auto no_controls = graph_.ClearControlDependencies();
    ContextScope in(graph_, forward_, /*add_ops=*/false);
    forward_sync_ = ops::ControlTrigger("f_sync");
    graph_.AddControlInput(forward_index_.op(), forward_sync_);
  }
  return forward_sync_;
}

Operation GradLoopState::GradSync() {
  if (!grad_sync_) {
    auto no_controls = graph_.ClearControlDependencies();
    ContextScope in(graph_, grad_, /*add_ops=*/false);
    grad_sync_ = ops::ControlTrigger("b_sync");
    graph_.AddControlInput(grad_index_.op(), grad_sync_);
  }
  return grad_sync_;
}

Output GradLoopState::SwitchGrad(const Node* loop_switch) const {
  for (const auto& [node, merge] : switch_map_) {
    if (node == loop_switch) return merge;
  }
  return Output();
}

void GradLoopState::SetSwitchGrad(const Node* loop_switch, Output merge) {
  switch_map_.emplace_back(loop_switch, std::move(merge));
}

Output GradLoopState::AddForwardAccumulator(const Output& value, bool dead_branch) {
  ControlFlowContext* current = CurrentContext(graph_);
  auto no_controls = graph_.ClearControlDependencies();
  Output acc;
  {
    ContextScope in(graph_, current);
    auto colocate = graph_.ColocateWith(value.op());
    Output max_size = ops::Const(Tensor::Scalar<int32_t>(-1), "Const");
    acc = ops::StackV2(value.dtype(), max_size, "f_acc");
  }
  const Output enter_acc = forward_->AddValue(acc);
  ControlFlowContext* value_context = OutputContext(value.op());
  Output push;
  if (value_context == forward_) {
    {
      ContextScope in(graph_, forward_);
      push = ops::StackPushV2(enter_acc, value, /*swap_memory=*/false);
    }
    // The counter's next iteration waits for this iteration's push.
    graph_.AddControlInput(forward_index_.op(), push.op());
  } else {
    CondContext* cond = value_context == nullptr ? nullptr : value_context->AsCond();
    if (cond == nullptr) {
      Internal("While-loop gradients: ", value.name(), " is neither in loop ", forward_->name(),
               " nor in a cond inside it");
    }
    if (dead_branch) {
      // The value of the untaken side: the push runs where the cond's Switch does.
      {
        ContextScope in(graph_, cond->outer());
        push = ops::StackPushV2(enter_acc, value, /*swap_memory=*/false);
      }
      SetContext(push.op(), cond);
    } else {
      ContextScope in(graph_, cond);
      push = ops::StackPushV2(enter_acc, value, /*swap_memory=*/false);
    }
    graph_.AddControlInput(ForwardSync(), push.op());
  }
  // Pushes of one iteration run after the counter's increment of the previous one.
  graph_.AddControlInput(push.op(), forward_index_.op().input(0).op());
  return acc;
}

Output GradLoopState::AddBackpropAccumulatedValue(const Output& history, const Output& value,
                                                  bool dead_branch) {
  ControlFlowContext* history_context = ContextOf(history.op());
  CondContext* cond = nullptr;
  for (ControlFlowContext* c = ContextOf(value.op()); c != nullptr && c != history_context; c = c->outer()) {
    if ((cond = c->AsCond()) != nullptr) break;
  }
  auto no_controls = graph_.ClearControlDependencies();
  Output pop;
  {
    ContextScope in(graph_, grad_);
    Output stack = history;
    if (cond != nullptr) {
      // A value of a cond branch was pushed only when the branch ran: pop only then too.
      Output pred;
      for (GradLoopState* s = this; !pred && s != nullptr; s = s->outer_) {
        auto it = s->history_map_.find(cond->pred().name());
        if (it != s->history_map_.end()) pred = it->second;
      }
      if (!pred) pred = cond->pred();
      const int branch = dead_branch ? 1 - cond->branch() : cond->branch();
      SwitchOutputs sw = ops::Switch(stack, pred);
      stack = branch == 1 ? sw.output_true : sw.output_false;
    }
    pop = ops::StackPopV2(stack, value.dtype());
    graph_.SetOutputShape(pop.op(), 0, value.shape());
  }
  // Pops of one iteration run before the next iteration's.
  if (grad_->parallel_iterations() > 1) graph_.AddControlInput(GradSync(), pop.op());
  return pop;
}

Output GradLoopState::GetRealValue(const Output& value) {
  auto known = history_map_.find(value.name());
  if (known != history_map_.end()) return known->second;
  Output current = value;
  GradLoopState* state = this;
  Output real;
  Output history;
  while (true) {
    if (Operation enter = LoopConstantEnterOf(current)) {
      // A loop invariant: the same value every iteration, from the loop's outside.
      current = enter.input(0);
      state = state->outer_;
      if (state == nullptr) {
        real = grad_->AddValue(current);
        break;
      }
    } else if (current.op().type() == "Const") {
      real = ops::Const(current.op().GetAttr<Tensor>("value"));
      break;
    } else {
      ContextScope out(graph_, gradients_context_);
      history = state->AddForwardAccumulator(current);
      break;
    }
  }
  if (!real) {
    real = state->AddBackpropAccumulatedValue(history, current);
    if (state != this) real = grad_->AddValue(real);
  }
  history_map_[value.name()] = real;
  return real;
}

Output AddBackpropAccumulator(WhileContext* grad_context, const Operation& enter, const Output& grad) {
  Graph& graph = *enter.graph();
  GradLoopState* state = grad_context->grad_state();
  Output acc;
  {
    ContextScope out(graph, grad_context->outer());
    if (grad.shape().IsFullyDefined()) {
      acc = ZerosConst(grad.shape(), grad.dtype(), "b_acc");
    } else {
      const Output value = enter.input(0);
      WhileContext* outer_loop =
          grad_context->outer() == nullptr ? nullptr : grad_context->outer()->AsWhile();
      if (outer_loop != nullptr && outer_loop->grad_state() != nullptr) {
        // The invariant's shape may change across outer iterations: keep its history.
        Output shape;
        {
          ContextScope forward_outer(graph, state->forward_context()->outer());
          shape = ops::Shape(value);
        }
        GradLoopState* outer_state = state->outer_grad_state();
        Output history;
        {
          ContextScope base(graph, state->gradients_context());
          history = outer_state->AddForwardAccumulator(shape);
        }
        acc = ZerosOfShape(graph, outer_state->AddBackpropAccumulatedValue(history, shape), grad.dtype());
      } else {
        acc = ZerosOfShape(graph, ops::Shape(value), grad.dtype());
      }
    }
  }
  ContextScope in(graph, grad_context);
  grad_context->AddName(acc.name());
  Output enter_acc = ops::Enter(acc, grad_context->frame_name(), VariableEnter(grad_context), "b_acc");
  grad_context->AddLoopEnter(enter_acc);
  Output merge = ops::Merge({enter_acc, enter_acc}, "b_acc").output;
  SwitchOutputs sw = ops::Switch(merge, grad_context->pivot(), "Switch");
  Output next = ops::NextIteration(ops::AddV2(sw.output_true, grad, "Add"), "NextIteration");
  graph.UpdateInput(merge.op(), 1, next);
  Output result = ops::Exit(sw.output_false, "b_acc");
  grad_context->AddLoopExit(result);
  grad_context->ExitResult({result});
  return result;
}

GradLoopState* ControlFlowState::Find(const WhileContext* forward) const {
  for (const auto& [loop, state] : map_) {
    if (loop == forward) return state;
  }
  return nullptr;
}

void ControlFlowState::AddWhileContext(const Operation& exit, std::unordered_set<const Node*>& between,
                                       std::vector<const Node*>& between_list) {
  WhileContext* forward = ContextOf(exit)->GetWhileContext();
  if (Find(forward) != nullptr) return;
  WhileContext* outer_forward = forward->outer() == nullptr ? nullptr : forward->outer()->GetWhileContext();
  GradLoopState* outer = outer_forward == nullptr ? nullptr : Find(outer_forward);
  auto state = std::make_shared<GradLoopState>(graph_, forward, outer, gradients_context_);
  graph_.AddToCollection(kGradLoopStatesKey, state);
  map_.emplace_back(forward, state.get());
  // Every Exit of the loop takes part: an unused one still feeds the gradient loop zeros.
  for (const Output& e : state->forward_loop_exits()) {
    if (between.insert(e.node()).second) between_list.push_back(e.node());
  }
}

GradLoopState* ControlFlowState::GetGradState(const Operation& op, bool before) const {
  ControlFlowContext* context = ContextOf(op);
  if (before && context != nullptr && IsLoopExit(op)) context = context->outer();
  WhileContext* forward = context == nullptr ? nullptr : context->GetWhileContext();
  return forward == nullptr ? nullptr : Find(forward);
}

std::vector<Output> ControlFlowState::ProcessUnusedLoopExits(
    const std::unordered_map<const Node*, int>& pending, const std::unordered_set<const Node*>& ys_ops) {
  std::vector<Output> loop_exits;
  for (const auto& [loop, state] : map_) {
    for (const Output& y : state->forward_loop_exits()) {
      auto it = pending.find(y.node());
      if (it != pending.end() && it->second != 0) continue;
      --state->pending_exits_count();
      if (ys_ops.count(y.node()) == 0) state->unused_exits().push_back(y);
      if (state->pending_exits_count() == 0) {
        loop_exits.insert(loop_exits.end(), state->unused_exits().begin(), state->unused_exits().end());
      }
    }
  }
  return loop_exits;
}

Output ControlFlowState::ZerosLikeForExit(const Output& val) {
  WhileContext* forward = ContextOf(val.op())->GetWhileContext();
  WhileContext* outer_forward = forward->outer() == nullptr ? nullptr : forward->outer()->GetWhileContext();
  GradLoopState* outer = outer_forward == nullptr ? nullptr : Find(outer_forward);
  const bool known = val.shape().IsFullyDefined();
  if (outer == nullptr) return known ? ZerosConst(val.shape(), val.dtype(), "zeros") : ops::ZerosLike(val);
  if (known) {
    ContextScope in(graph_, outer->grad_context());
    return ZerosConst(val.shape(), val.dtype(), "zeros");
  }
  Output shape;
  {
    ContextScope in(graph_, forward->outer());
    shape = ops::Shape(val);
  }
  Output history = outer->AddForwardAccumulator(shape);
  ContextScope in(graph_, outer->grad_context());
  return ZerosOfShape(graph_, outer->AddBackpropAccumulatedValue(history, shape), val.dtype());
}

Output ControlFlowState::ZerosLike(const Operation& op, int index) {
  if (IsLoopSwitch(op)) return Output();
  ControlFlowContext* op_context = ContextOf(op);
  GradLoopState* state = op_context == nullptr ? nullptr : Find(op_context->GetWhileContext());
  if (state == nullptr) return Output();
  CondContext* cond = IsSwitch(op) ? op_context->AsCond() : nullptr;
  const Output val = op.output(index);
  if (val.shape().IsFullyDefined()) {
    Output result = ZerosConst(val.shape(), val.dtype(), "Const");
    if (cond != nullptr) {
      // Alive only when the branch the Switch's other side feeds is not taken.
      const Output pred = state->GetRealValue(cond->pred());
      SwitchOutputs sw = ops::Switch(result, pred);
      result = cond->branch() == 1 ? sw.output_false : sw.output_true;
    }
    return result;
  }
  // Unknown shape: keep the forward value's shape for every iteration.
  Output zeros_shape;
  if (cond != nullptr) {
    Output dead;
    {
      ContextScope in(graph_, cond->outer());
      SwitchOutputs sw = ops::Switch(op.input(0), cond->pred());
      dead = cond->branch() == 1 ? sw.output_false : sw.output_true;
      zeros_shape = ops::Shape(dead);
    }
    SetContext(dead.op(), cond);
    SetContext(zeros_shape.op(), cond);
  } else {
    ContextScope in(graph_, op_context);
    zeros_shape = ops::Shape(val);
  }
  Output history;
  {
    ContextScope out(graph_, gradients_context_);
    history = state->AddForwardAccumulator(zeros_shape, /*dead_branch=*/cond != nullptr);
  }
  Output shape = state->AddBackpropAccumulatedValue(history, zeros_shape, /*dead_branch=*/cond != nullptr);
  return ZerosOfShape(graph_, shape, val.dtype());
}

void ControlFlowState::PostProcessing() {
  for (const auto& [loop, state] : map_) {
    for (const auto& [loop_switch, b_merge] : state->switch_map()) {
      Operation merge = b_merge.op();
      if (!(merge.input(0) == merge.input(1))) continue;
      // The loop variable's next value does not depend on it: no gradient flows back.
      const Output enter_grad = merge.input(0);
      Output next;
      if (enter_grad.shape().IsFullyDefined()) {
        ContextScope in(graph_, state->grad_context());
        next = ops::NextIteration(ZerosConst(enter_grad.shape(), enter_grad.dtype(), "Const"));
      } else {
        Output zeros;
        {
          ContextScope out(graph_, state->grad_context()->outer());
          zeros = ZerosOfShape(graph_, ops::Shape(enter_grad.op().input(0)), enter_grad.dtype());
        }
        ContextScope in(graph_, state->grad_context());
        next = ops::NextIteration(zeros);
      }
      graph_.UpdateInput(merge, 1, next);
    }
  }
}

}  // namespace flowtrain::ops::control_flow_internal
