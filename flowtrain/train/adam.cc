#include "flowtrain/train/adam.h"

#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/ops/resource_variable_ops.h"
#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

AdamOptimizer::AdamOptimizer(HyperParameter learning_rate, const AdamOptions& options)
    : Optimizer(options.use_locking, options.name),
      learning_rate_(std::move(learning_rate)),
      options_(options) {}

std::optional<std::pair<Variable, Variable>> AdamOptimizer::GetBetaAccumulators(Graph* graph) const {
  std::optional<Variable> b1 = GetNonSlotVariable("beta1_power", graph);
  std::optional<Variable> b2 = GetNonSlotVariable("beta2_power", graph);
  if (!b1 || !b2) return std::nullopt;
  return std::make_pair(*b1, *b2);
}

void AdamOptimizer::CreateSlots(const std::vector<Variable>& var_list) {
  // The accumulators live with the first variable by name, as in TF (stable placement).
  const Variable& first =
      *std::min_element(var_list.begin(), var_list.end(),
                        [](const Variable& a, const Variable& b) { return a.name() < b.name(); });
  graph_ = first.graph();
  CreateNonSlotVariable(options_.beta1, "beta1_power", first);
  CreateNonSlotVariable(options_.beta2, "beta2_power", first);
  for (const Variable& v : var_list) {
    ZerosSlot(v, "m", name());
    ZerosSlot(v, "v", name() + "_1");
  }
}

void AdamOptimizer::Prepare() {
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate");
  beta1_t_ = HyperParameterTensor(options_.beta1, "beta1");
  beta2_t_ = HyperParameterTensor(options_.beta2, "beta2");
  epsilon_t_ = HyperParameterTensor(options_.epsilon, "epsilon");
}

Operation AdamOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  auto [beta1_power, beta2_power] = *GetBetaAccumulators(var.graph());
  Variable m = GetSlotOrDie(var, "m");
  Variable v = GetSlotOrDie(var, "v");
  const Output b1p = CastTo(beta1_power.value(), dtype);
  const Output b2p = CastTo(beta2_power.value(), dtype);
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output beta1 = CastTo(beta1_t_, dtype);
  const Output beta2 = CastTo(beta2_t_, dtype);
  const Output epsilon = CastTo(epsilon_t_, dtype);
  if (var.is_resource()) {
    return ops::ResourceApplyAdam(var.ref(), m.ref(), v.ref(), b1p, b2p, lr, beta1, beta2, epsilon, grad,
                                  use_locking(), options_.use_nesterov);
  }
  return ops::ApplyAdam(var.ref(), m.ref(), v.ref(), b1p, b2p, lr, beta1, beta2, epsilon, grad, use_locking(),
                        options_.use_nesterov)
      .op();
}

Operation AdamOptimizer::Finish(const std::vector<Operation>& update_ops, std::string_view name_scope) {
  auto [beta1_power, beta2_power] = *GetBetaAccumulators(graph_);
  Graph& graph = *graph_;
  Operation update_beta1, update_beta2;
  {
    auto deps = graph.ControlDependencies(update_ops);
    auto colocate = graph.ColocateWith(beta1_power.op());
    if (beta1_power.is_resource()) {
      // The accumulators are resource variables when the first variable is (as in TF).
      update_beta1 = ops::AssignVariableOp(beta1_power.ref(), beta1_power.value() * beta1_t_);
      update_beta2 = ops::AssignVariableOp(beta2_power.ref(), beta2_power.value() * beta2_t_);
    } else {
      update_beta1 = ops::Assign(beta1_power.ref(), beta1_power.value() * beta1_t_, true, use_locking()).op();
      update_beta2 = ops::Assign(beta2_power.ref(), beta2_power.value() * beta2_t_, true, use_locking()).op();
    }
  }
  std::vector<Operation> all = update_ops;
  all.push_back(update_beta1);
  all.push_back(update_beta2);
  return Optimizer::Finish(all, name_scope);
}

// TF1's non-lazy sparse Adam (_apply_sparse_shared): m and v decay in every row, the named
// rows get (1 - beta) times the gradient (ScatterAdd), and the whole variable moves by
// lr_t * m / (sqrt(v) + epsilon).
Operation AdamOptimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Graph& graph = *var.graph();
  auto [beta1_power, beta2_power] = *GetBetaAccumulators(var.graph());
  Variable m = GetSlotOrDie(var, "m");
  Variable v = GetSlotOrDie(var, "v");
  const Output b1p = CastTo(beta1_power.value(), dtype);
  const Output b2p = CastTo(beta2_power.value(), dtype);
  const Output lr_t = CastTo(learning_rate_t_, dtype);
  const Output beta1 = CastTo(beta1_t_, dtype);
  const Output beta2 = CastTo(beta2_t_, dtype);
  const Output epsilon = CastTo(epsilon_t_, dtype);
  auto one = [&] { return CastTo(ops::Const(1.0f), dtype); };
  const Output lr = lr_t * ops::Sqrt(one() - b2p) / (one() - b1p);
  // Decays `slot` by `beta`, then adds `scaled` into the rows; returns the slot's new value.
  auto decay_and_scatter = [&](const Variable& slot, const Output& beta, const Output& scaled) -> Output {
    if (var.is_resource()) {
      Operation decayed = ops::AssignVariableOp(slot.ref(), slot.value() * beta);
      auto deps = graph.ControlDependencies({decayed});
      Operation added = ops::ResourceScatterAdd(slot.ref(), grad.indices, scaled);
      auto after = graph.ControlDependencies({added});
      return ops::ReadVariableOp(slot.ref(), dtype);
    }
    Output decayed = ops::Assign(slot.ref(), slot.value() * beta, true, use_locking());
    auto deps = graph.ControlDependencies({decayed.op()});
    return ops::ScatterAdd(slot.ref(), grad.indices, scaled, use_locking());
  };
  const Output m_t = decay_and_scatter(m, beta1, grad.values * (one() - beta1));
  const Output v_t = decay_and_scatter(v, beta2, grad.values * grad.values * (one() - beta2));
  const Output step = lr * m_t / (ops::Sqrt(v_t) + epsilon);
  Operation var_update = var.is_resource() ? ops::AssignSubVariableOp(var.ref(), step)
                                           : ops::AssignSub(var.ref(), step, use_locking()).op();
  return ops::Group({var_update, m_t.op(), v_t.op()});
}

}  // namespace flowtrain::train
