// Neural-network ops with TF's op names, attrs and default node names: activations, softmax and
// cross-entropy losses, bias add, 2-D convolution and pooling (NHWC), fused batch
// normalization, L2 loss and dropout. Shapes are checked while building, so a channel mismatch
// or a bad padding string is an InvalidArgument naming the op before anything runs.
//
//   Output x = ops::Placeholder(DT_FLOAT, {-1, 28, 28, 1}, "images");
//   Output h = ops::Relu(ops::BiasAdd(ops::Conv2D(x, filter, {1, 1, 1, 1}, "SAME"), bias));
//   Output p = ops::MaxPool(h, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
//   Output loss = ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits));
//
// Layouts are TF's CPU ones: images NHWC, convolution filters [height, width, in, out].
#ifndef FLOWTRAIN_OPS_NN_OPS_H_
#define FLOWTRAIN_OPS_NN_OPS_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"

namespace flowtrain {
namespace ops {

// ---- Activations ----
// Each *Grad op is the backward pass of its activation, as TF's ReluGrad etc.; they are what
// the gradients of the activations build, and rarely needed directly.
Output Relu(Output features, std::string_view name = "Relu");
Output ReluGrad(Output gradients, Output features, std::string_view name = "ReluGrad");
// min(max(features, 0), 6).
Output Relu6(Output features, std::string_view name = "Relu6");
Output Relu6Grad(Output gradients, Output features, std::string_view name = "Relu6Grad");
// exp(features) - 1 where features < 0, else features.
Output Elu(Output features, std::string_view name = "Elu");
// Takes Elu's *outputs*, as TF's EluGrad does.
Output EluGrad(Output gradients, Output outputs, std::string_view name = "EluGrad");
// max(features, alpha * features) for alpha <= 1.
Output LeakyRelu(Output features, float alpha = 0.2f, std::string_view name = "LeakyRelu");
Output LeakyReluGrad(Output gradients, Output features, float alpha = 0.2f,
                     std::string_view name = "LeakyReluGrad");

// ---- Softmax and losses ----
// Softmax over the last dimension (TF's tf.nn.softmax with axis=-1).
Output Softmax(Output logits, std::string_view name = "Softmax");
Output LogSoftmax(Output logits, std::string_view name = "LogSoftmax");

// Both outputs of TF's SoftmaxCrossEntropyWithLogits op: the per-example loss [batch] and the
// gradient of the loss with respect to the logits [batch, classes].
struct SoftmaxCrossEntropyOutputs {
  Output loss;
  Output backprop;
};

// Cross-entropy between `labels` (a probability distribution per row) and softmax(`logits`),
// both [batch, classes]. Arguments in tf.nn.softmax_cross_entropy_with_logits' order (labels
// first), which is the reverse of the raw op's inputs (features, labels).
//
//   auto [loss, backprop] = ops::SoftmaxCrossEntropyWithLogits(one_hot, logits);
SoftmaxCrossEntropyOutputs SoftmaxCrossEntropyWithLogits(
    Output labels, Output logits, std::string_view name = "SoftmaxCrossEntropyWithLogits");

// tf.nn.sparse_softmax_cross_entropy_with_logits: the per-example loss for integer class
// `labels` (int32 or int64, shape logits.shape[:-1]) and `logits` of rank >= 1. A label outside
// [0, classes) is an InvalidArgument when run. The op node is
// "<name>/SparseSoftmaxCrossEntropyWithLogits" as in TF.
Output SparseSoftmaxCrossEntropyWithLogits(Output labels, Output logits,
                                           std::string_view name = "SparseSoftmaxCrossEntropyWithLogits");

// sum(t ** 2) / 2, a scalar (weight decay).
Output L2Loss(Output t, std::string_view name = "L2Loss");

// ---- Bias ----
// value + bias, with `bias` (1-D) added along the last dimension of `value` (NHWC).
Output BiasAdd(Output value, Output bias, std::string_view name = "BiasAdd");
// The sum of `out_backprop` over every dimension but the last: BiasAdd's bias gradient.
Output BiasAddGrad(Output out_backprop, std::string_view name = "BiasAddGrad");

// ---- Convolution and pooling (NHWC) ----
// `strides` and `ksize` have four entries [1, rows, cols, 1]; `padding` is "SAME" (output
// size ceil(in / stride), zero padding split evenly, extra at the end) or "VALID" (no
// padding). Dilations are 1.
Output Conv2D(Output input, Output filter, const std::vector<int64_t>& strides, std::string_view padding,
              std::string_view name = "Conv2D");
// The gradient of Conv2D with respect to its input, whose shape `input_sizes` (int32 [4])
// gives; also the transposed convolution.
Output Conv2DBackpropInput(Output input_sizes, Output filter, Output out_backprop,
                           const std::vector<int64_t>& strides, std::string_view padding,
                           std::string_view name = "Conv2DBackpropInput");
// The gradient of Conv2D with respect to its filter, whose shape `filter_sizes` gives.
Output Conv2DBackpropFilter(Output input, Output filter_sizes, Output out_backprop,
                            const std::vector<int64_t>& strides, std::string_view padding,
                            std::string_view name = "Conv2DBackpropFilter");

Output MaxPool(Output value, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               std::string_view padding, std::string_view name = "MaxPool");
// Routes `grad` to the first maximum of each window of `orig_input`.
Output MaxPoolGrad(Output orig_input, Output orig_output, Output grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, std::string_view padding,
                   std::string_view name = "MaxPoolGrad");
// Averages over the window's elements inside the input (padding is not counted), as TF.
Output AvgPool(Output value, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               std::string_view padding, std::string_view name = "AvgPool");
Output AvgPoolGrad(Output orig_input_shape, Output grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, std::string_view padding,
                   std::string_view name = "AvgPoolGrad");

// ---- Batch normalization ----
struct FusedBatchNormOptions {
  float epsilon = 0.001f;  // tf.nn.fused_batch_norm's default
  // Training: normalise with the batch's statistics (mean/variance inputs may be empty).
  // Inference: normalise with the given mean and variance.
  bool is_training = true;
};

// The outputs of FusedBatchNormV3 a user needs: the normalised `y` and the batch statistics
// (in training, `batch_variance` is the unbiased variance, for moving averages).
struct FusedBatchNormOutputs {
  Output y;
  Output batch_mean;
  Output batch_variance;
  Operation op;  // the node, for its reserve-space outputs
};

// tf.nn.fused_batch_norm over the channels (last dimension) of 4-D NHWC `x`:
// y = scale * (x - mean) / sqrt(variance + epsilon) + offset.
//
//   auto bn = ops::FusedBatchNorm(x, gamma, beta);                          // training
//   auto bn = ops::FusedBatchNorm(x, gamma, beta, moving_mean, moving_var,
//                                 {.is_training = false});                 // inference
FusedBatchNormOutputs FusedBatchNorm(Output x, Output scale, Output offset, Output mean = {},
                                     Output variance = {}, const FusedBatchNormOptions& options = {},
                                     std::string_view name = "FusedBatchNormV3");

// ---- Dropout ----
// tf.nn.dropout (TF 1.15): each element of `x` is kept with probability 1 - rate and scaled
// by 1 / (1 - rate), else zeroed, with a fresh uniform draw every run (seeded as TF seeds
// random ops: graph seed and op `seed`). `rate` must be in [0, 1). The tensor-rate form lets
// one graph train (feed 0.5) and evaluate (feed 0).
//
//   Output h = ops::Dropout(ops::Relu(z), 0.5f, /*seed=*/7);
Output Dropout(Output x, float rate, std::optional<int64_t> seed = std::nullopt,
               std::string_view name = "dropout");
Output Dropout(Output x, Output rate, std::optional<int64_t> seed = std::nullopt,
               std::string_view name = "dropout");

}  // namespace ops
}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_NN_OPS_H_
