// AdagradOptimizer (tf.train.AdagradOptimizer): accum += grad^2,
// var -= learning_rate * grad / sqrt(accum), with the slot "<var>/Adagrad" starting at
// initial_accumulator_value.
//
//   Operation train_op = train::AdagradOptimizer(0.1).Minimize(loss, global_step);
#ifndef FLOWTRAIN_TRAIN_ADAGRAD_H_
#define FLOWTRAIN_TRAIN_ADAGRAD_H_

#include "flowtrain/train/optimizer.h"

namespace flowtrain::train {

struct AdagradOptions {
  double initial_accumulator_value = 0.1;
  bool use_locking = false;
  std::string name = "Adagrad";
};

class AdagradOptimizer : public Optimizer {
 public:
  explicit AdagradOptimizer(HyperParameter learning_rate, const AdagradOptions& options = {});

 protected:
  void CreateSlots(const std::vector<Variable>& var_list) override;
  void Prepare() override;
  Operation ApplyDense(const Output& grad, const Variable& var) override;
  Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var) override;

 private:
  HyperParameter learning_rate_;
  double initial_accumulator_value_;
  Output learning_rate_t_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_ADAGRAD_H_
