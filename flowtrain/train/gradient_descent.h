// GradientDescentOptimizer (tf.train.GradientDescentOptimizer): var -= learning_rate * grad,
// one ApplyGradientDescent per variable, no slots.
//
//   Operation train_op = train::GradientDescentOptimizer(0.5).Minimize(loss, global_step);
#ifndef FLOWTRAIN_TRAIN_GRADIENT_DESCENT_H_
#define FLOWTRAIN_TRAIN_GRADIENT_DESCENT_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(HyperParameter learning_rate, bool use_locking = false,
                                    std::string name = "GradientDescent");

 protected:
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparseDuplicateIndices(const ops::IndexedSlices& grad, const Variable& var) override;

 private:
  HyperParameter learning_rate_;
  Output learning_rate_t_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_GRADIENT_DESCENT_H_
