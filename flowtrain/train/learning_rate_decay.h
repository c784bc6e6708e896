// Learning-rate schedules as graph ops of the global step (tf.train.exponential_decay,
// tf.train.piecewise_constant, tf.train.cosine_decay). Pass the result to an optimizer as
// its learning rate; it is re-evaluated at every step.
//
//   Variable step = train::GetOrCreateGlobalStep();
//   Output lr = train::ExponentialDecay(0.1, step, /*decay_steps=*/1000, /*decay_rate=*/0.96,
//                                       /*staircase=*/true);
//   Operation train_op = train::GradientDescentOptimizer(lr).Minimize(loss, step);
#ifndef FLOWTRAIN_TRAIN_LEARNING_RATE_DECAY_H_
#define FLOWTRAIN_TRAIN_LEARNING_RATE_DECAY_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"

namespace flowtrain::train {

// learning_rate * decay_rate ^ (global_step / decay_steps), the exponent floored when
// `staircase`. A float32 scalar.
Output ExponentialDecay(double learning_rate, Output global_step, int64_t decay_steps, double decay_rate,
                        bool staircase = false, std::string_view name = "ExponentialDecay");

// TF 1.15's tf.train.cosine_decay: with s = min(global_step, decay_steps),
//   learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * s / decay_steps)) + alpha),
// falling from learning_rate to alpha * learning_rate over decay_steps and staying there.
// A float32 scalar named `name`/Mul_3, as TF names it (its unique names ignore case, and
// the formula's mul, mul_1 and mul_2 come first).
//   Output lr = train::CosineDecay(0.1, step, /*decay_steps=*/10000, /*alpha=*/0.01);
Output CosineDecay(double learning_rate, Output global_step, int64_t decay_steps, double alpha = 0.0,
                   std::string_view name = "CosineDecay");

// values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i],
// values.back() after the last boundary. `boundaries` increasing; values.size() ==
// boundaries.size() + 1. A float32 scalar; x is any integer or float scalar (the global step).
Output PiecewiseConstant(Output x, const std::vector<double>& boundaries, const std::vector<double>& values,
                         std::string_view name = "PiecewiseConstant");

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_LEARNING_RATE_DECAY_H_
