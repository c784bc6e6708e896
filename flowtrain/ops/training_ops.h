// Fused optimizer updates (TF's training_ops): each op updates a variable and its accumulators
// in place in one kernel. ApplyX takes TF1 reference variables and outputs the variable's
// reference; its twin ResourceApplyX takes resource variable handles (use_resource=True) and
// has no output; both run the same update.
// Inputs and attrs are TF's, in TF's order, so GraphDefs interchange. Optimizers (train/)
// build these; direct use looks like:
//
//   Output step = ops::ApplyGradientDescent(w.ref(), ops::Const(0.1f), grad_w);
//   Operation r = ops::ResourceApplyGradientDescent(w_handle, ops::Const(0.1f), grad_w);
//   Output adam = ops::ApplyAdam(w.ref(), m.ref(), v.ref(), beta1_power, beta2_power, lr,
//                                beta1, beta2, epsilon, grad_w);
//
// Updates (g = grad; TF's formulas):
//   GradientDescent  var -= alpha * g
//   Momentum         accum = accum * momentum + g;  var -= lr * accum
//                    (nesterov: var -= lr * g + lr * momentum * accum)
//   Adam             lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
//                    m += (g - m) * (1 - beta1);  v += (g^2 - v) * (1 - beta2)
//                    var -= lr_t * m / (sqrt(v) + epsilon)
//                    (nesterov: m replaced by beta1 * m + (1 - beta1) * g in the last line)
//   Adagrad          accum += g^2;  var -= lr * g / sqrt(accum)
//   RMSProp          ms += (g^2 - ms) * (1 - rho);  mom = momentum * mom + lr * g / sqrt(ms + eps)
//                    var -= mom
//   CenteredRMSProp  as RMSProp with mg += (g - mg) * (1 - rho) and sqrt(ms - mg^2 + eps)
#ifndef FLOWTRAIN_OPS_TRAINING_OPS_H_
#define FLOWTRAIN_OPS_TRAINING_OPS_H_

#include <string_view>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

Output ApplyGradientDescent(Output var, Output alpha, Output delta, bool use_locking = false,
                            std::string_view name = "ApplyGradientDescent");
Output ApplyMomentum(Output var, Output accum, Output lr, Output grad, Output momentum,
                     bool use_locking = false, bool use_nesterov = false,
                     std::string_view name = "ApplyMomentum");
Output ApplyAdam(Output var, Output m, Output v, Output beta1_power, Output beta2_power, Output lr,
                 Output beta1, Output beta2, Output epsilon, Output grad, bool use_locking = false,
                 bool use_nesterov = false, std::string_view name = "ApplyAdam");
Output ApplyAdagrad(Output var, Output accum, Output lr, Output grad, bool use_locking = false,
                    bool update_slots = true, std::string_view name = "ApplyAdagrad");
// ApplyAdagrad on rows `indices` of var and accum, `grad` holding one row per index (rows
// repeated in `indices` are updated once per occurrence, in order).
Output SparseApplyAdagrad(Output var, Output accum, Output lr, Output grad, Output indices,
                          bool use_locking = false, bool update_slots = true,
                          std::string_view name = "SparseApplyAdagrad");
Output ApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho, Output momentum, Output epsilon,
                    Output grad, bool use_locking = false, std::string_view name = "ApplyRMSProp");
Output ApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr, Output rho,
                            Output momentum, Output epsilon, Output grad, bool use_locking = false,
                            std::string_view name = "ApplyCenteredRMSProp");

// The resource-variable twins: `var` and the slots are DT_RESOURCE handles (InvalidArgument
// otherwise).
Operation ResourceApplyGradientDescent(Output var, Output alpha, Output delta, bool use_locking = false,
                                       std::string_view name = "ResourceApplyGradientDescent");
Operation ResourceApplyMomentum(Output var, Output accum, Output lr, Output grad, Output momentum,
                                bool use_locking = false, bool use_nesterov = false,
                                std::string_view name = "ResourceApplyMomentum");
Operation ResourceApplyAdam(Output var, Output m, Output v, Output beta1_power, Output beta2_power, Output lr,
                            Output beta1, Output beta2, Output epsilon, Output grad, bool use_locking = false,
                            bool use_nesterov = false, std::string_view name = "ResourceApplyAdam");
Operation ResourceApplyAdagrad(Output var, Output accum, Output lr, Output grad, bool use_locking = false,
                               bool update_slots = true, std::string_view name = "ResourceApplyAdagrad");
Operation ResourceSparseApplyAdagrad(Output var, Output accum, Output lr, Output grad, Output indices,
                                     bool use_locking = false, bool update_slots = true,
                                     std::string_view name = "ResourceSparseApplyAdagrad");
Operation ResourceApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho, Output momentum,
                               Output epsilon, Output grad, bool use_locking = false,
                               std::string_view name = "ResourceApplyRMSProp");
Operation ResourceApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr, Output rho,
                                       Output momentum, Output epsilon, Output grad, bool use_locking = false,
                                       std::string_view name = "ResourceApplyCenteredRMSProp");

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_TRAINING_OPS_H_
