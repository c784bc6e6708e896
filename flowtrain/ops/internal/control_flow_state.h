// How ops::Gradients differentiates through while loops, as TF 1.x's control_flow_state.py:
// one GradLoopState per forward loop on the path from xs to ys builds a gradient loop that
// runs the forward loop's iteration count backwards (a forward counter "f_count" and a
// backward counter "b_count"); forward values the gradient loop needs are pushed onto a
// stack ("f_acc", StackV2 + StackPushV2) in the forward loop and popped (StackPopV2) in the
// gradient loop, in reverse order.
//
//   ControlFlowState state(graph);                 // one per Gradients() call
//   state.AddWhileContext(exit_op, between, list); // for each loop Exit between xs and ys
//   GradLoopState* s = state.GetGradState(op, /*before=*/false);
//   { ContextScope in(graph, s->grad_context()); ... op's gradient function ... }
//
// The states live as long as their graph (a gradient loop's context refers to its state).
// Not thread safe, like the rest of graph building.
#ifndef FLOWTRAIN_OPS_INTERNAL_CONTROL_FLOW_STATE_H_
#define FLOWTRAIN_OPS_INTERNAL_CONTROL_FLOW_STATE_H_

#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/internal/control_flow_context.h"

namespace flowtrain::ops::control_flow_internal {

// The forward loop, its gradient loop, and what connects them (TF's _GradLoopState).
class GradLoopState {
 public:
  // Adds the forward counter to `forward` and builds the gradient loop's context with its
  // backward counter, nested in `outer`'s gradient loop when `forward` is nested in a loop.
  // `gradients_context` is the context ops::Gradients was called in.
  GradLoopState(Graph& graph, WhileContext* forward, GradLoopState* outer,
                ControlFlowContext* gradients_context);
  GradLoopState(const GradLoopState&) = delete;
  GradLoopState& operator=(const GradLoopState&) = delete;

  GradLoopState* outer_grad_state() const { return outer_; }
  WhileContext* forward_context() const { return forward_; }
  WhileContext* grad_context() const { return grad_; }
  // The forward counter's NextIteration and the backward counter's.
  const Output& forward_index() const { return forward_index_; }
  const Output& grad_index() const { return grad_index_; }
  // Where forward histories are built: the context ops::Gradients was called in (what TF
  // returns to when it leaves a gradient loop to add to a forward one).
  ControlFlowContext* gradients_context() const { return gradients_context_; }

  // A stack in the current context (the one gradients() was called in) holding `value` for
  // every forward iteration. `dead_branch`: `value` is the untaken side of a cond's Switch.
  Output AddForwardAccumulator(const Output& value, bool dead_branch = false);
  // In the gradient loop: the value `history` holds for the current iteration (a pop,
  // guarded by the cond predicate when `value` was built in a cond).
  Output AddBackpropAccumulatedValue(const Output& history, const Output& value, bool dead_branch = false);
  // What the gradient loop uses for the forward tensor `value` (an accumulated history, a
  // copy of a constant, or the loop invariant's outside value); built once per tensor.
  Output GetRealValue(const Output& value);

  // Forward cond predicates (and other tensors) already brought into the gradient loop.
  std::map<std::string, Output>& history_map() { return history_map_; }
  // Each forward loop Switch's gradient Merge ("b_switch"), whose back edge closes on the
  // Switch's second visit; empty until the first.
  Output SwitchGrad(const Node* loop_switch) const;
  void SetSwitchGrad(const Node* loop_switch, Output merge);
  const std::vector<std::pair<const Node*, Output>>& switch_map() const { return switch_map_; }
  const std::vector<Output>& forward_loop_exits() const { return forward_loop_exits_; }
  std::vector<Output>& unused_exits() { return unused_exits_; }
  std::vector<Output>& deferred_exits() { return deferred_exits_; }
  int& pending_exits_count() { return pending_exits_count_; }

 private:
  // The gradient loop's counter from `count` down to 0 (TF's AddBackpropLoopCounter); sets
  // the loop's pivots and returns the counter's NextIteration.
  Output AddBackpropLoopCounter(const Output& count);
  // Control triggers ordering the pushes ("f_sync") and pops ("b_sync") by iteration.
  Operation ForwardSync();
  Operation GradSync();

  Graph& graph_;
  GradLoopState* const outer_;
  WhileContext* const forward_;
  ControlFlowContext* const gradients_context_;
  WhileContext* grad_ = nullptr;
  Output forward_index_;
  Output grad_index_;
  Operation forward_sync_;
  Operation grad_sync_;
  std::map<std::string, Output> history_map_;
  std::vector<std::pair<const Node*, Output>> switch_map_;  // in creation order, as TF's dict
  const std::vector<Output> forward_loop_exits_;
  std::vector<Output> unused_exits_;
  std::vector<Output> deferred_exits_;
  int pending_exits_count_;
};

// The gradient states of one Gradients() call, one per forward loop (TF's ControlFlowState).
class ControlFlowState {
 public:
  // For a Gradients() call building in `graph`'s current context.
  explicit ControlFlowState(Graph& graph) : graph_(graph), gradients_context_(CurrentContext(graph)) {}

  // For a loop Exit among the ops between xs and ys: creates its loop's state (once) and
  // adds all the loop's Exits to `between` (and to `between_list`, its walk order).
  void AddWhileContext(const Operation& exit, std::unordered_set<const Node*>& between,
                       std::vector<const Node*>& between_list);
  bool empty() const { return map_.empty(); }
  // The state whose gradient loop `op`'s gradient is built in; `before`: for aggregating
  // its output gradients (an Exit's happens outside its loop). nullptr outside loops.
  GradLoopState* GetGradState(const Operation& op, bool before) const;
  // The Exits no op between xs and ys consumes: counts them as arrived and returns those,
  // not in `ys_ops`, whose loop has now seen all its Exits (they get zero gradients).
  std::vector<Output> ProcessUnusedLoopExits(const std::unordered_map<const Node*, int>& pending,
                                             const std::unordered_set<const Node*>& ys_ops);
  // A zero gradient for an Exit output nobody uses, built where the Exit's value is seen.
  Output ZerosLikeForExit(const Output& val);
  // A zero gradient for output `index` of `op` in a loop, built in the gradient loop (call it
  // there); an empty Output for a loop Switch, whose missing gradient means "none yet".
  Output ZerosLike(const Operation& op, int index);
  // After all gradients are built: a loop variable whose next value does not depend on it
  // gets a zero back edge in its gradient loop.
  void PostProcessing();

 private:
  GradLoopState* Find(const WhileContext* forward) const;

  Graph& graph_;
  ControlFlowContext* const gradients_context_;
  // In creation order, which fixes the order (and names) of what PostProcessing builds.
  std::vector<std::pair<const WhileContext*, GradLoopState*>> map_;
};

// The gradient of the loop invariant `enter` (an is_constant Enter) summed over the
// iterations: an accumulator loop variable ("b_acc") of the gradient loop `grad_context`,
// whose per-iteration part is `grad` (TF's AddBackpropAccumulator). Call it in that loop.
Output AddBackpropAccumulator(WhileContext* grad_context, const Operation& enter, const Output& grad);

}  // namespace flowtrain::ops::control_flow_internal

#endif  // FLOWTRAIN_OPS_INTERNAL_CONTROL_FLOW_STATE_H_
