// Layers in the style of tf.layers (TF 1.x): functions that create their variables with
// GetVariable under a per-graph unique layer name ("dense", "dense_1", ...) and build their ops
// in a name scope of that name, so variables and ops are named exactly as TF names them:
// "dense/kernel", "dense/bias", "dense/MatMul", "dense/BiasAdd", "dense/Relu".
//
//   Output x = ops::Placeholder(DT_FLOAT, {-1, 28, 28, 1});
//   Output h = layers::Conv2D(x, 32, {5, 5}, {1, 1}, "same", ops::Relu);   // conv2d/...
//   h = layers::MaxPooling2D(h, {2, 2}, {2, 2});                           // max_pooling2d/...
//   h = layers::Flatten(h);                                                // flatten/...
//   h = layers::Dense(h, 128, ops::Relu);                                  // dense/...
//   h = layers::Dropout(h, 0.5, /*training=*/true);                         // dropout/...
//   Output logits = layers::Dense(h, 10);                                  // dense_1/...
//
// An activation is any function (Output, name) -> Output; it is called with an empty name so
// the op takes its type as name ("Relu"), as TF's activations do.
#ifndef FLOWTRAIN_OPS_LAYERS_H_
#define FLOWTRAIN_OPS_LAYERS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/init_ops.h"

namespace flowtrain::layers {

using Activation = std::function<Output(Output, std::string_view)>;

// A layer name unique in `graph` for the base name: "dense", then "dense_1", "dense_2" ...
// (Keras' per-graph layer name counter).
std::string UniqueLayerName(Graph& graph, std::string_view base_name);

struct DenseOptions {
  bool use_bias = true;
  // Default: glorot_uniform (tf.get_variable's default).
  ops::Initializer kernel_initializer;
  // Default: zeros.
  ops::Initializer bias_initializer;
  bool trainable = true;
  // The layer's (variable and name) scope; default a unique "dense".
  std::string name;
};

// tf.layers.dense for inputs of rank 2 [batch, in]: activation(inputs @ kernel + bias) with
// kernel [in, units] and bias [units].
Output Dense(Output inputs, int64_t units, Activation activation = nullptr, const DenseOptions& options = {});

struct Conv2DOptions {
  bool use_bias = true;
  ops::Initializer kernel_initializer;
  ops::Initializer bias_initializer;
  bool trainable = true;
  std::string name;  // default: a unique "conv2d"
};

// tf.layers.conv2d on NHWC inputs: kernel [kh, kw, in_channels, filters], padding "valid" or
// "same" (either case).
Output Conv2D(Output inputs, int64_t filters, std::array<int64_t, 2> kernel_size,
              std::array<int64_t, 2> strides = {1, 1}, std::string_view padding = "valid",
              Activation activation = nullptr, const Conv2DOptions& options = {});

// tf.layers.max_pooling2d on NHWC inputs.
Output MaxPooling2D(Output inputs, std::array<int64_t, 2> pool_size, std::array<int64_t, 2> strides,
                    std::string_view padding = "valid", std::string_view name = {});

// tf.layers.flatten: [batch, d1, d2, ...] to [batch, d1 * d2 * ...]; the non-batch dimensions
// must be known.
Output Flatten(Output inputs, std::string_view name = {});

// tf.layers.dropout: when `training`, zeroes each element with probability `rate` and scales
// the rest by 1 / (1 - rate); otherwise the inputs unchanged.
Output Dropout(Output inputs, double rate = 0.5, bool training = false,
               std::optional<int64_t> seed = std::nullopt, std::string_view name = {});

}  // namespace flowtrain::layers

#endif  // FLOWTRAIN_OPS_LAYERS_H_
