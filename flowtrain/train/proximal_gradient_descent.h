// ProximalGradientDescentOptimizer (tf.train.ProximalGradientDescentOptimizer): a gradient
// descent step followed by the proximal step of the l1 and l2 regularization,
// p = var - learning_rate * grad,
// var = sign(p) * max(|p| - learning_rate * l1, 0) / (1 + learning_rate * l2). No slots.
//
//   train::ProximalGradientDescentOptimizer opt(0.1, {.l1_regularization_strength = 0.01});
//   Operation train_op = opt.Minimize(loss, global_step);
#ifndef FLOWTRAIN_TRAIN_PROXIMAL_GRADIENT_DESCENT_H_
#define FLOWTRAIN_TRAIN_PROXIMAL_GRADIENT_DESCENT_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

struct ProximalGradientDescentOptions {
  double l1_regularization_strength = 0.0;
  double l2_regularization_strength = 0.0;
  bool use_locking = false;
  std::string name = "ProximalGradientDescent";
};

class ProximalGradientDescentOptimizer : public Optimizer {
 public:
  explicit ProximalGradientDescentOptimizer(HyperParameter learning_rate,
                                            const ProximalGradientDescentOptions& options = {});

 protected:
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var) override;

 private:
  HyperParameter learning_rate_;
  ProximalGradientDescentOptions options_;
  Output learning_rate_t_, l1_t_, l2_t_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_PROXIMAL_GRADIENT_DESCENT_H_
