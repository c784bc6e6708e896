// FtrlOptimizer (tf.train.FtrlOptimizer): FTRL-Proximal (McMahan et al., 2013), TF 1.15's
// signature. Each step adds grad^2 to accum and grad - (accum_new^-p - accum^-p) / lr * var to
// linear (p = learning_rate_power), then sets var to the closed-form minimizer of the l1/l2
// regularized linear model (0 where |linear| <= l1). With
// l2_shrinkage_regularization_strength > 0 it runs ApplyFtrlV2, which uses
// grad + 2 * l2_shrinkage * var in the linear term (a magnitude penalty, unlike l2's
// stabilization). Slots: "<var>/<accum_name>" (accum, starts at initial_accumulator_value) and
// "<var>/<linear_name>" (linear, zeros), both names defaulting to the optimizer's name, so
// "<var>/Ftrl" and "<var>/Ftrl_1".
//
//   train::FtrlOptimizer ftrl(0.05, {.l1_regularization_strength = 0.001});
//   Operation train_op = ftrl.Minimize(loss, global_step);
#ifndef FLOWTRAIN_TRAIN_FTRL_H_
#define FLOWTRAIN_TRAIN_FTRL_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

struct FtrlOptions {
  double learning_rate_power = -0.5;
  double initial_accumulator_value = 0.1;
  double l1_regularization_strength = 0.0;
  double l2_regularization_strength = 0.0;
  bool use_locking = false;
  std::string name = "Ftrl";
  std::string accum_name;   // empty: name
  std::string linear_name;  // empty: name
  double l2_shrinkage_regularization_strength = 0.0;
};

class FtrlOptimizer : public Optimizer {
 public:
  // InvalidArgument, as TF's ValueError, when initial_accumulator_value, l1, l2 or
  // l2_shrinkage is negative or learning_rate_power is positive.
  explicit FtrlOptimizer(HyperParameter learning_rate, const FtrlOptions& options = {});

 protected:
  void CreateSlots(const std::vector<Variable>& var_list) override;
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var) override;

 private:
  HyperParameter learning_rate_;
  FtrlOptions options_;
  Output learning_rate_t_, l1_t_, l2_t_, l2_shrinkage_t_, learning_rate_power_t_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_FTRL_H_
