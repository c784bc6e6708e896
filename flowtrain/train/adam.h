// AdamOptimizer (tf.train.AdamOptimizer, Kingma & Ba): slots "<var>/Adam" (m) and
// "<var>/Adam_1" (v), non-slot variables "beta1_power" and "beta2_power" (non-trainable, in
// GLOBAL_VARIABLES, colocated with the first variable by name) that Finish multiplies by
// beta1/beta2 after every step ("Adam/mul", "Adam/Assign", ...).
//
//   Operation train_op = train::AdamOptimizer(1e-3).Minimize(loss, global_step);
#ifndef FLOWTRAIN_TRAIN_ADAM_H_
#define FLOWTRAIN_TRAIN_ADAM_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  bool use_locking = false;
  bool use_nesterov = false;
  std::string name = "Adam";
};

class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(HyperParameter learning_rate = 0.001, const AdamOptions& options = {});

  // (beta1_power, beta2_power) of `graph`, once created by ApplyGradients.
  std::optional<std::pair<Variable, Variable>> GetBetaAccumulators(Graph* graph) const;

 protected:
  void CreateSlots(const std::vector<Variable>& var_list) override;
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var) override;
  Operation Finish(const std::vector<Operation>& update_ops, std::string_view name_scope) override;

 private:
  HyperParameter learning_rate_;
  AdamOptions options_;
  Output learning_rate_t_, beta1_t_, beta2_t_, epsilon_t_;
  Graph* graph_ = nullptr;  // of the variables being updated
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_ADAM_H_
