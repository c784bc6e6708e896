// The bookkeeping behind ops::Cond and ops::WhileLoop (TF's CondContext and WhileContext):
// which cond branch or loop body built each node, and how a value built outside a context
// is brought in (a Switch on the branch's predicate, an is_constant Enter into the loop's
// frame). Gradient functions read it to build the backward control flow.
//
//   CondContext* ctx = NewCondContext(graph, pred_id, switch_t, /*branch=*/1);
//   {
//     ContextScope enter(graph, ctx);        // nodes built here are added to ctx
//     Output y = ops::Square(x);             // x arrives through "<Square>/Switch":1
//   }
//   ContextOf(y.op()) == ctx;
//
// Contexts belong to their graph (they live as long as it does). Graph building is not
// thread safe across threads building the same graph's control flow at once, as in TF.
#ifndef FLOWTRAIN_OPS_INTERNAL_CONTROL_FLOW_CONTEXT_H_
#define FLOWTRAIN_OPS_INTERNAL_CONTROL_FLOW_CONTEXT_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/proto/control_flow.pb.h"

namespace flowtrain::ops::control_flow_internal {

class CondContext;
class GradLoopState;
class WhileContext;

// What a cond branch and a loop body have in common (TF's ControlFlowContext).
class ControlFlowContext {
 public:
  virtual ~ControlFlowContext() = default;
  ControlFlowContext* outer() const { return outer_; }
  virtual CondContext* AsCond() { return nullptr; }
  virtual WhileContext* AsWhile() { return nullptr; }
  // The innermost loop enclosing this context (itself if a loop), else nullptr.
  WhileContext* GetWhileContext();

  // Returns the tensor to use inside this context for `val`, adding what brings it in.
  virtual Output AddValue(const Output& val) = 0;
  // Rewires a node just built inside this context to take its inputs through AddValue.
  virtual void AddOp(Operation op) = 0;
  // The node that gates this context's input-less nodes (empty when there is none).
  virtual Output ControlPivot() const = 0;
  // Makes `result` (built inside) known to the enclosing context.
  void ExitResult(const std::vector<Output>& result);
  // TF's context name ("cond/cond_text", "while/while_context").
  const std::string& name() const { return name_; }
  // This context as TF's MetaGraphDef collections hold it (nested contexts included).
  virtual void ToProto(tensorflow::ControlFlowContextDef* def) const = 0;
  // Marks a tensor as known inside, so that ops built here use it as is (TF's AddName).
  void AddName(const std::string& name) { values_.insert(name); }

 protected:
  friend ControlFlowContext* ImportControlFlowContext(Graph&, ControlFlowContext*,
                                                      const tensorflow::ControlFlowContextDef&);
  // Registers itself as nested in `outer`.
  ControlFlowContext(Graph& graph, ControlFlowContext* outer, std::string name);
  void ToValuesDef(tensorflow::ValuesDef* def) const;
  // Marks `op`'s outputs as seen by this context and every enclosing one.
  void MarkOutputs(const Operation& op);
  // Marks one tensor as seen by this context and every enclosing one.
  void MarkSeen(const std::string& name);

  Graph& graph_;
  ControlFlowContext* const outer_;
  const std::string name_;
  std::vector<const ControlFlowContext*> nested_;
  // Names of the tensors known inside; `external_values_` maps an outside tensor's name to
  // the tensor that stands for it inside.
  std::set<std::string> values_;
  std::map<std::string, Output> external_values_;
};

// One branch of a cond: nodes in it run only when `pred` equals `branch`.
class CondContext : public ControlFlowContext {
 public:
  CondContext(Graph& graph, ControlFlowContext* outer, std::string name, Output pred, Output pivot,
              int branch);
  CondContext* AsCond() override { return this; }
  void ToProto(tensorflow::ControlFlowContextDef* def) const override;
  Output AddValue(const Output& val) override;
  void AddOp(Operation op) override;
  Output ControlPivot() const override { return pivot_; }
  // What a branch function returned, as the branch's output: a tensor from outside passes
  // through a Switch so that it too is dead on the untaken branch.
  Output ProcessOutputTensor(const Output& val);

  const Output& pred() const { return pred_; }
  const Output& pivot() const { return pivot_; }
  int branch() const { return branch_; }

 private:
  Output pred_;
  Output pivot_;
  int branch_;
};

// A while loop's frame: its Enters, Merges, LoopCond, Switches, body and Exits.
class WhileContext : public ControlFlowContext {
 public:
  WhileContext(Graph& graph, ControlFlowContext* outer, std::string frame_name, int64_t parallel_iterations,
               bool back_prop);
  WhileContext* AsWhile() override { return this; }
  void ToProto(tensorflow::ControlFlowContextDef* def) const override;
  Output AddValue(const Output& val) override;
  void AddOp(Operation op) override;
  // The first Merge while the condition is built, then the first body Identity.
  Output ControlPivot() const override { return pivot_for_body_ ? pivot_for_body_ : pivot_for_pred_; }

