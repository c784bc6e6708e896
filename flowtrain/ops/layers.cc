#include "flowtrain/ops/layers.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/random_ops.h"
#include "flowtrain/ops/variable_scope.h"

namespace flowtrain::layers {
namespace {

constexpr const char* kLayerNameUidsKey = "__layer_name_uids";

struct LayerNameUids {
  absl::Mutex mu;
  std::map<std::string, int, std::less<>> counts ABSL_GUARDED_BY(mu);
};

// The per-graph counters, kept in a graph collection so they die with the graph.
std::shared_ptr<LayerNameUids> UidsOf(Graph& graph) {
  // Makes find-or-create atomic (the collection itself is guarded by the graph).
  static absl::Mutex create_mu(absl::kConstInit);
  absl::MutexLock lock(&create_mu);
  for (const std::any& item : graph.GetCollectionItems(kLayerNameUidsKey)) {
    if (auto* uids = std::any_cast<std::shared_ptr<LayerNameUids>>(&item)) return *uids;
  }
  auto uids = std::make_shared<LayerNameUids>();
  graph.AddToCollection(kLayerNameUidsKey, uids);
  return uids;
}

std::string LayerName(Graph& graph, const std::string& given, std::string_view base) {
  return given.empty() ? UniqueLayerName(graph, base) : given;
}

std::string PaddingAttr(std::string_view padding, std::string_view layer) {
  std::string upper(padding);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper != "SAME" && upper != "VALID") {
    InvalidArgument(layer, ": padding must be \"valid\" or \"same\", got \"", padding, "\"");
  }
  return upper;
}

int64_t KnownLastDim(const Output& inputs, std::string_view layer) {
  const PartialTensorShape& shape = inputs.shape();
  if (shape.unknown_rank() || shape.dims() == 0 || shape.dim_size(shape.dims() - 1) < 0) {
    InvalidArgument(layer, ": the last dimension of the inputs should be defined. Found ",
                    shape.DebugString());
  }
  return shape.dim_size(shape.dims() - 1);
}

// Bias and activation, shared by Dense and Conv2D (inside the layer's name scope).
Output BiasAndActivation(Output outputs, bool use_bias, int64_t units,
                         const ops::Initializer& bias_initializer, bool trainable,
                         const Activation& activation) {
  if (use_bias) {
    Variable bias = ops::GetVariable("bias", TensorShape({units}), outputs.dtype(),
                                     bias_initializer ? bias_initializer : ops::ZerosInitializer(),
                                     {.trainable = trainable});
    outputs = ops::BiasAdd(outputs, bias);
  }
  if (activation) outputs = activation(outputs, {});
  return outputs;
}

}  // namespace

std::string UniqueLayerName(Graph& graph, std::string_view base_name) {
  auto uids = UidsOf(graph);
  absl::MutexLock lock(&uids->mu);
  int& count = uids->counts[std::string(base_name)];
  const int n = count++;
  return n == 0 ? std::string(base_name) : StrCat(base_name, "_", n);
}

Output Dense(Output inputs, int64_t units, Activation activation, const DenseOptions& options) {
  if (!inputs) InvalidArgument("dense: the inputs are empty");
  if (units <= 0) InvalidArgument("dense: units must be positive, got ", units);
  if (inputs.shape().dims() != 2) {
    InvalidArgument("dense: inputs must have rank 2 [batch, features], got shape ",
                    inputs.shape().DebugString());
  }
  const int64_t in = KnownLastDim(inputs, "dense");
  Graph& graph = *inputs.graph();
  auto as_default = graph.AsDefault();
  const std::string name = LayerName(graph, options.name, "dense");
  ops::VariableScope var_scope(name, {.auxiliary_name_scope = false});
  auto name_scope = graph.NameScope(name);
  Variable kernel = ops::GetVariable("kernel", TensorShape({in, units}), inputs.dtype(),
                                     options.kernel_initializer, {.trainable = options.trainable});
  Output outputs = ops::MatMul(inputs, kernel);
  return BiasAndActivation(outputs, options.use_bias, units, options.bias_initializer, options.trainable,
                           activation);
}

