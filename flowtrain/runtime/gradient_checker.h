// Checks symbolic gradients against central finite differences, as TF's
// `tf.test.compute_gradient_error`. Use float64 inputs so the numeric side is accurate.
//
//   Output x = ops::Placeholder(DT_DOUBLE, {2, 3});
//   Output y = ops::ReduceSum(x * x, {1});
//   double error = ComputeGradientError({x}, {RandomDoubles({2, 3})}, y);
//   EXPECT_LT(error, 1e-6);
#ifndef FLOWTRAIN_RUNTIME_GRADIENT_CHECKER_H_
#define FLOWTRAIN_RUNTIME_GRADIENT_CHECKER_H_

#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {

struct GradientCheckOptions {
  double delta = 1e-4;   // finite-difference step
  FeedList extra_feeds;  // other placeholders the graph needs
};

// Uniform float64 values in [low, high) from a fixed-seed generator: reproducible points at
// which to check gradients.
Tensor RandomDoubles(const TensorShape& shape, uint64_t seed = 1, double low = -1, double high = 1);

// The largest absolute difference between the theoretical Jacobian d(y)/d(xs) (built with
// ops::Gradients) and the numeric one, evaluating at `x_values` (float64 tensors fed to `xs`).
double ComputeGradientError(const std::vector<Output>& xs, const std::vector<Tensor>& x_values,
                            const Output& y, const GradientCheckOptions& options = {});

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_GRADIENT_CHECKER_H_