  const std::string& frame_name() const { return name_; }
  int64_t parallel_iterations() const { return parallel_iterations_; }
  bool back_prop() const { return back_prop_; }
  const Output& pivot() const { return pivot_; }
  const std::vector<Output>& loop_enters() const { return loop_enters_; }
  const std::vector<Output>& loop_exits() const { return loop_exits_; }
  const Output& maximum_iterations() const { return maximum_iterations_; }
  // The gradient state of a loop built by ops::Gradients to backprop another loop (nullptr
  // for a forward loop): its AddValue then fetches forward values through that state.
  GradLoopState* grad_state() const { return grad_state_; }
  void set_grad_state(GradLoopState* state) { grad_state_ = state; }

  // Resets the known values to `values` (TF's _InitializeValues).
  void InitializeValues(const std::vector<Output>& values);
  void set_pivot_for_pred(Output pivot) { pivot_for_pred_ = std::move(pivot); }
  void set_pivot_for_body(Output pivot) { pivot_for_body_ = std::move(pivot); }
  void set_pivot(Output pivot) { pivot_ = std::move(pivot); }
  void set_loop_enters(std::vector<Output> enters) { loop_enters_ = std::move(enters); }
  void set_loop_exits(std::vector<Output> exits) { loop_exits_ = std::move(exits); }
  void AddLoopEnter(Output enter) { loop_enters_.push_back(std::move(enter)); }
  void AddLoopExit(Output exit) { loop_exits_.push_back(std::move(exit)); }
  void set_maximum_iterations(Output limit) { maximum_iterations_ = std::move(limit); }

 private:
  // AddOp without moving a gradient loop's Shape/Size/Rank to the forward loop.
  void AddOpInternal(Operation op);
  // An op whose inputs are all loop invariants would run once, not every iteration: a
  // control input on the pivot makes it run each time.
  void MaybeAddControlDependency(const Operation& op);

  int64_t parallel_iterations_;
  bool back_prop_;
  Output pivot_;  // the LoopCond
  Output pivot_for_pred_;
  Output pivot_for_body_;
  std::vector<Output> loop_enters_;
  std::vector<Output> loop_exits_;
  Output maximum_iterations_;
  GradLoopState* grad_state_ = nullptr;
};

// What the "cond_context" and "while_context" collections hold.
using ControlFlowContextPtr = const ControlFlowContext*;

// A new context owned by `graph`, nested in the current one; one outside any context joins
// the graph's collection "cond_context" or "while_context" (items: ControlFlowContext*),
// which MetaGraph export writes as TF does. A cond branch is named "<scope>cond_text".
CondContext* NewCondContext(Graph& graph, Output pred, Output pivot, int branch);
// A gradient loop's context (`add_to_collection` false) stays out of "while_context", as TF's.
WhileContext* NewWhileContext(Graph& graph, std::string frame_name, int64_t parallel_iterations,
                              bool back_prop, bool add_to_collection = true);

// Rebuilds a context that TF's MetaGraphDef collections "cond_context" / "while_context"
// describe (TF's from_proto), nested contexts included, so that ops::Gradients can
// differentiate through an imported graph's conds and loops: the nodes its values name are
// marked as built in it and a top-level one (`outer` nullptr) joins its collection. Throws
// InvalidArgument when the def names a tensor the graph lacks.
ControlFlowContext* ImportControlFlowContext(Graph& graph, ControlFlowContext* outer,
                                             const tensorflow::ControlFlowContextDef& def);

// The context nodes are being built in (nullptr outside any cond or loop).
ControlFlowContext* CurrentContext(Graph& graph);
// The context `op` was built in (nullptr if none).
ControlFlowContext* ContextOf(const Operation& op);
void SetContext(const Operation& op, ControlFlowContext* context);
// The context `op`'s outputs are seen in: an Exit's is its loop's enclosing context.
ControlFlowContext* OutputContext(const Operation& op);
// True if `op` was built in `context` or in a context nested inside it.
bool InContext(const Operation& op, const ControlFlowContext* context);
// The serialized CondContextDef or WhileContextDef of a collection item.
std::string ContextDefBytes(const ControlFlowContext& context);

// True for an is_constant Enter (a loop invariant).
bool IsLoopConstantEnter(const Operation& op);
// The loop-invariant Enter `value` comes from through Identity and Switch ops, else an empty
// Operation.
Operation LoopConstantEnterOf(const Output& value);
bool IsLoopExit(const Operation& op);
// A Switch of a while loop (not of a cond).
bool IsLoopSwitch(const Operation& op);

// Makes `context` current until destroyed (nullptr: outside any context). Every node built
// meanwhile is passed to the context's AddOp, unless `add_ops` is false (a context's own
// helper nodes, which it wires itself).
class ContextScope {
 public:
  ContextScope(Graph& graph, ControlFlowContext* context, bool add_ops = true);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  Graph& graph_;
  ControlFlowContext* previous_;
  ScopeGuard hook_;
};

}  // namespace flowtrain::ops::control_flow_internal

#endif  // FLOWTRAIN_OPS_INTERNAL_CONTROL_FLOW_CONTEXT_H_
