#include "flowtrain/train/adadelta.h"

#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

AdadeltaOptimizer::AdadeltaOptimizer(HyperParameter learning_rate, const AdadeltaOptions& options)
    : Optimizer(options.use_locking, options.name),
      learning_rate_(std::move(learning_rate)),
      options_(options) {}

void AdadeltaOptimizer::CreateSlots(const std::vector<Variable>& var_list) {
  for (const Variable& v : var_list) {
    ZerosSlot(v, "accum", name());
    ZerosSlot(v, "accum_update", name());
  }
}

void AdadeltaOptimizer::Prepare() {
  // TF's names for these constants ("lr", not "learning_rate").
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "lr");
  rho_t_ = HyperParameterTensor(options_.rho, "rho");
  epsilon_t_ = HyperParameterTensor(options_.epsilon, "epsilon");
}

Operation AdadeltaOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable accum = GetSlotOrDie(var, "accum");
  Variable accum_update = GetSlotOrDie(var, "accum_update");
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output rho = CastTo(rho_t_, dtype);
  const Output epsilon = CastTo(epsilon_t_, dtype);
  if (var.is_resource()) {
    return ops::ResourceApplyAdadelta(var.ref(), accum.ref(), accum_update.ref(), lr, rho, epsilon, grad,
                                      use_locking());
  }
  return ops::ApplyAdadelta(var.ref(), accum.ref(), accum_update.ref(), lr, rho, epsilon, grad, use_locking())
      .op();
}

Operation AdadeltaOptimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable accum = GetSlotOrDie(var, "accum");
  Variable accum_update = GetSlotOrDie(var, "accum_update");
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output rho = CastTo(rho_t_, dtype);
  const Output epsilon = CastTo(epsilon_t_, dtype);
  if (var.is_resource()) {
    return ops::ResourceSparseApplyAdadelta(var.ref(), accum.ref(), accum_update.ref(), lr, rho, epsilon,
                                            grad.values, grad.indices, use_locking());
  }
  return ops::SparseApplyAdadelta(var.ref(), accum.ref(), accum_update.ref(), lr, rho, epsilon, grad.values,
                                  grad.indices, use_locking())
      .op();
}

}  // namespace flowtrain::train
