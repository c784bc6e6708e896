#include "flowtrain/ops/batch_normalization.h"

#include <utility>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/layers.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/variable_scope.h"

namespace flowtrain::layers {
namespace {

constexpr const char* kLayer = "batch_normalization";

// A scalar or a vector of `n` copies of `v` as a Const of `dtype` (float or double).
Output Filled(double v, DataType dtype, std::optional<int64_t> n, std::string_view name) {
  Tensor t(dtype, n ? TensorShape({*n}) : TensorShape());
  if (dtype == DT_FLOAT) {
    for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = static_cast<float>(v);
  } else {
    for (int64_t i = 0; i < t.NumElements(); ++i) t.data<double>()[i] = v;
  }
  return ops::Const(t, name);
}

}  // namespace

BatchNormalization::BatchNormalization(BatchNormalizationOptions options) : options_(std::move(options)) {}

Output BatchNormalization::operator()(Output inputs, Training training) {
  if (!inputs) InvalidArgument(kLayer, ": the inputs are empty");
  const PartialTensorShape& shape = inputs.shape();
  if (shape.unknown_rank()) InvalidArgument(kLayer, ": the inputs need a known rank");
  const int rank = shape.dims();
  const int axis = options_.axis < 0 ? options_.axis + rank : options_.axis;
  if (axis < 0 || axis >= rank) {
    InvalidArgument(kLayer, ": axis ", options_.axis, " is out of range for inputs of rank ", rank,
                    " (shape ", shape.DebugString(), ")");
  }
  if (shape.dim_size(axis) < 0) {
    InvalidArgument(kLayer, ": axis ", options_.axis,
                    " of the inputs should have a defined dimension, got shape ", shape.DebugString());
  }
  if (inputs.dtype() != DT_FLOAT && inputs.dtype() != DT_DOUBLE) {
    InvalidArgument(kLayer, ": the inputs must be float32 or float64, got ", DataTypeString(inputs.dtype()));
  }
  if (!training.value() &&
      (!training.tensor() || training.tensor().dtype() != DT_BOOL || training.tensor().shape().dims() > 0)) {
    InvalidArgument(kLayer, ": training must be a bool or a scalar bool tensor");
  }
  Graph& graph = *inputs.graph();
  auto as_default = graph.AsDefault();
  if (graph_ == nullptr) {
    name_ = options_.name.empty() ? UniqueLayerName(graph, kLayer) : options_.name;
  } else if (graph_ != &graph || rank_ != rank || channels_ != shape.dim_size(axis) ||
             moving_mean_.dtype() != inputs.dtype()) {
    InvalidArgument(kLayer, " layer '", name_, "' was built for ", DataTypeString(moving_mean_.dtype()),
                    " inputs of rank ", rank_, " with ", channels_, " channels in its graph, got ",
                    DataTypeString(inputs.dtype()), " ", shape.DebugString());
  }
  auto name_scope = graph.NameScope(name_);
  if (graph_ == nullptr) Build(inputs, axis);
  // TF1's choice: the fused kernel for 4-D float inputs normalised over axis 1 or 3.
  const bool fused =
      options_.fused.value_or(true) && rank == 4 && (axis == 1 || axis == 3) && inputs.dtype() == DT_FLOAT;
  return fused ? Fused(inputs, training, axis) : NonFused(inputs, training, axis);
}

void BatchNormalization::Build(const Output& inputs, int axis) {
  Graph& graph = *inputs.graph();
  graph_ = &graph;
  rank_ = inputs.shape().dims();
  channels_ = inputs.shape().dim_size(axis);
  ops::VariableScope var_scope(name_, {.auxiliary_name_scope = false});
  const TensorShape param_shape({channels_});
  const DataType dtype = inputs.dtype();
  auto or_default = [](const ops::Initializer& given, ops::Initializer fallback) {
    return given ? given : std::move(fallback);
  };
  if (options_.scale) {
    gamma_ = ops::GetVariable("gamma", param_shape, dtype,
                              or_default(options_.gamma_initializer, ops::OnesInitializer()),
                              {.trainable = options_.trainable});
  }
  if (options_.center) {
    beta_ = ops::GetVariable("beta", param_shape, dtype,
                             or_default(options_.beta_initializer, ops::ZerosInitializer()),
                             {.trainable = options_.trainable});
  }
  moving_mean_ = ops::GetVariable("moving_mean", param_shape, dtype,
                                  or_default(options_.moving_mean_initializer, ops::ZerosInitializer()),
                                  {.trainable = false});
  moving_variance_ = ops::GetVariable(
      "moving_variance", param_shape, dtype,
      or_default(options_.moving_variance_initializer, ops::OnesInitializer()), {.trainable = false});
}

Output BatchNormalization::Fused(const Output& inputs, const Training& training, int axis) {
  const DataType dtype = inputs.dtype();
  const Output gamma = options_.scale ? gamma_.value() : Filled(1.0, dtype, channels_, "Const");
  const Output beta = options_.center ? beta_.value() : Filled(0.0, dtype, channels_, "Const");
  const Output moving_mean = moving_mean_.value();
  const Output moving_variance = moving_variance_.value();
  // Our kernel normalises the last axis: NCHW goes through NHWC (TF's CPU kernel does the same).
  const Output x = axis == 1 ? ops::Transpose(inputs, {0, 2, 3, 1}) : inputs;
  const float epsilon = static_cast<float>(options_.epsilon);
  auto run = [&](bool is_training) {
    ops::FusedBatchNormOutputs r = ops::FusedBatchNorm(x, gamma, beta, moving_mean, moving_variance,
                                                       {.epsilon = epsilon, .is_training = is_training});
    return std::vector<Output>{r.y, r.batch_mean, r.batch_variance};
  };
  const std::vector<Output> out =
      training.value() ? run(*training.value())
                       : ops::Cond(
                             training.tensor(), [&] { return run(true); }, [&] { return run(false); });
  Output y = axis == 1 ? ops::Transpose(out[0], {0, 3, 1, 2}) : out[0];
  if (training.value() == false) return y;
  // With a training tensor the updates always run; in inference momentum 1 leaves the
  // statistics unchanged (TF's smart_cond on the momentum).
  const Output momentum =
      training.value()
          ? Filled(options_.momentum, dtype, std::nullopt, "Const")
          : ops::Cond(
                training.tensor(), [&] { return Filled(options_.momentum, dtype, std::nullopt, "Const"); },
                [&] { return Filled(1.0, dtype, std::nullopt, "Const"); });
  AddMovingAverageUpdate(moving_mean_, out[1], momentum);
  AddMovingAverageUpdate(moving_variance_, out[2], momentum);
  return y;
}

Output BatchNormalization::NonFused(const Output& inputs, const Training& training, int axis) {
  Graph& graph = *graph_;
  const DataType dtype = inputs.dtype();
  std::vector<int64_t> reduction_axes, broadcast_shape(rank_, 1);
  for (int d = 0; d < rank_; ++d) {
    if (d != axis) reduction_axes.push_back(d);
  }
  broadcast_shape[axis] = channels_;
  Output mean, variance;
  if (training.value() == false) {
    mean = moving_mean_.value();
    variance = moving_variance_.value();
  } else {
    Output batch_mean, batch_variance;
    {
      // tf.nn.moments: the variance around a mean the gradient does not flow through.
      auto moments = graph.NameScope("moments");
      const Output m = ops::ReduceMean(inputs, reduction_axes, true, "mean");
      const Output v = ops::ReduceMean(ops::SquaredDifference(inputs, ops::StopGradient(m)), reduction_axes,
                                       true, "variance");
      batch_mean = ops::Squeeze(m, reduction_axes);
      batch_variance = ops::Squeeze(v, reduction_axes);
    }
    if (training.value()) {
      mean = batch_mean;
      variance = batch_variance;
    } else {
      mean = ops::Cond(
          training.tensor(), [&] { return batch_mean; }, [&] { return moving_mean_.value(); });
      variance = ops::Cond(
          training.tensor(), [&] { return batch_variance; }, [&] { return moving_variance_.value(); });
    }
    // The updates move the statistics towards `mean` and `variance`: for a training tensor
    // fed false these are the moving statistics themselves, so nothing moves.
    AddMovingAverageUpdate(moving_mean_, mean, std::nullopt);
    AddMovingAverageUpdate(moving_variance_, variance, std::nullopt);
  }
  // Parameters of shape [channels] broadcast against the inputs unless the axis is the last.
  auto broadcast = [&](const Output& t) { return axis == rank_ - 1 ? t : ops::Reshape(t, broadcast_shape); };
  mean = broadcast(mean);
  variance = broadcast(variance);
  const Output gamma = options_.scale ? broadcast(gamma_.value()) : Output();
  const Output beta = options_.center ? broadcast(beta_.value()) : Output();
  // tf.nn.batch_normalization: x * inv + (beta - mean * inv), inv = gamma / sqrt(variance + epsilon).
  auto scope = graph.NameScope("batchnorm");
  Output inv = ops::Rsqrt(variance + Filled(options_.epsilon, dtype, std::nullopt, "y"));
  if (gamma) inv = inv * gamma;
  const Output shift = beta ? beta - mean * inv : ops::Neg(mean * inv);
  return inputs * inv + shift;
}

void BatchNormalization::AddMovingAverageUpdate(const Variable& variable, const Output& value,
                                                const std::optional<Output>& momentum) {
  Graph& graph = *graph_;
  OpNameScope scope(graph, "AssignMovingAvg");
  const std::string exact = scope.op_name() + "/";
  auto colocate = graph.ColocateWith(variable.op());
  const Output decay = momentum ? Filled(1.0, variable.dtype(), std::nullopt, "x") - *momentum
                                : Filled(1.0 - options_.momentum, variable.dtype(), std::nullopt, "decay");
  const Output update = variable.AssignSub((variable.value() - value) * decay, exact);
  updates_.push_back(update.op());
  graph.AddToCollection(GraphKeys::kUpdateOps, update.op());
}

Output BatchNormalizationLayer(Output inputs, Training training, const BatchNormalizationOptions& options) {
  BatchNormalization layer(options);
  return layer(std::move(inputs), std::move(training));
}

}  // namespace flowtrain::layers
