#include "flowtrain/train/proximal_gradient_descent.h"

#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

ProximalGradientDescentOptimizer::ProximalGradientDescentOptimizer(
    HyperParameter learning_rate, const ProximalGradientDescentOptions& options)
    : Optimizer(options.use_locking, options.name),
      learning_rate_(std::move(learning_rate)),
      options_(options) {}

void ProximalGradientDescentOptimizer::Prepare() {
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate");
  l1_t_ = HyperParameterTensor(options_.l1_regularization_strength, "l1_regularization_strength");
  l2_t_ = HyperParameterTensor(options_.l2_regularization_strength, "l2_regularization_strength");
}

Operation ProximalGradientDescentOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output l1 = CastTo(l1_t_, dtype);
  const Output l2 = CastTo(l2_t_, dtype);
  if (var.is_resource()) {
    return ops::ResourceApplyProximalGradientDescent(var.ref(), lr, l1, l2, grad, use_locking());
  }
  return ops::ApplyProximalGradientDescent(var.ref(), lr, l1, l2, grad, use_locking()).op();
}

Operation ProximalGradientDescentOptimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output l1 = CastTo(l1_t_, dtype);
  const Output l2 = CastTo(l2_t_, dtype);
  if (var.is_resource()) {
    return ops::ResourceSparseApplyProximalGradientDescent(var.ref(), lr, l1, l2, grad.values, grad.indices,
                                                           use_locking());
  }
  return ops::SparseApplyProximalGradientDescent(var.ref(), lr, l1, l2, grad.values, grad.indices,
                                                 use_locking())
      .op();
}

}  // namespace flowtrain::train
