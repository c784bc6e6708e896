#include "flowtrain/train/momentum.h"

#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

MomentumOptimizer::MomentumOptimizer(HyperParameter learning_rate, HyperParameter momentum,
                                     const MomentumOptions& options)
    : Optimizer(options.use_locking, options.name),
      learning_rate_(std::move(learning_rate)),
      momentum_(std::move(momentum)),
      use_nesterov_(options.use_nesterov) {}

void MomentumOptimizer::CreateSlots(const std::vector<Variable>& var_list) {
  for (const Variable& v : var_list) ZerosSlot(v, "momentum", name());
}

void MomentumOptimizer::Prepare() {
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate");
  momentum_t_ = HyperParameterTensor(momentum_, "momentum");
}

Operation MomentumOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  Variable accum = GetSlotOrDie(var, "momentum");
  const Output lr = CastTo(learning_rate_t_, var.dtype());
  const Output momentum = CastTo(momentum_t_, var.dtype());
  if (var.is_resource()) {
    return ops::ResourceApplyMomentum(var.ref(), accum.ref(), lr, grad, momentum, use_locking(),
                                      use_nesterov_);
  }
  return ops::ApplyMomentum(var.ref(), accum.ref(), lr, grad, momentum, use_locking(), use_nesterov_).op();
}

Operation MomentumOptimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  Variable accum = GetSlotOrDie(var, "momentum");
  const Output lr = CastTo(learning_rate_t_, var.dtype());
  const Output momentum = CastTo(momentum_t_, var.dtype());
  if (var.is_resource()) {
    return ops::ResourceSparseApplyMomentum(var.ref(), accum.ref(), lr, grad.values, grad.indices, momentum,
                                            use_locking(), use_nesterov_);
  }
  return ops::SparseApplyMomentum(var.ref(), accum.ref(), lr, grad.values, grad.indices, momentum,
                                  use_locking(), use_nesterov_)
      .op();
}

}  // namespace flowtrain::train
