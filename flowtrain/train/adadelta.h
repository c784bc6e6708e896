// AdadeltaOptimizer (tf.train.AdadeltaOptimizer): accum = rho * accum + (1 - rho) * grad^2,
// update = grad * sqrt(accum_update + epsilon) / sqrt(accum + epsilon),
// var -= learning_rate * update, accum_update = rho * accum_update + (1 - rho) * update^2.
// Slots (TF's names, both starting at zeros): "<var>/Adadelta" (accum) and "<var>/Adadelta_1"
// (accum_update).
//
//   Operation train_op = train::AdadeltaOptimizer(1.0).Minimize(loss, global_step);
#ifndef FLOWTRAIN_TRAIN_ADADELTA_H_
#define FLOWTRAIN_TRAIN_ADADELTA_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

struct AdadeltaOptions {
  HyperParameter rho = 0.95;
  HyperParameter epsilon = 1e-8;
  bool use_locking = false;
  std::string name = "Adadelta";
};

class AdadeltaOptimizer : public Optimizer {
 public:
  explicit AdadeltaOptimizer(HyperParameter learning_rate = 0.001, const AdadeltaOptions& options = {});

 protected:
  void CreateSlots(const std::vector<Variable>& var_list) override;
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var) override;

 private:
  HyperParameter learning_rate_;
  AdadeltaOptions options_;
  Output learning_rate_t_, rho_t_, epsilon_t_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_ADADELTA_H_
