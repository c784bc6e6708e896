#include "flowtrain/train/adagrad.h"

#include "flowtrain/core/error.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

AdagradOptimizer::AdagradOptimizer(HyperParameter learning_rate, const AdagradOptions& options)
    : Optimizer(options.use_locking, options.name),
      learning_rate_(std::move(learning_rate)),
      initial_accumulator_value_(options.initial_accumulator_value) {
  if (initial_accumulator_value_ <= 0.0) {
    InvalidArgument("initial_accumulator_value must be positive: ", initial_accumulator_value_);
  }
}

void AdagradOptimizer::CreateSlots(const std::vector<Variable>& var_list) {
  for (const Variable& v : var_list) {
    GetOrMakeSlot(v, ops::ConstantInitializer(initial_accumulator_value_), "accumulator", name());
  }
}

void AdagradOptimizer::Prepare() { learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate"); }

Operation AdagradOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  Variable accum = GetSlotOrDie(var, "accumulator");
  const Output lr = CastTo(learning_rate_t_, var.dtype());
  if (var.is_resource()) return ops::ResourceApplyAdagrad(var.ref(), accum.ref(), lr, grad, use_locking());
  return ops::ApplyAdagrad(var.ref(), accum.ref(), lr, grad, use_locking()).op();
}

Operation AdagradOptimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  Variable accum = GetSlotOrDie(var, "accumulator");
  const Output lr = CastTo(learning_rate_t_, var.dtype());
  if (var.is_resource()) {
    return ops::ResourceSparseApplyAdagrad(var.ref(), accum.ref(), lr, grad.values, grad.indices,
                                           use_locking());
  }
  return ops::SparseApplyAdagrad(var.ref(), accum.ref(), lr, grad.values, grad.indices, use_locking()).op();
}

}  // namespace flowtrain::train
