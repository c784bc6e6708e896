#include "flowtrain/train/gradient_descent.h"

#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/resource_variable_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

GradientDescentOptimizer::GradientDescentOptimizer(HyperParameter learning_rate, bool use_locking,
                                                   std::string name)
    : Optimizer(use_locking, std::move(name)), learning_rate_(std::move(learning_rate)) {}

void GradientDescentOptimizer::Prepare() {
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate");
}

Operation GradientDescentOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  const Output lr = CastTo(learning_rate_t_, var.dtype());
  if (var.is_resource()) return ops::ResourceApplyGradientDescent(var.ref(), lr, grad, use_locking());
  return ops::ApplyGradientDescent(var.ref(), lr, grad, use_locking()).op();
}

// TF's GradientDescent scatters into the rows as they come, a repeated row once per
// occurrence (no deduplication).
Operation GradientDescentOptimizer::ApplySparseDuplicateIndices(const ops::IndexedSlices& grad,
                                                                const Variable& var) {
  const Output lr = CastTo(learning_rate_t_, var.dtype());
  if (var.is_resource()) return ops::ResourceScatterAdd(var.ref(), grad.indices, ops::Neg(grad.values) * lr);
  return ops::ScatterSub(var.ref(), grad.indices, grad.values * lr, use_locking()).op();
}

}  // namespace flowtrain::train
