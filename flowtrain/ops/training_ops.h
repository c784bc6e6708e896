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
//   Adadelta         accum = rho * accum + (1 - rho) * g^2
//                    u = g * sqrt(accum_update + eps) / sqrt(accum + eps);  var -= lr * u
//                    accum_update = rho * accum_update + (1 - rho) * u^2
//   ProximalGradientDescent  p = var - alpha * g
//                    var = sign(p) * max(|p| - alpha * l1, 0) / (1 + alpha * l2)
//                    (l1 <= 0: var = p / (1 + alpha * l2))
//   ProximalAdagrad  accum += g^2;  alpha = lr / sqrt(accum);  then as ProximalGradientDescent
//   Ftrl             n = accum + g^2;  linear += g - (n^-lr_power - accum^-lr_power) / lr * var
//                    var = |linear| > l1 ? (l1 * sign(linear) - linear) / (n^-lr_power / lr + 2 * l2)
//                                        : 0;  accum = n
//                    (multiply_linear_by_lr: linear += g * lr - (n^-lr_power - accum^-lr_power) * var,
//                     var = |linear| > l1 * lr ? (l1 * lr * sign(linear) - linear) /
//                                                (n^-lr_power + 2 * l2 * lr) : 0)
//   FtrlV2           as Ftrl with g + 2 * l2_shrinkage * var in place of g in the linear update
//                    (accum still adds g^2)
//   AdagradDA        gacc += g;  gsq += g^2;  t = global_step
//                    var = -lr * sign(gacc) * max(|gacc| - l1 * t, 0) / (l2 * t * lr + sqrt(gsq))
//                    (l1 <= 0: var = -lr * gacc / (l2 * t * lr + sqrt(gsq)))
//
// SparseApplyX runs ApplyX on the rows `indices` of the variable and slots only, `grad` holding
// one row per index (rows repeated in `indices` are updated once per occurrence, in order); an
// index out of [0, rows) is InvalidArgument and nothing is updated.
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
Output SparseApplyMomentum(Output var, Output accum, Output lr, Output grad, Output indices, Output momentum,
                           bool use_locking = false, bool use_nesterov = false,
                           std::string_view name = "SparseApplyMomentum");
Output SparseApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho, Output momentum,
                          Output epsilon, Output grad, Output indices, bool use_locking = false,
                          std::string_view name = "SparseApplyRMSProp");
Output SparseApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr, Output rho,
                                  Output momentum, Output epsilon, Output grad, Output indices,
                                  bool use_locking = false,
                                  std::string_view name = "SparseApplyCenteredRMSProp");
Output ApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho, Output momentum, Output epsilon,
                    Output grad, bool use_locking = false, std::string_view name = "ApplyRMSProp");
Output ApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr, Output rho,
                            Output momentum, Output epsilon, Output grad, bool use_locking = false,
                            std::string_view name = "ApplyCenteredRMSProp");
Output ApplyAdadelta(Output var, Output accum, Output accum_update, Output lr, Output rho, Output epsilon,
                     Output grad, bool use_locking = false, std::string_view name = "ApplyAdadelta");
Output SparseApplyAdadelta(Output var, Output accum, Output accum_update, Output lr, Output rho,
                           Output epsilon, Output grad, Output indices, bool use_locking = false,
                           std::string_view name = "SparseApplyAdadelta");
Output ApplyProximalGradientDescent(Output var, Output alpha, Output l1, Output l2, Output delta,
                                    bool use_locking = false,
                                    std::string_view name = "ApplyProximalGradientDescent");
Output SparseApplyProximalGradientDescent(Output var, Output alpha, Output l1, Output l2, Output grad,
                                          Output indices, bool use_locking = false,
                                          std::string_view name = "SparseApplyProximalGradientDescent");
Output ApplyProximalAdagrad(Output var, Output accum, Output lr, Output l1, Output l2, Output grad,
                            bool use_locking = false, std::string_view name = "ApplyProximalAdagrad");
Output SparseApplyProximalAdagrad(Output var, Output accum, Output lr, Output l1, Output l2, Output grad,
                                  Output indices, bool use_locking = false,
                                  std::string_view name = "SparseApplyProximalAdagrad");
Output ApplyFtrl(Output var, Output accum, Output linear, Output grad, Output lr, Output l1, Output l2,
                 Output lr_power, bool use_locking = false, bool multiply_linear_by_lr = false,
                 std::string_view name = "ApplyFtrl");
Output SparseApplyFtrl(Output var, Output accum, Output linear, Output grad, Output indices, Output lr,
                       Output l1, Output l2, Output lr_power, bool use_locking = false,
                       bool multiply_linear_by_lr = false, std::string_view name = "SparseApplyFtrl");
Output ApplyFtrlV2(Output var, Output accum, Output linear, Output grad, Output lr, Output l1, Output l2,
                   Output l2_shrinkage, Output lr_power, bool use_locking = false,
                   bool multiply_linear_by_lr = false, std::string_view name = "ApplyFtrlV2");
