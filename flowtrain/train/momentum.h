// MomentumOptimizer (tf.train.MomentumOptimizer): accum = momentum * accum + grad,
// var -= learning_rate * accum (or the Nesterov form), with the slot "<var>/Momentum".
//
//   train::MomentumOptimizer opt(0.1, 0.9, {.use_nesterov = true});
//   Operation train_op = opt.Minimize(loss, global_step);
#ifndef FLOWTRAIN_TRAIN_MOMENTUM_H_
#define FLOWTRAIN_TRAIN_MOMENTUM_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

struct MomentumOptions {
  bool use_locking = false;
  std::string name = "Momentum";
  bool use_nesterov = false;
};

class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(HyperParameter learning_rate, HyperParameter momentum,
                    const MomentumOptions& options = {});

 protected:
  void CreateSlots(const std::vector<Variable>& var_list) override;
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var) override;

 private:
  HyperParameter learning_rate_, momentum_;
  bool use_nesterov_;
  Output learning_rate_t_, momentum_t_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_MOMENTUM_H_
