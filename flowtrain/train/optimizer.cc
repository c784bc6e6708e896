#include "flowtrain/train/optimizer.h"

#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/train/slot_creator.h"

namespace flowtrain::train {
namespace {

std::string VarNames(const std::vector<GradAndVar>& grads_and_vars) {
  std::vector<std::string> names;
  for (const auto& [grad, var] : grads_and_vars) names.push_back(var.op().name());
  return StrJoin(names, ", ");
}

}  // namespace

Optimizer::Optimizer(bool use_locking, std::string name) : use_locking_(use_locking), name_(std::move(name)) {
  if (name_.empty()) InvalidArgument("Must specify the optimizer name");
}

std::vector<GradAndVar> Optimizer::ComputeGradients(const Output& loss, std::vector<Variable> var_list) {
  if (!loss) InvalidArgument(name_, ": the loss is empty");
  if (!IsFloatingType(loss.dtype())) {
    InvalidArgument("Invalid type ", DataTypeString(loss.dtype()),
                    " for loss, expected: [float16, float32, float64].");
  }
  Graph& graph = *loss.graph();
  if (var_list.empty()) var_list = ops::TrainableVariables(&graph);
  if (var_list.empty()) InvalidArgument("No variables to optimize.");
  std::vector<Output> refs;
  for (const Variable& v : var_list) {
    if (v.graph() != &graph) {
      InvalidArgument("Variable ", v.name(), " is not an element of the loss's graph.");
    }
    refs.push_back(v.ref());
  }
  // TF's default gate_gradients=GATE_OP.
  std::vector<ops::GradientValue> grads =
      ops::GradientsWithIndexedSlices({loss}, refs, {}, "gradients", /*gate_gradients=*/true);
  std::vector<GradAndVar> out;
  for (size_t i = 0; i < var_list.size(); ++i) out.emplace_back(grads[i], var_list[i]);
  return out;
}

Operation Optimizer::ApplyGradients(const std::vector<GradAndVar>& grads_and_vars,
                                    std::optional<Variable> global_step, std::string_view name) {
  if (grads_and_vars.empty()) InvalidArgument("No variables provided.");
  std::vector<Variable> var_list;
  for (const auto& [grad, var] : grads_and_vars) {
    if (!var) InvalidArgument(name_, ": a (grad, var) pair has an empty variable");
    if (grad && grad.dtype() != var.dtype()) {
      InvalidArgument(name_, ": gradient for ", var.op().name(), " has type ", DataTypeString(grad.dtype()),
                      ", the variable ", DataTypeString(var.dtype()));
    }
    if (grad) var_list.push_back(var);
  }
  if (var_list.empty()) {
    InvalidArgument("No gradients provided for any variable: (", VarNames(grads_and_vars), ").");
  }
  Graph& graph = *var_list.front().graph();
  auto as_default = graph.AsDefault();
  {
    // Slots are state, created outside any control-dependency context (TF's init_scope).
    auto no_controls = graph.ClearControlDependencies();
    CreateSlots(var_list);
  }
  OpNameScope scope(graph, name.empty() ? std::string_view(name_) : name);
  Prepare();
  std::vector<Operation> update_ops;
  for (const auto& [grad, var] : grads_and_vars) {
    if (!grad) continue;
    auto update_scope = graph.NameScope(StrCat("update_", var.op().name()));
    auto colocate = graph.ColocateWith(var.op());
    update_ops.push_back(grad.is_sparse() ? ApplySparseDuplicateIndices(grad.slices(), var)
                                          : ApplyDense(grad.dense(), var));
  }
  Operation apply_updates;
  if (!global_step.has_value()) {
    apply_updates = Finish(update_ops, StrCat(scope.op_name(), "/"));
  } else {
    Operation finish = Finish(update_ops, "update");
    auto deps = graph.ControlDependencies({finish});
    auto colocate = graph.ColocateWith(global_step->op());
    Output one = DispatchNumericType(global_step->dtype(), "global step", [&]<typename T>() {
      return ops::Const(Tensor::Scalar<T>(T(1)), "value");
    });
    scope.Exit();
    apply_updates = NodeBuilder("AssignAdd", scope.op_name())
                        .ExactName()
                        .Input(global_step->ref())
                        .Input(one)
                        .Attr("use_locking", false)
                        .Finalize();
  }
  std::vector<Operation> train_ops = graph.GetCollection<Operation>(GraphKeys::kTrainOp);
  if (std::find(train_ops.begin(), train_ops.end(), apply_updates) == train_ops.end()) {
    graph.AddToCollection(GraphKeys::kTrainOp, apply_updates);
  }
  return apply_updates;
}

Operation Optimizer::Minimize(const Output& loss, std::optional<Variable> global_step,
                              std::vector<Variable> var_list, std::string_view name) {
  std::vector<GradAndVar> grads_and_vars = ComputeGradients(loss, std::move(var_list));
  const bool any = std::any_of(grads_and_vars.begin(), grads_and_vars.end(),
                               [](const GradAndVar& gv) { return static_cast<bool>(gv.first); });
  if (!any) {
    InvalidArgument(
        "No gradients provided for any variable, check your graph for ops that do "
        "not support gradients, between variables [",
        VarNames(grads_and_vars), "] and loss ", loss.name(), ".");
  }
  return ApplyGradients(grads_and_vars, std::move(global_step), name);
}

Operation Optimizer::ApplySparseDuplicateIndices(const ops::IndexedSlices& grad, const Variable& var) {
  return ApplySparse(ops::DeduplicateIndexedSlices(grad), var);
}

Operation Optimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  return ApplyDense(ops::IndexedSlicesToDense(grad), var);
}

