#include "flowtrain/train/gradient_descent.h"

#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

GradientDescentOptimizer::GradientDescentOptimizer(HyperParameter learning_rate, bool use_locking,
                                                   std::string name)
    : Optimizer(use_locking, std::move(name)), learning_rate_(std::move(learning_rate)) {}

void GradientDescentOptimizer::Prepare() {
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate");
}

Operation GradientDescentOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  return ops::ApplyGradientDescent(var.ref(), CastTo(learning_rate_t_, var.dtype()), grad, use_locking())
      .op();
}

}  // namespace flowtrain::train
