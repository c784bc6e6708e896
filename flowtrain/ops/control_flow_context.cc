#include "flowtrain/ops/internal/control_flow_context.h"

#include <memory>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/internal/control_flow_state.h"

namespace flowtrain::ops::control_flow_internal {
namespace {

constexpr const char* kStateKey = "__control_flow_contexts";

// Per-graph state: the contexts, which one each node was built in, and the current one.
struct ContextState {
  absl::Mutex mu;
  std::vector<std::unique_ptr<ControlFlowContext>> contexts ABSL_GUARDED_BY(mu);
  std::unordered_map<const Node*, ControlFlowContext*> node_contexts ABSL_GUARDED_BY(mu);
  ControlFlowContext* current ABSL_GUARDED_BY(mu) = nullptr;
};

std::shared_ptr<ContextState> StateOf(Graph& graph) {
  // Makes find-or-create atomic (the collection itself is guarded by the graph).
  static absl::Mutex create_mu(absl::kConstInit);
  absl::MutexLock lock(&create_mu);
  for (const std::any& item : graph.GetCollectionItems(kStateKey)) {
    if (auto* state = std::any_cast<std::shared_ptr<ContextState>>(&item)) return *state;
  }
  auto state = std::make_shared<ContextState>();
  graph.AddToCollection(kStateKey, state);
  return state;
}

template <typename T>
T* Own(Graph& graph, std::unique_ptr<T> context) {
  auto state = StateOf(graph);
  absl::MutexLock lock(&state->mu);
  T* raw = context.get();
  state->contexts.push_back(std::move(context));
  return raw;
}

// The name scope TF builds a node's helpers in: the node's own name ("cond/mul/Switch").
ScopeGuard HelperScope(Graph& graph, const Operation& op) { return graph.NameScope(StrCat(op.name(), "/")); }

}  // namespace

ControlFlowContext::ControlFlowContext(Graph& graph, ControlFlowContext* outer, std::string name)
    : graph_(graph), outer_(outer), name_(std::move(name)) {
  if (outer_ != nullptr) outer_->nested_.push_back(this);
}

void ControlFlowContext::ToValuesDef(tensorflow::ValuesDef* def) const {
  for (const std::string& v : values_) def->add_values(v);  // sorted, as TF writes them
  for (const auto& [outside, inside] : external_values_)
    (*def->mutable_external_values())[outside] = inside.name();
}

WhileContext* ControlFlowContext::GetWhileContext() {
  for (ControlFlowContext* c = this; c != nullptr; c = c->outer()) {
    if (WhileContext* w = c->AsWhile()) return w;
  }
  return nullptr;
}

void ControlFlowContext::ExitResult(const std::vector<Output>& result) {
  if (outer_ == nullptr) return;
  for (const Output& x : result) outer_->values_.insert(x.name());
}

void ControlFlowContext::MarkOutputs(const Operation& op) {
  for (ControlFlowContext* c = this; c != nullptr; c = c->outer_) {
    for (int i = 0; i < op.num_outputs(); ++i) c->values_.insert(op.output(i).name());
  }
}

void ControlFlowContext::MarkSeen(const std::string& name) {
  for (ControlFlowContext* c = this; c != nullptr; c = c->outer_) c->values_.insert(name);
}

CondContext::CondContext(Graph& graph, ControlFlowContext* outer, std::string name, Output pred, Output pivot,
                         int branch)
    : ControlFlowContext(graph, outer, std::move(name)),
      pred_(std::move(pred)),
      pivot_(std::move(pivot)),
      branch_(branch) {
  values_.insert(pred_.name());
  external_values_[pred_.name()] = pred_;
  values_.insert(pivot_.name());
  SetContext(pivot_.op(), this);
}

void CondContext::ToProto(tensorflow::ControlFlowContextDef* def) const {
  tensorflow::CondContextDef* cond = def->mutable_cond_ctxt();
  cond->set_context_name(name_);
  cond->set_pred_name(pred_.name());
  cond->set_pivot_name(pivot_.name());
  cond->set_branch(branch_);
  ToValuesDef(cond->mutable_values_def());
  for (const ControlFlowContext* nested : nested_) nested->ToProto(cond->add_nested_contexts());
}

Output CondContext::AddValue(const Output& val) {
  if (values_.count(val.name()) != 0) {
    // A value of an enclosing cond already switched in (nested conds) stands for itself.
    auto it = external_values_.find(val.name());
    return it == external_values_.end() ? val : it->second;
  }
  values_.insert(val.name());
  Output result = val;
  if (outer_ != nullptr) {
    result = outer_->AddValue(val);
    values_.insert(result.name());
    external_values_[result.name()] = result;
  }
  {
    ContextScope helpers(graph_, this, /*add_ops=*/false);
    auto no_controls = graph_.ClearControlDependencies();
    auto colocate = graph_.ColocateWith(result.op());
    SwitchOutputs sw = ops::Switch(result, pred_);
    result = branch_ == 1 ? sw.output_true : sw.output_false;
  }
  MarkSeen(result.name());
  external_values_[val.name()] = result;
  return result;
}

Output CondContext::ProcessOutputTensor(const Output& val) {
  if (values_.count(val.name()) != 0) {
    auto it = external_values_.find(val.name());
    return it == external_values_.end() ? val : it->second;
  }
  // A branch returning a tensor built outside it (`lambda: x`).
  values_.insert(val.name());
  Output real = val;
  if (outer_ != nullptr) {
    real = outer_->AddValue(val);
    values_.insert(real.name());
    external_values_[real.name()] = real;
  }
  ContextScope helpers(graph_, this, /*add_ops=*/false);
  auto colocate = graph_.ColocateWith(real.op());
  SwitchOutputs sw = ops::Switch(real, pred_);
  real = branch_ == 1 ? sw.output_true : sw.output_false;
  external_values_[val.name()] = real;
  return real;
}

void CondContext::AddOp(Operation op) {
  if (op.num_inputs() == 0) {
    bool gated = false;
    for (const Operation& c : op.control_inputs()) gated = gated || InContext(c, this);
    if (!gated) graph_.AddControlInput(op, pivot_.op());
  } else {
    auto scope = HelperScope(graph_, op);
    for (int i = 0; i < op.num_inputs(); ++i) {
      const Output x = op.input(i);
      // A loop imported into the branch closes its own back edge.
      if ((op.type() == "Merge" || op.type() == "RefMerge") && x.op().type() == "NextIteration") continue;
      const Output real = AddValue(x);
      if (real != x) graph_.UpdateInput(op, i, real);
    }
  }
  MarkOutputs(op);
}

WhileContext::WhileContext(Graph& graph, ControlFlowContext* outer, std::string frame_name,
                           int64_t parallel_iterations, bool back_prop)
    : ControlFlowContext(graph, outer, std::move(frame_name)),
      parallel_iterations_(parallel_iterations),
      back_prop_(back_prop) {}

void WhileContext::ToProto(tensorflow::ControlFlowContextDef* def) const {
  tensorflow::WhileContextDef* loop = def->mutable_while_ctxt();
  loop->set_context_name(name_);
  loop->set_parallel_iterations(static_cast<int32_t>(parallel_iterations_));
  loop->set_back_prop(back_prop_);
  loop->set_swap_memory(false);
  loop->set_pivot_name(pivot_.name());
  loop->set_pivot_for_pred_name(pivot_for_pred_.name());
  loop->set_pivot_for_body_name(pivot_for_body_.name());
  for (const Output& e : loop_exits_) loop->add_loop_exit_names(e.name());
  for (const Output& e : loop_enters_) loop->add_loop_enter_names(e.name());
  ToValuesDef(loop->mutable_values_def());
  if (maximum_iterations_) loop->set_maximum_iterations_name(maximum_iterations_.name());
  for (const ControlFlowContext* nested : nested_) nested->ToProto(loop->add_nested_contexts());
}

void WhileContext::InitializeValues(const std::vector<Output>& values) {
  values_.clear();
  for (const Output& v : values) values_.insert(v.name());
}

Output WhileContext::AddValue(const Output& val) {
  const bool new_value = values_.count(val.name()) == 0 && ContextOf(val.op()) != this;
  if (!new_value) {
    auto it = external_values_.find(val.name());
    return it == external_values_.end() ? val : it->second;
  }
  values_.insert(val.name());
  // Built in a gradient loop, a value of the loop it backprops comes from that loop's
  // history (a stack the forward loop fills), not through an Enter.
  if (ControlFlowContext* current = CurrentContext(graph_)) {
    WhileContext* grad_context = current->GetWhileContext();
    if (grad_context != nullptr && grad_context->grad_state() != nullptr) {
      ControlFlowContext* forward = OutputContext(val.op());
      WhileContext* forward_loop = forward == nullptr ? nullptr : forward->GetWhileContext();
      if (forward_loop == grad_context->grad_state()->forward_context()) {
        Output real = grad_context->grad_state()->GetRealValue(val);
        external_values_[val.name()] = real;
        return real;
      }
    }
  }
  Output result = val;
  if (outer_ != nullptr) result = outer_->AddValue(val);
  Output enter;
  {
    ContextScope helpers(graph_, this, /*add_ops=*/false);
    auto no_controls = graph_.ClearControlDependencies();
    enter = ops::Enter(result, name_, {.is_constant = true, .parallel_iterations = parallel_iterations_});
  }
  values_.insert(enter.name());
  external_values_[val.name()] = enter;
  return enter;
}

void WhileContext::MaybeAddControlDependency(const Operation& op) {
  if (!op.control_inputs().empty() || !ControlPivot()) return;
  for (int i = 0; i < op.num_inputs(); ++i) {
    if (!IsLoopConstantEnter(op.input(i).op())) return;
  }
  graph_.AddControlInput(op, ControlPivot().op());
}

void WhileContext::AddOp(Operation op) {
  // A gradient loop's Shape/Size/Rank of a forward value runs in the forward loop instead, so
  // that the history kept is the (small) shape rather than the tensor, as in TF.
  if ((op.type() == "Shape" || op.type() == "Size" || op.type() == "Rank") && op.num_inputs() == 1) {
    ControlFlowContext* current = CurrentContext(graph_);
    WhileContext* grad = current == nullptr ? nullptr : current->GetWhileContext();
    ControlFlowContext* input_context = ContextOf(op.input(0).op());
    if (grad != nullptr && grad->grad_state() != nullptr && input_context != nullptr &&
        input_context->GetWhileContext() == grad->grad_state()->forward_context()) {
      SetContext(op, input_context);
      if (WhileContext* loop = input_context->AsWhile()) {
        loop->AddOpInternal(op);
      } else {
        input_context->AddOp(op);
      }
      return;
    }
  }
  AddOpInternal(op);
}

void WhileContext::AddOpInternal(Operation op) {
  if (op.num_inputs() == 0) {
    if (op.control_inputs().empty() && ControlPivot()) graph_.AddControlInput(op, ControlPivot().op());
  } else {
    {
      auto scope = HelperScope(graph_, op);
      for (int i = 0; i < op.num_inputs(); ++i) {
        const Output x = op.input(i);
        const Output real = AddValue(x);
        if (real != x) graph_.UpdateInput(op, i, real);
      }
    }
    MaybeAddControlDependency(op);
  }
  for (int i = 0; i < op.num_outputs(); ++i) values_.insert(op.output(i).name());
}

CondContext* NewCondContext(Graph& graph, Output pred, Output pivot, int branch) {
  std::string name = graph.UniqueName(StrCat(graph.CurrentNameScope(), "cond_text"));
  CondContext* context =
      Own(graph, std::make_unique<CondContext>(graph, CurrentContext(graph), std::move(name), std::move(pred),
                                               std::move(pivot), branch));
  if (context->outer() == nullptr)
    graph.AddToCollection(GraphKeys::kCondContext, ControlFlowContextPtr(context));
  return context;
}

WhileContext* NewWhileContext(Graph& graph, std::string frame_name, int64_t parallel_iterations,
                              bool back_prop, bool add_to_collection) {
  WhileContext* context =
      Own(graph, std::make_unique<WhileContext>(graph, CurrentContext(graph), std::move(frame_name),
                                                parallel_iterations, back_prop));
  if (add_to_collection && context->outer() == nullptr)
    graph.AddToCollection(GraphKeys::kWhileContext, ControlFlowContextPtr(context));
  return context;
}

ControlFlowContext* ImportControlFlowContext(Graph& graph, ControlFlowContext* outer,
                                             const tensorflow::ControlFlowContextDef& def) {
  const tensorflow::ValuesDef* values = nullptr;
  ControlFlowContext* context = nullptr;
  const google::protobuf::RepeatedPtrField<tensorflow::ControlFlowContextDef>* nested = nullptr;
  if (def.has_cond_ctxt()) {
    const tensorflow::CondContextDef& c = def.cond_ctxt();
    context = Own(graph, std::make_unique<CondContext>(graph, outer, c.context_name(),
                                                       graph.GetTensorByName(c.pred_name()),
                                                       graph.GetTensorByName(c.pivot_name()), c.branch()));
    values = &c.values_def();
    nested = &c.nested_contexts();
    if (outer == nullptr) graph.AddToCollection(GraphKeys::kCondContext, ControlFlowContextPtr(context));
  } else if (def.has_while_ctxt()) {
    const tensorflow::WhileContextDef& w = def.while_ctxt();
    WhileContext* loop = Own(graph, std::make_unique<WhileContext>(graph, outer, w.context_name(),
                                                                   w.parallel_iterations(), w.back_prop()));
    loop->set_pivot(graph.GetTensorByName(w.pivot_name()));
    loop->set_pivot_for_pred(graph.GetTensorByName(w.pivot_for_pred_name()));
    loop->set_pivot_for_body(graph.GetTensorByName(w.pivot_for_body_name()));
    for (const std::string& name : w.loop_enter_names()) loop->AddLoopEnter(graph.GetTensorByName(name));
    for (const std::string& name : w.loop_exit_names()) loop->AddLoopExit(graph.GetTensorByName(name));
    if (!w.maximum_iterations_name().empty())
      loop->set_maximum_iterations(graph.GetTensorByName(w.maximum_iterations_name()));
    context = loop;
    values = &w.values_def();
    nested = &w.nested_contexts();
    if (outer == nullptr) graph.AddToCollection(GraphKeys::kWhileContext, ControlFlowContextPtr(context));
  } else {
    InvalidArgument("A control flow context def is neither a cond's nor a while loop's");
  }
  context->values_.clear();
  context->values_.insert(values->values().begin(), values->values().end());
  for (const auto& [outside, inside] : values->external_values())
    context->external_values_[outside] = graph.GetTensorByName(inside);
  // The nodes of the values that are not brought in from outside were built in the context.
  for (const std::string& value : context->values_) {
    if (context->external_values_.count(value) != 0) continue;
    SetContext(graph.GetOperationByName(value.substr(0, value.rfind(':'))), context);
  }
  for (const tensorflow::ControlFlowContextDef& inner : *nested)
    ImportControlFlowContext(graph, context, inner);
  return context;
}

std::string ContextDefBytes(const ControlFlowContext& context) {
  tensorflow::ControlFlowContextDef def;
  context.ToProto(&def);
  return def.has_cond_ctxt() ? def.cond_ctxt().SerializeAsString() : def.while_ctxt().SerializeAsString();
}

ControlFlowContext* CurrentContext(Graph& graph) {
  auto state = StateOf(graph);
  absl::MutexLock lock(&state->mu);
  return state->current;
}

ControlFlowContext* ContextOf(const Operation& op) {
  auto state = StateOf(*op.graph());
  absl::MutexLock lock(&state->mu);
  auto it = state->node_contexts.find(op.node());
  return it == state->node_contexts.end() ? nullptr : it->second;
}

void SetContext(const Operation& op, ControlFlowContext* context) {
  auto state = StateOf(*op.graph());
  absl::MutexLock lock(&state->mu);
  state->node_contexts[op.node()] = context;
}

ControlFlowContext* OutputContext(const Operation& op) {
  ControlFlowContext* context = ContextOf(op);
  if (context != nullptr && IsLoopExit(op)) context = context->outer();
  return context;
}

bool InContext(const Operation& op, const ControlFlowContext* context) {
  for (ControlFlowContext* c = ContextOf(op); c != nullptr; c = c->outer()) {
    if (c == context) return true;
  }
  return false;
}

bool IsLoopConstantEnter(const Operation& op) {
  return (op.type() == "Enter" || op.type() == "RefEnter") && op.node()->GetAttr<bool>("is_constant");
}

bool IsLoopExit(const Operation& op) { return op.type() == "Exit" || op.type() == "RefExit"; }

bool IsLoopSwitch(const Operation& op) {
  // A cond's Switches built in a loop take the cond's predicate; a loop's take its LoopCond.
  return (op.type() == "Switch" || op.type() == "RefSwitch") && op.input(1).op().type() == "LoopCond";
}

Operation LoopConstantEnterOf(const Output& value) {
  Operation op = value.op();
  while (op.type() == "Switch" || op.type() == "RefSwitch" || op.type() == "Identity" ||
         op.type() == "RefIdentity") {
    op = op.input(0).op();
  }
  return IsLoopConstantEnter(op) ? op : Operation();
}

ContextScope::ContextScope(Graph& graph, ControlFlowContext* context, bool add_ops) : graph_(graph) {
  auto state = StateOf(graph);
  {
    absl::MutexLock lock(&state->mu);
    previous_ = state->current;
    state->current = context;
  }
  hook_ = graph.OnNodeAdded([context, add_ops](Operation op) {
    if (context == nullptr) return;
    SetContext(op, context);
    if (add_ops) context->AddOp(op);
  });
}

ContextScope::~ContextScope() {
  hook_.Exit();
  auto state = StateOf(graph_);
  absl::MutexLock lock(&state->mu);
  state->current = previous_;
}

}  // namespace flowtrain::ops::control_flow_internal
