#include "flowtrain/train/proximal_adagrad.h"

#include "flowtrain/core/error.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

ProximalAdagradOptimizer::ProximalAdagradOptimizer(HyperParameter learning_rate,
                                                   const ProximalAdagradOptions& options)
    : Optimizer(options.use_locking, options.name),
      learning_rate_(std::move(learning_rate)),
      options_(options) {
  if (options_.initial_accumulator_value <= 0.0) {
    InvalidArgument("initial_accumulator_value must be positive: ", options_.initial_accumulator_value);
  }
}

void ProximalAdagradOptimizer::CreateSlots(const std::vector<Variable>& var_list) {
  for (const Variable& v : var_list) {
    GetOrMakeSlot(v, ops::ConstantInitializer(options_.initial_accumulator_value), "accumulator", name());
  }
}

void ProximalAdagradOptimizer::Prepare() {
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate");
  l1_t_ = HyperParameterTensor(options_.l1_regularization_strength, "l1_regularization_strength");
  l2_t_ = HyperParameterTensor(options_.l2_regularization_strength, "l2_regularization_strength");
}

Operation ProximalAdagradOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable accum = GetSlotOrDie(var, "accumulator");
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output l1 = CastTo(l1_t_, dtype);
  const Output l2 = CastTo(l2_t_, dtype);
  if (var.is_resource()) {
    return ops::ResourceApplyProximalAdagrad(var.ref(), accum.ref(), lr, l1, l2, grad, use_locking());
  }
  return ops::ApplyProximalAdagrad(var.ref(), accum.ref(), lr, l1, l2, grad, use_locking()).op();
}

Operation ProximalAdagradOptimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable accum = GetSlotOrDie(var, "accumulator");
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output l1 = CastTo(l1_t_, dtype);
  const Output l2 = CastTo(l2_t_, dtype);
  if (var.is_resource()) {
    return ops::ResourceSparseApplyProximalAdagrad(var.ref(), accum.ref(), lr, l1, l2, grad.values,
                                                   grad.indices, use_locking());
  }
  return ops::SparseApplyProximalAdagrad(var.ref(), accum.ref(), lr, l1, l2, grad.values, grad.indices,
                                         use_locking())
      .op();
}

}  // namespace flowtrain::train
