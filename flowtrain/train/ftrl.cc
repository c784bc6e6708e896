#include "flowtrain/train/ftrl.h"

#include "flowtrain/core/error.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

FtrlOptimizer::FtrlOptimizer(HyperParameter learning_rate, const FtrlOptions& options)
    : Optimizer(options.use_locking, options.name),
      learning_rate_(std::move(learning_rate)),
      options_(options) {
  if (options_.initial_accumulator_value < 0.0) {
    InvalidArgument("initial_accumulator_value ", options_.initial_accumulator_value,
                    " needs to be positive or zero");
  }
  if (options_.learning_rate_power > 0.0) {
    InvalidArgument("learning_rate_power ", options_.learning_rate_power, " needs to be negative or zero");
  }
  if (options_.l1_regularization_strength < 0.0) {
    InvalidArgument("l1_regularization_strength ", options_.l1_regularization_strength,
                    " needs to be positive or zero");
  }
  if (options_.l2_regularization_strength < 0.0) {
    InvalidArgument("l2_regularization_strength ", options_.l2_regularization_strength,
                    " needs to be positive or zero");
  }
  if (options_.l2_shrinkage_regularization_strength < 0.0) {
    InvalidArgument("l2_shrinkage_regularization_strength ", options_.l2_shrinkage_regularization_strength,
                    " needs to be positive or zero");
  }
}

void FtrlOptimizer::CreateSlots(const std::vector<Variable>& var_list) {
  const std::string& accum_name = options_.accum_name.empty() ? name() : options_.accum_name;
  const std::string& linear_name = options_.linear_name.empty() ? name() : options_.linear_name;
  for (const Variable& v : var_list) {
    GetOrMakeSlot(v, ops::ConstantInitializer(options_.initial_accumulator_value), "accum", accum_name);
    ZerosSlot(v, "linear", linear_name);
  }
}

void FtrlOptimizer::Prepare() {
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate");
  l1_t_ = HyperParameterTensor(options_.l1_regularization_strength, "l1_regularization_strength");
  l2_t_ = HyperParameterTensor(options_.l2_regularization_strength, "l2_regularization_strength");
  l2_shrinkage_t_ = HyperParameterTensor(options_.l2_shrinkage_regularization_strength,
                                         "l2_shrinkage_regularization_strength");
  learning_rate_power_t_ = HyperParameterTensor(options_.learning_rate_power, "learning_rate_power");
}

Operation FtrlOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable accum = GetSlotOrDie(var, "accum");
  Variable linear = GetSlotOrDie(var, "linear");
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output l1 = CastTo(l1_t_, dtype);
  const Output l2 = CastTo(l2_t_, dtype);
  const Output lr_power = CastTo(learning_rate_power_t_, dtype);
  if (options_.l2_shrinkage_regularization_strength <= 0.0) {
    if (var.is_resource()) {
      return ops::ResourceApplyFtrl(var.ref(), accum.ref(), linear.ref(), grad, lr, l1, l2, lr_power,
                                    use_locking());
    }
    return ops::ApplyFtrl(var.ref(), accum.ref(), linear.ref(), grad, lr, l1, l2, lr_power, use_locking())
        .op();
  }
  const Output l2_shrinkage = CastTo(l2_shrinkage_t_, dtype);
  if (var.is_resource()) {
    return ops::ResourceApplyFtrlV2(var.ref(), accum.ref(), linear.ref(), grad, lr, l1, l2, l2_shrinkage,
                                    lr_power, use_locking());
  }
  return ops::ApplyFtrlV2(var.ref(), accum.ref(), linear.ref(), grad, lr, l1, l2, l2_shrinkage, lr_power,
                          use_locking())
      .op();
}

Operation FtrlOptimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable accum = GetSlotOrDie(var, "accum");
  Variable linear = GetSlotOrDie(var, "linear");
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output l1 = CastTo(l1_t_, dtype);
  const Output l2 = CastTo(l2_t_, dtype);
  const Output lr_power = CastTo(learning_rate_power_t_, dtype);
  const Output& g = grad.values;
  const Output& i = grad.indices;
  if (options_.l2_shrinkage_regularization_strength <= 0.0) {
    if (var.is_resource()) {
      return ops::ResourceSparseApplyFtrl(var.ref(), accum.ref(), linear.ref(), g, i, lr, l1, l2, lr_power,
                                          use_locking());
    }
    return ops::SparseApplyFtrl(var.ref(), accum.ref(), linear.ref(), g, i, lr, l1, l2, lr_power,
                                use_locking())
        .op();
  }
  const Output l2_shrinkage = CastTo(l2_shrinkage_t_, dtype);
  if (var.is_resource()) {
    return ops::ResourceSparseApplyFtrlV2(var.ref(), accum.ref(), linear.ref(), g, i, lr, l1, l2,
                                          l2_shrinkage, lr_power, use_locking());
  }
  return ops::SparseApplyFtrlV2(var.ref(), accum.ref(), linear.ref(), g, i, lr, l1, l2, l2_shrinkage,
                                lr_power, use_locking())
      .op();
}

}  // namespace flowtrain::train
