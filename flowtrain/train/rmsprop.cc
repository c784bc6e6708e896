#include "flowtrain/train/rmsprop.h"

#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/training_ops.h"

namespace flowtrain::train {

RMSPropOptimizer::RMSPropOptimizer(HyperParameter learning_rate, const RMSPropOptions& options)
    : Optimizer(options.use_locking, options.name),
      learning_rate_(std::move(learning_rate)),
      options_(options) {}

void RMSPropOptimizer::CreateSlots(const std::vector<Variable>& var_list) {
  for (const Variable& v : var_list) {
    GetOrMakeSlot(v, ops::OnesInitializer(), "rms", name());
    if (options_.centered) ZerosSlot(v, "mg", name());
    ZerosSlot(v, "momentum", name());
  }
}

void RMSPropOptimizer::Prepare() {
  learning_rate_t_ = HyperParameterTensor(learning_rate_, "learning_rate");
  decay_t_ = HyperParameterTensor(options_.decay, "decay");
  momentum_t_ = HyperParameterTensor(options_.momentum, "momentum");
  epsilon_t_ = HyperParameterTensor(options_.epsilon, "epsilon");
}

Operation RMSPropOptimizer::ApplyDense(const Output& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable rms = GetSlotOrDie(var, "rms");
  Variable mom = GetSlotOrDie(var, "momentum");
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output decay = CastTo(decay_t_, dtype);
  const Output momentum = CastTo(momentum_t_, dtype);
  const Output epsilon = CastTo(epsilon_t_, dtype);
  if (options_.centered) {
    Variable mg = GetSlotOrDie(var, "mg");
    if (var.is_resource()) {
      return ops::ResourceApplyCenteredRMSProp(var.ref(), mg.ref(), rms.ref(), mom.ref(), lr, decay, momentum,
                                               epsilon, grad, use_locking());
    }
    return ops::ApplyCenteredRMSProp(var.ref(), mg.ref(), rms.ref(), mom.ref(), lr, decay, momentum, epsilon,
                                     grad, use_locking())
        .op();
  }
  if (var.is_resource()) {
    return ops::ResourceApplyRMSProp(var.ref(), rms.ref(), mom.ref(), lr, decay, momentum, epsilon, grad,
                                     use_locking());
  }
  return ops::ApplyRMSProp(var.ref(), rms.ref(), mom.ref(), lr, decay, momentum, epsilon, grad, use_locking())
      .op();
}

Operation RMSPropOptimizer::ApplySparse(const ops::IndexedSlices& grad, const Variable& var) {
  const DataType dtype = var.dtype();
  Variable rms = GetSlotOrDie(var, "rms");
  Variable mom = GetSlotOrDie(var, "momentum");
  const Output lr = CastTo(learning_rate_t_, dtype);
  const Output decay = CastTo(decay_t_, dtype);
  const Output momentum = CastTo(momentum_t_, dtype);
  const Output epsilon = CastTo(epsilon_t_, dtype);
  const Output& g = grad.values;
  const Output& i = grad.indices;
  if (options_.centered) {
    Variable mg = GetSlotOrDie(var, "mg");
    if (var.is_resource()) {
      return ops::ResourceSparseApplyCenteredRMSProp(var.ref(), mg.ref(), rms.ref(), mom.ref(), lr, decay,
                                                     momentum, epsilon, g, i, use_locking());
    }
    return ops::SparseApplyCenteredRMSProp(var.ref(), mg.ref(), rms.ref(), mom.ref(), lr, decay, momentum,
                                           epsilon, g, i, use_locking())
        .op();
  }
  if (var.is_resource()) {
    return ops::ResourceSparseApplyRMSProp(var.ref(), rms.ref(), mom.ref(), lr, decay, momentum, epsilon, g,
                                           i, use_locking());
  }
  return ops::SparseApplyRMSProp(var.ref(), rms.ref(), mom.ref(), lr, decay, momentum, epsilon, g, i,
                                 use_locking())
      .op();
}

}  // namespace flowtrain::train
