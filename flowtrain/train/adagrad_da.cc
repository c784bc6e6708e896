#include "flowtrain/train/adagrad_da.h"

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

AdagradDAOptimizer::AdagradDAOptimizer(HyperParameter learning_rate, Variable global_step,
                                       const AdagradDAOptions& options)
    : Optimizer(options.use_locking, options.name),
      learning_rate_(std::move(learning_rate)),
      global_step_(std::move(global_step)),
      options_(options) {
  if (options_.initial_gradient_squared_accumulator_value <= 0.0) {
    InvalidArgument("initial_gradient_squared_accumulator_value must be positive: ",
                    options_.initial_gradient_squared_accumulator_value);
  }
  if (!global_step_) InvalidArgument(name(), ": global_step is an empty Variable");
  if (global_step_.dtype() != DT_INT64) {
    InvalidArgument(name(), ": global_step must be an int64 variable, got ",
                    DataTypeString(global_step_.dtype()));
  }
}

void AdagradDAOptimizer::CreateSlots(const std::vector<Variable>& var_list) {
  for (const Variable& v : var_list) {
    ZerosSlot(v, "gradient_accumulator", name());
    GetOrMakeSlot(v, ops::ConstantInitializer(options_.initial_gradient_squared_accumulator_value),
                  "gradient_squared_accumulator", name());
  }
}

void AdagradDAOptimizer::Prepare() {
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate");
  // The step the update is for: TF's identity(global_step) + 1, colocated with the learning rate.
  auto colocate = learning_rate_t_.graph()->ColocateWith(learning_rate_t_.op());
  global_step_on_worker_ =
      ops::Add(ops::Identity(global_step_.value()), ops::Const(Tensor::Scalar<int64_t>(1), "add/y"), "add");
}

Operation AdagradDAOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable g_acc = GetSlotOrDie(var, "gradient_accumulator");
  Variable gg_acc = GetSlotOrDie(var, "gradient_squared_accumulator");
  const Output lr = CastTo(learning_rate_t_, dtype);
  // TF casts the Python floats here, in the update's scope.
  const Output l1 = CastTo(
      ops::Const(static_cast<float>(options_.l1_regularization_strength), "l1_regularization_strength"),
      dtype);
  const Output l2 = CastTo(
      ops::Const(static_cast<float>(options_.l2_regularization_strength), "l2_regularization_strength"),
      dtype);
  const Output step = ops::Identity(global_step_on_worker_);
  if (var.is_resource()) {
    return ops::ResourceApplyAdagradDA(var.ref(), g_acc.ref(), gg_acc.ref(), grad, lr, l1, l2, step,
                                       use_locking());
  }
  return ops::ApplyAdagradDA(var.ref(), g_acc.ref(), gg_acc.ref(), grad, lr, l1, l2, step, use_locking())
      .op();
}

Operation AdagradDAOptimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable g_acc = GetSlotOrDie(var, "gradient_accumulator");
  Variable gg_acc = GetSlotOrDie(var, "gradient_squared_accumulator");
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output l1 = CastTo(
      ops::Const(static_cast<float>(options_.l1_regularization_strength), "l1_regularization_strength"),
      dtype);
  const Output l2 = CastTo(
      ops::Const(static_cast<float>(options_.l2_regularization_strength), "l2_regularization_strength"),
      dtype);
  const Output step = ops::Identity(global_step_on_worker_);
  if (var.is_resource()) {
    return ops::ResourceSparseApplyAdagradDA(var.ref(), g_acc.ref(), gg_acc.ref(), grad.values, grad.indices,
                                             lr, l1, l2, step, use_locking());
  }
  return ops::SparseApplyAdagradDA(var.ref(), g_acc.ref(), gg_acc.ref(), grad.values, grad.indices, lr, l1,
                                   l2, step, use_locking())
      .op();
}

}  // namespace flowtrain::train