Output SparseApplyFtrlV2(Output var, Output accum, Output linear, Output grad, Output indices, Output lr,
                         Output l1, Output l2, Output l2_shrinkage, Output lr_power, bool use_locking = false,
                         bool multiply_linear_by_lr = false, std::string_view name = "SparseApplyFtrlV2");
// `global_step` is an int64 scalar.
Output ApplyAdagradDA(Output var, Output gradient_accumulator, Output gradient_squared_accumulator,
                      Output grad, Output lr, Output l1, Output l2, Output global_step,
                      bool use_locking = false, std::string_view name = "ApplyAdagradDA");
Output SparseApplyAdagradDA(Output var, Output gradient_accumulator, Output gradient_squared_accumulator,
                            Output grad, Output indices, Output lr, Output l1, Output l2, Output global_step,
                            bool use_locking = false, std::string_view name = "SparseApplyAdagradDA");

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
Operation ResourceSparseApplyMomentum(Output var, Output accum, Output lr, Output grad, Output indices,
                                      Output momentum, bool use_locking = false, bool use_nesterov = false,
                                      std::string_view name = "ResourceSparseApplyMomentum");
Operation ResourceSparseApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho,
                                     Output momentum, Output epsilon, Output grad, Output indices,
                                     bool use_locking = false,
                                     std::string_view name = "ResourceSparseApplyRMSProp");
Operation ResourceSparseApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr,
                                             Output rho, Output momentum, Output epsilon, Output grad,
                                             Output indices, bool use_locking = false,
                                             std::string_view name = "ResourceSparseApplyCenteredRMSProp");
Operation ResourceApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho, Output momentum,
                               Output epsilon, Output grad, bool use_locking = false,
                               std::string_view name = "ResourceApplyRMSProp");
Operation ResourceApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr, Output rho,
                                       Output momentum, Output epsilon, Output grad, bool use_locking = false,
                                       std::string_view name = "ResourceApplyCenteredRMSProp");
Operation ResourceApplyAdadelta(Output var, Output accum, Output accum_update, Output lr, Output rho,
                                Output epsilon, Output grad, bool use_locking = false,
                                std::string_view name = "ResourceApplyAdadelta");
Operation ResourceSparseApplyAdadelta(Output var, Output accum, Output accum_update, Output lr, Output rho,
                                      Output epsilon, Output grad, Output indices, bool use_locking = false,
                                      std::string_view name = "ResourceSparseApplyAdadelta");
Operation ResourceApplyProximalGradientDescent(
    Output var, Output alpha, Output l1, Output l2, Output delta, bool use_locking = false,
    std::string_view name = "ResourceApplyProximalGradientDescent");
Operation ResourceSparseApplyProximalGradientDescent(
    Output var, Output alpha, Output l1, Output l2, Output grad, Output indices, bool use_locking = false,
    std::string_view name = "ResourceSparseApplyProximalGradientDescent");
Operation ResourceApplyProximalAdagrad(Output var, Output accum, Output lr, Output l1, Output l2, Output grad,
                                       bool use_locking = false,
                                       std::string_view name = "ResourceApplyProximalAdagrad");
Operation ResourceSparseApplyProximalAdagrad(Output var, Output accum, Output lr, Output l1, Output l2,
                                             Output grad, Output indices, bool use_locking = false,
                                             std::string_view name = "ResourceSparseApplyProximalAdagrad");
Operation ResourceApplyFtrl(Output var, Output accum, Output linear, Output grad, Output lr, Output l1,
                            Output l2, Output lr_power, bool use_locking = false,
                            bool multiply_linear_by_lr = false, std::string_view name = "ResourceApplyFtrl");
Operation ResourceSparseApplyFtrl(Output var, Output accum, Output linear, Output grad, Output indices,
                                  Output lr, Output l1, Output l2, Output lr_power, bool use_locking = false,
                                  bool multiply_linear_by_lr = false,
                                  std::string_view name = "ResourceSparseApplyFtrl");
Operation ResourceApplyFtrlV2(Output var, Output accum, Output linear, Output grad, Output lr, Output l1,
                              Output l2, Output l2_shrinkage, Output lr_power, bool use_locking = false,
                              bool multiply_linear_by_lr = false,
                              std::string_view name = "ResourceApplyFtrlV2");
Operation ResourceSparseApplyFtrlV2(Output var, Output accum, Output linear, Output grad, Output indices,
                                    Output lr, Output l1, Output l2, Output l2_shrinkage, Output lr_power,
                                    bool use_locking = false, bool multiply_linear_by_lr = false,
                                    std::string_view name = "ResourceSparseApplyFtrlV2");
Operation ResourceApplyAdagradDA(Output var, Output gradient_accumulator, Output gradient_squared_accumulator,
                                 Output grad, Output lr, Output l1, Output l2, Output global_step,
                                 bool use_locking = false, std::string_view name = "ResourceApplyAdagradDA");
Operation ResourceSparseApplyAdagradDA(Output var, Output gradient_accumulator,
                                       Output gradient_squared_accumulator, Output grad, Output indices,
                                       Output lr, Output l1, Output l2, Output global_step,
                                       bool use_locking = false,
                                       std::string_view name = "ResourceSparseApplyAdagradDA");

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_TRAINING_OPS_H_
