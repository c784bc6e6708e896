// ProximalAdagradOptimizer (tf.train.ProximalAdagradOptimizer): Adagrad's step with its
// per-element learning rate a = learning_rate / sqrt(accum) (accum += grad^2 first), then
// the proximal step of the l1 and l2 regularization,
// var = sign(p) * max(|p| - a * l1, 0) / (1 + a * l2) for p = var - a * grad.
// Slot "<var>/ProximalAdagrad" (accumulator) starts at initial_accumulator_value.
//
//   Operation train_op = train::ProximalAdagradOptimizer(0.1).Minimize(loss, global_step);
#ifndef FLOWTRAIN_TRAIN_PROXIMAL_ADAGRAD_H_
#define FLOWTRAIN_TRAIN_PROXIMAL_ADAGRAD_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

struct ProximalAdagradOptions {
  double initial_accumulator_value = 0.1;
  double l1_regularization_strength = 0.0;
  double l2_regularization_strength = 0.0;
  bool use_locking = false;
  std::string name = "ProximalAdagrad";
};

class ProximalAdagradOptimizer : public Optimizer {
 public:
  // InvalidArgument unless initial_accumulator_value > 0.
  explicit ProximalAdagradOptimizer(HyperParameter learning_rate, const ProximalAdagradOptions& options = {});

 protected:
  void CreateSlots(const std::vector<Variable>& var_list) override;
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var) override;

 private:
  HyperParameter learning_rate_;
  ProximalAdagradOptions options_;
  Output learning_rate_t_, l1_t_, l2_t_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_PROXIMAL_ADAGRAD_H_