Operation Optimizer::Finish(const std::vector<Operation>& update_ops, std::string_view name_scope) {
  return ops::Group(update_ops, name_scope);
}

std::optional<Variable> Optimizer::GetSlot(const Variable& var, std::string_view slot_name) const {
  auto named = slots_.find(slot_name);
  if (named == slots_.end()) return std::nullopt;
  auto it = named->second.find(var.op().node());
  if (it == named->second.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Optimizer::GetSlotNames() const {
  std::vector<std::string> names;
  for (const auto& [name, unused] : slots_) names.push_back(name);
  return names;
}

Variable Optimizer::GetSlotOrDie(const Variable& var, std::string_view slot_name) const {
  std::optional<Variable> slot = GetSlot(var, slot_name);
  if (!slot) Internal(name_, ": no slot '", slot_name, "' for ", var.op().name());
  return *slot;
}

Output Optimizer::HyperParameterTensor(const HyperParameter& value, std::string_view name) const {
  if (const Output* tensor = std::get_if<Output>(&value)) {
    if (!*tensor) InvalidArgument(name_, ": hyper-parameter '", name, "' is an empty tensor");
    return *tensor;
  }
  return ops::Const(static_cast<float>(std::get<double>(value)), name);
}

Output Optimizer::CastTo(const Output& t, DataType dtype) {
  return t.dtype() == dtype ? t : ops::Cast(t, dtype);
}

Variable Optimizer::GetOrMakeSlot(const Variable& var, const ops::Initializer& initializer,
                                  std::string_view slot_name, std::string_view op_name) {
  if (std::optional<Variable> existing = GetSlot(var, slot_name)) return *existing;
  // TF opens variable scope "<var>/<op_name>", made unique: Adam, then Adam_1 for the next slot
  // built with the same op name.
  const TensorShape shape = var.shape().IsFullyDefined() ? var.shape().AsTensorShape() : TensorShape();
  const DataType dtype = var.dtype();
  Variable slot = CreateSlot(
      var, [&] { return initializer(shape, dtype); }, op_name);
  slots_[std::string(slot_name)].emplace(var.op().node(), slot);
  created_.push_back(slot);
  return slot;
}

Variable Optimizer::ZerosSlot(const Variable& var, std::string_view slot_name, std::string_view op_name) {
  return GetOrMakeSlot(var, ops::ZerosInitializer(), slot_name, op_name);
}

std::optional<Variable> Optimizer::GetNonSlotVariable(std::string_view name, Graph* graph) const {
  auto it = non_slots_.find({graph, std::string(name)});
  if (it == non_slots_.end()) return std::nullopt;
  return it->second;
}

Variable Optimizer::CreateNonSlotVariable(double initial_value, std::string_view name,
                                          const Variable& colocate_with) {
  Graph* graph = colocate_with.graph();
  if (std::optional<Variable> existing = GetNonSlotVariable(name, graph)) return *existing;
  auto as_default = graph->AsDefault();
  auto colocate = graph->ColocateWith(colocate_with.op());
  Variable v(Tensor::Scalar<float>(static_cast<float>(initial_value)),
             VariableOptions{
                 .name = std::string(name), .trainable = false, .use_resource = colocate_with.is_resource()});
  non_slots_.emplace(std::make_pair(graph, std::string(name)), v);
  created_.push_back(v);
  return v;
}

}  // namespace flowtrain::train
