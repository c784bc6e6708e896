// Variable initializers (tf.zeros_initializer, tf.glorot_uniform_initializer, ...): functions
// that build the initial value of a variable of a given shape and dtype. Built inside
// Variable's "<name>/Initializer/" scope they name their ops as TF does, e.g.
// "dense/kernel/Initializer/random_uniform/RandomUniform" or "dense/bias/Initializer/zeros".
//
//   ops::Initializer init = ops::GlorotUniformInitializer();
//   Variable w([&] { return init(TensorShape({784, 10}), DT_FLOAT); }, {.name = "w"});
//   Variable v = ops::GetVariable("v", {3}, DT_FLOAT, ops::TruncatedNormalInitializer(0, 0.1));
//
// Seeds follow ops::GetSeed: an initializer without a seed draws a fresh one per graph seed.
#ifndef FLOWTRAIN_OPS_INIT_OPS_H_
#define FLOWTRAIN_OPS_INIT_OPS_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "flowtrain/core/tensor.h"
#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

// Builds (in the current graph and name scope) a value of `shape` and `dtype`.
using Initializer = std::function<Output(const TensorShape& shape, DataType dtype)>;

Initializer ZerosInitializer();
Initializer OnesInitializer();
// Every element `value` (converted to the variable's dtype).
Initializer ConstantInitializer(double value);
// The given tensor, which must have the variable's shape and dtype.
Initializer ConstantInitializer(const Tensor& value);
Initializer RandomNormalInitializer(double mean = 0.0, double stddev = 1.0,
                                    std::optional<int64_t> seed = std::nullopt);
Initializer TruncatedNormalInitializer(double mean = 0.0, double stddev = 1.0,
                                       std::optional<int64_t> seed = std::nullopt);
Initializer RandomUniformInitializer(double minval = 0.0, double maxval = 1.0,
                                     std::optional<int64_t> seed = std::nullopt);

// tf.variance_scaling_initializer (TF1 semantics): stddev (or uniform limit) scaled to
// sqrt(scale / n) with n the fan-in, fan-out or their average.
struct VarianceScalingOptions {
  double scale = 1.0;
  enum class Mode { kFanIn, kFanOut, kFanAvg } mode = Mode::kFanIn;
  // kTruncatedNormal (TF1's "normal"), kUntruncatedNormal or kUniform.
  enum class Distribution {
    kTruncatedNormal,
    kUntruncatedNormal,
    kUniform
  } distribution = Distribution::kTruncatedNormal;
  std::optional<int64_t> seed;
};
Initializer VarianceScalingInitializer(const VarianceScalingOptions& options = {});
// Xavier/Glorot uniform: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)). TF's default
// for tf.get_variable and tf.layers kernels.
Initializer GlorotUniformInitializer(std::optional<int64_t> seed = std::nullopt);
Initializer GlorotNormalInitializer(std::optional<int64_t> seed = std::nullopt);
Initializer HeNormalInitializer(std::optional<int64_t> seed = std::nullopt);
Initializer HeUniformInitializer(std::optional<int64_t> seed = std::nullopt);

// (fan_in, fan_out) of a weight shape as TF computes them: [in, out] for matrices, and the
// receptive field times the last two dimensions for convolution kernels.
std::pair<double, double> ComputeFans(const TensorShape& shape);

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_INIT_OPS_H_
