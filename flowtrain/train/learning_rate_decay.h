// Learning-rate schedules as graph ops of the global step: TF 1.15's tf.train.*_decay and
// tf.train.piecewise_constant, with its defaults and formulas. Pass the result to an optimizer
// as its learning rate; it is re-evaluated at every step. Each is a float32 scalar whose node
// is named `name` (uniquified), as TF names it (CosineDecay's is `name`/Mul_3, as in TF). A
// global step that is not a scalar, or a non-positive decay_steps, throws InvalidArgument
// naming the schedule.
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

// learning_rate * exp(-decay_rate * p) for p = global_step / decay_steps (floored when
// `staircase`). Built as TF builds it: ExponentialDecay with the rate exp(-decay_rate), so
// the node is named "ExponentialDecay" unless `name` says otherwise.
Output NaturalExpDecay(double learning_rate, Output global_step, int64_t decay_steps, double decay_rate,
                       bool staircase = false, std::string_view name = "ExponentialDecay");

// learning_rate / (1 + decay_rate * p) for p = global_step / decay_steps (floored when
// `staircase`).
Output InverseTimeDecay(double learning_rate, Output global_step, int64_t decay_steps, double decay_rate,
                        bool staircase = false, std::string_view name = "InverseTimeDecay");

// (learning_rate - end_learning_rate) * (1 - s / d) ^ power + end_learning_rate. Without
// `cycle`, s = min(global_step, decay_steps) and d = decay_steps: the rate falls to
// end_learning_rate and stays. With it, s = global_step and d is the first multiple of
// decay_steps at or above it (decay_steps at step 0): the decay restarts every decay_steps.
Output PolynomialDecay(double learning_rate, Output global_step, int64_t decay_steps,
                       double end_learning_rate = 0.0001, double power = 1.0, bool cycle = false,
                       std::string_view name = "PolynomialDecay");

// SGDR (Loshchilov & Hutter): a cosine decay over first_decay_steps, then restarts, each
// period t_mul times longer and its peak m_mul times lower than the one before, never below
// alpha * learning_rate. TF's default name is "SGDRDecay"; the restart index is computed in a
// cond on t_mul == 1, as TF does.
Output CosineDecayRestarts(double learning_rate, Output global_step, int64_t first_decay_steps,
                           double t_mul = 2.0, double m_mul = 1.0, double alpha = 0.0,
                           std::string_view name = "SGDRDecay");

// learning_rate * ((alpha + linear) * cosine + beta) with s = min(global_step, decay_steps),
// linear = (decay_steps - s) / decay_steps and cosine = 0.5 * (1 + cos(pi * 2 * num_periods *
// s / decay_steps)).
Output LinearCosineDecay(double learning_rate, Output global_step, int64_t decay_steps,
                         double num_periods = 0.5, double alpha = 0.0, double beta = 0.001,
                         std::string_view name = "LinearCosineDecay");

// LinearCosineDecay with normal noise added to the linear part, its variance
// initial_variance / (1 + s) ^ variance_decay: fresh noise at every evaluation (the
// RandomStandardNormal node takes its seeds from the graph's seed, as TF's random ops do).
Output NoisyLinearCosineDecay(double learning_rate, Output global_step, int64_t decay_steps,
                              double initial_variance = 1.0, double variance_decay = 0.55,
                              double num_periods = 0.5, double alpha = 0.0, double beta = 0.001,
                              std::string_view name = "NoisyLinearCosineDecay");

// values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i],
// values.back() after the last boundary. `boundaries` increasing; values.size() ==
// boundaries.size() + 1. A float32 scalar; x is any integer or float scalar (the global step).
Output PiecewiseConstant(Output x, const std::vector<double>& boundaries, const std::vector<double>& values,
                         std::string_view name = "PiecewiseConstant");

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_LEARNING_RATE_DECAY_H_
