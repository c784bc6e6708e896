// AdagradDAOptimizer (tf.train.AdagradDAOptimizer): Adagrad dual averaging (Duchi et al.),
// for sparse linear models with large l1. Each step accumulates the gradient and its square,
// then sets var from the accumulators alone:
// var = -lr * sign(g_acc) * max(|g_acc| - l1 * t, 0) / (l2 * t * lr + sqrt(gg_acc)), with t the
// global step + 1 (read when the step runs). Slots (TF's names): "<var>/AdagradDA"
// (gradient_accumulator, zeros) and "<var>/AdagradDA_1" (gradient_squared_accumulator, starts
// at initial_gradient_squared_accumulator_value).
//
//   Variable step = train::GetOrCreateGlobalStep();
//   Operation train_op = train::AdagradDAOptimizer(0.1, step).Minimize(loss, step);
#ifndef FLOWTRAIN_TRAIN_ADAGRAD_DA_H_
#define FLOWTRAIN_TRAIN_ADAGRAD_DA_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

struct AdagradDAOptions {
  double initial_gradient_squared_accumulator_value = 0.1;
  double l1_regularization_strength = 0.0;
  double l2_regularization_strength = 0.0;
  bool use_locking = false;
  std::string name = "AdagradDA";
};

class AdagradDAOptimizer : public Optimizer {
 public:
  // `global_step` is the int64 global step variable (InvalidArgument otherwise, and unless
  // initial_gradient_squared_accumulator_value > 0).
  AdagradDAOptimizer(HyperParameter learning_rate, Variable global_step,
                     const AdagradDAOptions& options = {});

 protected:
  void CreateSlots(const std::vector<Variable>& var_list) override;
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var) override;

 private:
  HyperParameter learning_rate_;
  Variable global_step_;
  AdagradDAOptions options_;
  Output learning_rate_t_, global_step_on_worker_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_ADAGRAD_DA_H_
