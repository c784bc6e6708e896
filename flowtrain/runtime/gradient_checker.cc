#include "flowtrain/runtime/gradient_checker.h"

#include <cmath>
#include <random>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"

namespace flowtrain {

Tensor RandomDoubles(const TensorShape& shape, uint64_t seed, double low, double high) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  Tensor t(DT_DOUBLE, shape);
  for (double& v : t.flat<double>()) v = dist(rng);
  return t;
}

double ComputeGradientError(const std::vector<Output>& xs, const std::vector<Tensor>& x_values,
                            const Output& y, const GradientCheckOptions& options) {
  FT_REQUIRE(xs.size() == x_values.size(), "ComputeGradientError: ", xs.size(), " xs but ", x_values.size(),
             " values");
  FT_REQUIRE(y.dtype() == DT_DOUBLE, "ComputeGradientError needs a float64 y, got ",
             DataTypeString(y.dtype()));
  Graph& graph = *y.graph();
  Output grad_y;
  std::vector<Output> grads;
  {
    auto as_default = graph.AsDefault();
    grad_y = ops::Placeholder(DT_DOUBLE, y.shape(), "gradient_check_dy");
    grads = ops::Gradients({y}, xs, {grad_y});
  }
  Session session(graph);
  FeedList feeds = options.extra_feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.emplace_back(xs[i], x_values[i]);
  const Tensor y_value = session.Run(feeds, {y})[0];
  const int64_t ny = y_value.NumElements();

  double max_error = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const int64_t nx = x_values[k].NumElements();
    // Theoretical: row j of the Jacobian is the gradient with a one-hot dy at j.
    std::vector<double> theoretical(nx * ny, 0.0);
    for (int64_t j = 0; j < ny; ++j) {
      Tensor dy(DT_DOUBLE, y_value.shape());
      for (double& v : dy.flat<double>()) v = 0;
      dy.flat<double>()[j] = 1;
      FeedList f = feeds;
      f.emplace_back(grad_y, dy);
      if (!grads[k]) continue;  // no path: a zero Jacobian
      const Tensor g = session.Run(f, {grads[k]})[0];
      FT_REQUIRE(g.NumElements() == nx, "Gradient of ", xs[k].name(), " has ", g.NumElements(),
                 " elements, expected ", nx);
      for (int64_t i = 0; i < nx; ++i) theoretical[i * ny + j] = g.flat<double>()[i];
    }
    // Numeric: perturb each input element both ways.
    for (int64_t i = 0; i < nx; ++i) {
      Tensor plus = x_values[k].DeepCopy();
      Tensor minus = x_values[k].DeepCopy();
      plus.flat<double>()[i] += options.delta;
      minus.flat<double>()[i] -= options.delta;
      FeedList fp = feeds, fm = feeds;
      fp[options.extra_feeds.size() + k].second = plus;
      fm[options.extra_feeds.size() + k].second = minus;
      const Tensor yp = session.Run(fp, {y})[0];
      const Tensor ym = session.Run(fm, {y})[0];
      for (int64_t j = 0; j < ny; ++j) {
        const double numeric = (yp.flat<double>()[j] - ym.flat<double>()[j]) / (2 * options.delta);
        max_error = std::max(max_error, std::abs(numeric - theoretical[i * ny + j]));
      }
    }
  }
  return max_error;
}

}  // namespace flowtrain
