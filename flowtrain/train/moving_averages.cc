#include "flowtrain/train/moving_averages.h"

#include <set>
#include <utility>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/resource_variable_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/train/slot_creator.h"

namespace flowtrain::train {
namespace {

const void* KeyOf(const Output& averaged) { return averaged.node(); }

void CheckFloating(DataType dtype, const std::string& what) {
  if (dtype != DT_HALF && dtype != DT_BFLOAT16 && dtype != DT_FLOAT && dtype != DT_DOUBLE) {
    InvalidArgument("The variables must be half, float, or double: ", what, " is ", DataTypeString(dtype));
  }
}

// The value `var` has when it is initialized, else its initial value (TF's
// Variable.initialized_value), so that a shadow initialized with it never reads an
// uninitialized variable.
Output InitializedValue(const Variable& var) {
  auto colocate = var.graph()->ColocateWith(var.op());
  const Output initialized =
      var.is_resource() ? ops::VarIsInitializedOp(var.ref()) : ops::IsVariableInitialized(var.ref());
  Output value = ops::Cond(
      initialized,
      [&] {
        return var.is_resource() ? ops::ReadVariableOp(var.ref(), var.dtype())
                                 : ops::Identity(var.ref(), "read");
      },
      [&] { return var.initial_value(); });
  // Both branches have the variable's shape, but a read captured into a branch loses it.
  var.graph()->SetOutputShape(value.op(), 0, var.shape());
  return value;
}

// `t`, or when it reads a variable (a ref variable's snapshot "global_step/read", a
// ReadVariableOp), a new read built here, in the caller's control dependencies, as TF has it:
// TF's snapshot aliases the variable's buffer, so its consumers see updates made before they
// run (the train op's increment of the global step), and TF converts a resource variable to a
// tensor where it is used; a flowtrain read holds the value of when it ran.
Output ReadAgain(const Output& t) {
  const Operation op = t.op();
  if (op.type() == "Identity" && op.num_inputs() == 1 && op.input(0).is_ref()) {
    return ops::Identity(op.input(0), "read");
  }
  if (op.type() == "ReadVariableOp") {
    Output read = ops::ReadVariableOp(op.input(0), t.dtype());
    t.graph()->SetOutputShape(read.op(), 0, t.shape());
    return read;
  }
  return t;
}

// 1 of `dtype`.
Output OneOf(DataType dtype) {
  const Output one = ops::Const(1.0f);
  return dtype == DT_FLOAT ? one : ops::Cast(one, dtype);
}

}  // namespace

Output AssignMovingAverage(const Variable& variable, const Output& value, const Output& decay,
                           bool zero_debias, std::string_view name) {
  if (!variable || !value.valid() || !decay.valid())
    InvalidArgument("AssignMovingAverage: an argument is empty");
  if (value.dtype() != variable.dtype()) {
    InvalidArgument("AssignMovingAverage of ", variable.op().name(), ": the value is ",
                    DataTypeString(value.dtype()), ", the variable ", DataTypeString(variable.dtype()));
  }
  Graph& graph = *variable.graph();
  auto as_default = graph.AsDefault();
  OpNameScope scope(graph, name);
  const std::string exact = scope.op_name() + "/";
  Output one_minus_decay = ops::Const(1.0f) - decay;
  if (one_minus_decay.dtype() != variable.dtype())
    one_minus_decay = ops::Cast(one_minus_decay, variable.dtype());
  if (!zero_debias) {
    const Output delta = (variable.value() - value) * one_minus_decay;
    return variable.AssignSub(delta, exact);
  }
  // The biased average and the count of updates, beside the variable (TF's _zero_debias).
  if (!variable.shape().IsFullyDefined()) {
    InvalidArgument("AssignMovingAverage with zero_debias of ", variable.op().name(),
                    " needs a fully defined shape, got ", variable.shape().DebugString());
  }
  const TensorShape shape = variable.shape().AsTensorShape();
  const DataType dtype = variable.dtype();
  Variable biased, local_step;
  {
    auto root = graph.NameScope("");
    auto no_deps = graph.ClearControlDependencies();
    auto colocate = graph.ColocateWith(variable.op());
    biased = Variable([&] { return ops::ZerosInitializer()(shape, dtype); },
                      {.name = variable.op().name() + "/biased", .trainable = false});
    local_step = Variable([&] { return ops::ZerosInitializer()(TensorShape(), dtype); },
                          {.name = variable.op().name() + "/local_step", .trainable = false});
  }
  const Output one = OneOf(dtype);
  const Output update_biased = biased.AssignSub((biased.value() - value) * one_minus_decay);
  const Output update_local_step = local_step.AssignAdd(one);
  const Output bias_factor = one - ops::Pow(one - one_minus_decay, update_local_step);
  return variable.Assign(update_biased / bias_factor, exact);
}

ExponentialMovingAverage::ExponentialMovingAverage(double decay, ExponentialMovingAverageOptions options)
    : decay_(decay), options_(std::move(options)) {
  if (options_.name.empty()) InvalidArgument("ExponentialMovingAverage needs a name");
}

Operation ExponentialMovingAverage::Apply() { return Apply(ops::TrainableVariables()); }

Output ExponentialMovingAverage::DecayTensor(Graph& graph) const {
  Output decay = ops::Const(static_cast<float>(decay_), "decay");
  if (options_.num_updates.valid()) {
    const Output n = ops::Cast(ReadAgain(options_.num_updates), DT_FLOAT, "num_updates");
    decay = ops::Minimum(decay, (ops::Const(1.0f) + n) / (ops::Const(10.0f) + n));
  }
  return decay;
}

Operation ExponentialMovingAverage::Update(
    Graph& graph, const std::vector<std::pair<Variable, std::function<Output()>>>& shadows_and_values,
    const std::vector<bool>& zero_debias) {
  auto as_default = graph.AsDefault();
  OpNameScope scope(graph, options_.name);
  const Output decay = DecayTensor(graph);
  std::vector<Operation> updates;
  for (size_t i = 0; i < shadows_and_values.size(); ++i) {
    const auto& [shadow, read_value] = shadows_and_values[i];
    const Output value = read_value();
    updates.push_back(AssignMovingAverage(shadow, value, decay, zero_debias[i]).op());
  }
  return ops::Group(updates, scope.op_name() + "/");
}

Operation ExponentialMovingAverage::Apply(const std::vector<Variable>& var_list) {
  Graph& graph = var_list.empty() ? GetDefaultGraph() : *var_list.front().graph();
  std::vector<std::pair<Variable, std::function<Output()>>> shadows_and_values;
  for (const Variable& var : var_list) {
    CheckFloating(var.dtype(), var.name());
    auto it = averages_.find(KeyOf(var.ref()));
    if (it == averages_.end()) {
      auto as_default = graph.AsDefault();
      auto no_deps = graph.ClearControlDependencies();
      const Output initial = InitializedValue(var);
      it = averages_.emplace(KeyOf(var.ref()), CreateSlotFromValue(var, initial, options_.name)).first;
      graph.AddToCollection(GraphKeys::kMovingAverageVariables, var);
    }
    // Read after the caller's control dependencies (the train op), as TF's aliasing reads.
    shadows_and_values.emplace_back(
        it->second, [var] { return var.is_resource() ? var.value() : ops::Identity(var.ref(), "read"); });
  }
  return Update(graph, shadows_and_values, std::vector<bool>(var_list.size(), false));
}

Operation ExponentialMovingAverage::ApplyToTensors(const std::vector<Output>& tensors) {
  Graph& graph = tensors.empty() ? GetDefaultGraph() : *tensors.front().graph();
  std::vector<std::pair<Variable, std::function<Output()>>> shadows_and_values;
  for (const Output& t : tensors) {
    if (!t.valid())
      InvalidArgument("ExponentialMovingAverage '", options_.name, "': a tensor to average is empty");
    CheckFloating(t.dtype(), t.name());
    auto it = averages_.find(KeyOf(t));
    if (it == averages_.end()) it = averages_.emplace(KeyOf(t), CreateZerosSlot(t, options_.name)).first;
    shadows_and_values.emplace_back(it->second, [t] { return t; });
  }
  return Update(graph, shadows_and_values, std::vector<bool>(tensors.size(), options_.zero_debias));
}

std::optional<Variable> ExponentialMovingAverage::Average(const Variable& var) const {
  auto it = averages_.find(KeyOf(var.ref()));
  if (it == averages_.end()) return std::nullopt;
  return it->second;
}

std::optional<Variable> ExponentialMovingAverage::Average(const Output& tensor) const {
  auto it = averages_.find(KeyOf(tensor));
  if (it == averages_.end()) return std::nullopt;
  return it->second;
}

std::string ExponentialMovingAverage::AverageName(const Variable& var) const {
  if (std::optional<Variable> shadow = Average(var)) return shadow->op().name();
  // The name Apply would give it now (TF's unique_name without marking it used).
  const std::string base = StrCat(var.op().name(), "/", options_.name);
  std::string name = base;
  for (int i = 1; var.graph()->FindNode(name) != nullptr; ++i) name = StrCat(base, "_", i);
  return name;
}

std::map<std::string, Variable> ExponentialMovingAverage::VariablesToRestore(
    std::optional<std::vector<Variable>> moving_avg_variables) const {
  Graph& graph = GetDefaultGraph();
  std::vector<Variable> averaged;
  if (moving_avg_variables) {
    averaged = *moving_avg_variables;
  } else {
    averaged = ops::TrainableVariables(&graph);
    for (const Variable& v : graph.GetCollection<Variable>(GraphKeys::kMovingAverageVariables))
      averaged.push_back(v);
  }
  std::map<std::string, Variable> name_map;
  std::set<std::string> averaged_names;
  for (const Variable& v : averaged) {
    name_map[AverageName(v)] = v;
    averaged_names.insert(v.op().name());
  }
  for (const Variable& v : ops::GlobalVariables(&graph)) {
    const std::string name = v.op().name();
    if (averaged_names.count(name) == 0 && name_map.count(name) == 0) name_map[name] = v;
  }
  return name_map;
}

}  // namespace flowtrain::train
