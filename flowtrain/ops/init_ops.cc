#include "flowtrain/ops/init_ops.h"

#include <cmath>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/random_ops.h"

namespace flowtrain::ops {
namespace {

std::vector<int64_t> Dims(const TensorShape& shape) {
  return {shape.dim_sizes().begin(), shape.dim_sizes().end()};
}

Tensor Filled(const TensorShape& shape, DataType dtype, double value) {
  Tensor t(dtype, shape);
  if (dtype == DT_BOOL) {
    for (bool& b : t.flat<bool>()) b = value != 0;
    return t;
  }
  DispatchNumericType(dtype, "initializer", [&]<typename T>() {
    for (T& v : t.flat<T>()) v = static_cast<T>(value);
  });
  return t;
}

// tf.zeros / tf.ones: a Const when small, else Fill(shape, scalar) as TF does from 1000
// elements on (keeps big zeros out of the GraphDef).
Output FilledValue(const TensorShape& shape, DataType dtype, double value, std::string_view name) {
  if (shape.num_elements() < 1000) return Const(Filled(shape, dtype, value), name);
  Graph& graph = GetDefaultGraph();
  OpNameScope scope(graph, name);
  std::vector<int32_t> dims;
  for (int64_t d : shape.dim_sizes()) dims.push_back(static_cast<int32_t>(d));
  Output shape_tensor = Const(Tensor::FromVector<int32_t>(dims), "shape_as_tensor");
  Output scalar = Const(Filled(TensorShape(), dtype, value), "Const");
  scope.Exit();
  return NodeBuilder("Fill", scope.op_name()).ExactName().Input(shape_tensor).Input(scalar).Finalize();
}

void RequireFloating(DataType dtype, std::string_view initializer) {
  if (!IsFloatingType(dtype)) {
    InvalidArgument(initializer, " expects a floating point dtype, got ", DataTypeString(dtype));
  }
}

}  // namespace

std::pair<double, double> ComputeFans(const TensorShape& shape) {
  const int rank = shape.dims();
  if (rank == 0) return {1.0, 1.0};
  if (rank == 1) return {double(shape.dim_size(0)), double(shape.dim_size(0))};
  if (rank == 2) return {double(shape.dim_size(0)), double(shape.dim_size(1))};
  double receptive_field = 1.0;
  for (int d = 0; d < rank - 2; ++d) receptive_field *= double(shape.dim_size(d));
  return {double(shape.dim_size(rank - 2)) * receptive_field,
          double(shape.dim_size(rank - 1)) * receptive_field};
}

Initializer ZerosInitializer() {
  return [](const TensorShape& shape, DataType dtype) { return FilledValue(shape, dtype, 0.0, "zeros"); };
}

Initializer OnesInitializer() {
  return [](const TensorShape& shape, DataType dtype) { return FilledValue(shape, dtype, 1.0, "ones"); };
}

Initializer ConstantInitializer(double value) {
  return [value](const TensorShape& shape, DataType dtype) {
    return Const(Filled(shape, dtype, value), "Const");
  };
}

Initializer ConstantInitializer(const Tensor& value) {
  return [value](const TensorShape& shape, DataType dtype) {
    if (value.shape() != shape || value.dtype() != dtype) {
      InvalidArgument("constant_initializer: value has shape ", value.shape().DebugString(), " and type ",
                      DataTypeString(value.dtype()), ", the variable needs ", shape.DebugString(), " and ",
                      DataTypeString(dtype));
    }
    return Const(value, "Const");
  };
}

Initializer RandomNormalInitializer(double mean, double stddev, std::optional<int64_t> seed) {
  return [=](const TensorShape& shape, DataType dtype) {
    RequireFloating(dtype, "random_normal_initializer");
    return random::Normal(Dims(shape), mean, stddev, dtype, seed);
  };
}

Initializer TruncatedNormalInitializer(double mean, double stddev, std::optional<int64_t> seed) {
  return [=](const TensorShape& shape, DataType dtype) {
    RequireFloating(dtype, "truncated_normal_initializer");
    return random::TruncatedNormal(Dims(shape), mean, stddev, dtype, seed);
  };
}

Initializer RandomUniformInitializer(double minval, double maxval, std::optional<int64_t> seed) {
  return [=](const TensorShape& shape, DataType dtype) {
    return random::Uniform(Dims(shape), minval, maxval, dtype, seed);
  };
}

Initializer VarianceScalingInitializer(const VarianceScalingOptions& options) {
  if (options.scale <= 0.0) {
    InvalidArgument("variance_scaling_initializer: `scale` must be positive float, got ", options.scale);
  }
  return [options](const TensorShape& shape, DataType dtype) {
    RequireFloating(dtype, "variance_scaling_initializer");
    auto [fan_in, fan_out] = ComputeFans(shape);
    double n = fan_in;
    if (options.mode == VarianceScalingOptions::Mode::kFanOut) n = fan_out;
    if (options.mode == VarianceScalingOptions::Mode::kFanAvg) n = (fan_in + fan_out) / 2.0;
    const double scale = options.scale / std::max(1.0, n);
    using Dist = VarianceScalingOptions::Distribution;
    switch (options.distribution) {
      case Dist::kTruncatedNormal:
        // The stddev of a unit normal truncated at ±2, so the result has variance `scale`.
        return random::TruncatedNormal(Dims(shape), 0.0, std::sqrt(scale) / 0.87962566103423978, dtype,
                                       options.seed);
      case Dist::kUntruncatedNormal:
        return random::Normal(Dims(shape), 0.0, std::sqrt(scale), dtype, options.seed);
      case Dist::kUniform:
      default: {
        const double limit = std::sqrt(3.0 * scale);
        return random::Uniform(Dims(shape), -limit, limit, dtype, options.seed);
      }
    }
  };
}

Initializer GlorotUniformInitializer(std::optional<int64_t> seed) {
  return VarianceScalingInitializer({.scale = 1.0,
                                     .mode = VarianceScalingOptions::Mode::kFanAvg,
                                     .distribution = VarianceScalingOptions::Distribution::kUniform,
                                     .seed = seed});
}

Initializer GlorotNormalInitializer(std::optional<int64_t> seed) {
  return VarianceScalingInitializer({.scale = 1.0,
                                     .mode = VarianceScalingOptions::Mode::kFanAvg,
                                     .distribution = VarianceScalingOptions::Distribution::kTruncatedNormal,
                                     .seed = seed});
}

Initializer HeNormalInitializer(std::optional<int64_t> seed) {
  return VarianceScalingInitializer({.scale = 2.0,
                                     .mode = VarianceScalingOptions::Mode::kFanIn,
                                     .distribution = VarianceScalingOptions::Distribution::kTruncatedNormal,
                                     .seed = seed});
}

Initializer HeUniformInitializer(std::optional<int64_t> seed) {
  return VarianceScalingInitializer({.scale = 2.0,
                                     .mode = VarianceScalingOptions::Mode::kFanIn,
                                     .distribution = VarianceScalingOptions::Distribution::kUniform,
                                     .seed = seed});
}

}  // namespace flowtrain::ops
