// RMSPropOptimizer (tf.train.RMSPropOptimizer): ms = decay * ms + (1 - decay) * grad^2,
// mom = momentum * mom + learning_rate * grad / sqrt(ms + epsilon), var -= mom. Slots (TF's
// names): "<var>/RMSProp" (rms, starts at ones), "<var>/RMSProp_1" (momentum); when centered,
// the mean gradient takes "<var>/RMSProp_1" and momentum "<var>/RMSProp_2".
//
//   Operation train_op = train::RMSPropOptimizer(1e-3).Minimize(loss, global_step);
#ifndef FLOWTRAIN_TRAIN_RMSPROP_H_
#define FLOWTRAIN_TRAIN_RMSPROP_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

struct RMSPropOptions {
  double decay = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-10;
  bool use_locking = false;
  bool centered = false;
  std::string name = "RMSProp";
};

class RMSPropOptimizer : public Optimizer {
 public:
  explicit RMSPropOptimizer(HyperParameter learning_rate, const RMSPropOptions& options = {});

 protected:
  void CreateSlots(const std::vector<Variable>& var_list) override;
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var) override;

 private:
  HyperParameter learning_rate_;
  RMSPropOptions options_;
  Output learning_rate_t_, decay_t_, momentum_t_, epsilon_t_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_RMSPROP_H_