Output Conv2D(Output inputs, int64_t filters, std::array<int64_t, 2> kernel_size,
              std::array<int64_t, 2> strides, std::string_view padding, Activation activation,
              const Conv2DOptions& options) {
  if (!inputs) InvalidArgument("conv2d: the inputs are empty");
  if (inputs.shape().dims() != 4) {
    InvalidArgument("conv2d: inputs must have rank 4 (NHWC), got shape ", inputs.shape().DebugString());
  }
  if (filters <= 0 || kernel_size[0] <= 0 || kernel_size[1] <= 0 || strides[0] <= 0 || strides[1] <= 0) {
    InvalidArgument("conv2d: filters, kernel_size and strides must be positive");
  }
  const std::string padding_attr = PaddingAttr(padding, "conv2d");
  const int64_t in_channels = KnownLastDim(inputs, "conv2d");
  Graph& graph = *inputs.graph();
  auto as_default = graph.AsDefault();
  const std::string name = LayerName(graph, options.name, "conv2d");
  ops::VariableScope var_scope(name, {.auxiliary_name_scope = false});
  auto name_scope = graph.NameScope(name);
  Variable kernel =
      ops::GetVariable("kernel", TensorShape({kernel_size[0], kernel_size[1], in_channels, filters}),
                       inputs.dtype(), options.kernel_initializer, {.trainable = options.trainable});
  Output outputs = ops::Conv2D(inputs, kernel, {1, strides[0], strides[1], 1}, padding_attr);
  return BiasAndActivation(outputs, options.use_bias, filters, options.bias_initializer, options.trainable,
                           activation);
}

Output MaxPooling2D(Output inputs, std::array<int64_t, 2> pool_size, std::array<int64_t, 2> strides,
                    std::string_view padding, std::string_view name) {
  if (!inputs) InvalidArgument("max_pooling2d: the inputs are empty");
  const std::string padding_attr = PaddingAttr(padding, "max_pooling2d");
  Graph& graph = *inputs.graph();
  auto as_default = graph.AsDefault();
  const std::string layer = LayerName(graph, std::string(name), "max_pooling2d");
  auto name_scope = graph.NameScope(layer);
  return ops::MaxPool(inputs, {1, pool_size[0], pool_size[1], 1}, {1, strides[0], strides[1], 1},
                      padding_attr);
}

Output Flatten(Output inputs, std::string_view name) {
  if (!inputs) InvalidArgument("flatten: the inputs are empty");
  const PartialTensorShape& shape = inputs.shape();
  if (shape.unknown_rank() || shape.dims() < 1) {
    InvalidArgument("flatten: inputs need a known rank of at least 1, got ", shape.DebugString());
  }
  int64_t features = 1;
  for (int d = 1; d < shape.dims(); ++d) {
    if (shape.dim_size(d) < 0) {
      InvalidArgument("flatten: the non-batch dimensions must be known, got ", shape.DebugString());
    }
    features *= shape.dim_size(d);
  }
  Graph& graph = *inputs.graph();
  auto as_default = graph.AsDefault();
  const std::string layer = LayerName(graph, std::string(name), "flatten");
  auto name_scope = graph.NameScope(layer);
  return ops::Reshape(inputs, std::vector<int64_t>{-1, features});
}

Output Dropout(Output inputs, double rate, bool training, std::optional<int64_t> seed,
               std::string_view name) {
  if (!inputs) InvalidArgument("dropout: the inputs are empty");
  if (!(rate >= 0.0 && rate < 1.0)) {
    InvalidArgument("rate must be a scalar tensor or a float in the range [0, 1), got ", rate);
  }
  Graph& graph = *inputs.graph();
  auto as_default = graph.AsDefault();
  const std::string layer = LayerName(graph, std::string(name), "dropout");
  auto layer_scope = graph.NameScope(layer);
  if (!training) return ops::Identity(inputs);
  // tf.nn.dropout: keep where uniform >= rate, scale the kept values by 1 / (1 - rate).
  auto scope = graph.NameScope("dropout");
  const DataType dtype = inputs.dtype();
  auto scalar = [&](double v, std::string_view n) {
    return ops::Const(DispatchNumericType(dtype, "dropout",
                                          [&]<typename T>() { return Tensor::Scalar<T>(static_cast<T>(v)); }),
                      n);
  };
  Output rate_t = scalar(rate, "rate");
  Output noise_shape = ops::Shape(inputs);
  Output random = ops::random::Uniform(noise_shape, 0.0, 1.0, dtype, seed);
  Output keep_mask = ops::GreaterEqual(random, rate_t);
  Output scale = scalar(1.0 / (1.0 - rate), "truediv");
  return inputs * scale * ops::Cast(keep_mask, dtype);
}

}  // namespace flowtrain::layers
