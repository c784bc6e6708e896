// Gradients of the nn ops of nn_ops.cc, following TF's nn_grad.py.
#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"

namespace flowtrain {
namespace {

using Grads = std::vector<Output>;

std::vector<int64_t> Ints(const Operation& op, std::string_view attr) {
  return op.GetAttr<std::vector<int64_t>>(attr);
}
std::string Str(const Operation& op, std::string_view attr) { return op.GetAttr<std::string>(attr); }

// `per_row` [batch] scaled into each row of `matrix` [batch, classes].
Output ScaleRows(const Output& per_row, const Output& matrix) {
  return ops::Mul(ops::Reshape(per_row, std::vector<int64_t>{-1, 1}), matrix);
}

// d(softmax)ᵀ·g along the last dimension: (g - sum(g * s, -1)) * s.
Output SoftmaxBackward(const Output& softmax, const Output& grad) {
  Output dot = ops::ReduceSum(ops::Mul(grad, softmax), {-1}, /*keep_dims=*/true);
  return ops::Mul(ops::Sub(grad, dot), softmax);
}

Grads SoftmaxGrad(const Operation& op, const Grads& dy) { return {SoftmaxBackward(op.output(0), dy[0])}; }

Grads LogSoftmaxGrad(const Operation& op, const Grads& dy) {
  // d(log softmax)ᵀ·g = g - sum(g, -1) * softmax; softmax computed from the logits.
  Output softmax = ops::Softmax(op.input(0));
  return {ops::Sub(dy[0], ops::Mul(ops::ReduceSum(dy[0], {-1}, true), softmax))};
}

Grads SoftmaxCrossEntropyGrad(const Operation& op, const Grads& dy) {
  const Output logits = op.input(0);
  const Output grad_loss = dy[0];
  const Output grad_backprop = dy[1];
  Output grad_logits;
  Output grad_labels;
  if (grad_loss) {
    grad_logits = ScaleRows(grad_loss, op.output(1));
    // d(loss)/d(labels) = -log_softmax(logits).
    grad_labels = ScaleRows(grad_loss, ops::Neg(ops::LogSoftmax(logits)));
  }
  if (grad_backprop) {
    // backprop = softmax(logits) - labels.
    Output second = SoftmaxBackward(ops::Softmax(logits), grad_backprop);
    grad_logits = grad_logits ? ops::Add(grad_logits, second) : second;
    Output minus = ops::Neg(grad_backprop);
    grad_labels = grad_labels ? ops::Add(grad_labels, minus) : minus;
  }
  return {grad_logits, grad_labels};
}

Grads SparseSoftmaxCrossEntropyGrad(const Operation& op, const Grads& dy) {
  Output grad_logits;
  if (dy[0]) grad_logits = ScaleRows(dy[0], op.output(1));
  if (dy[1]) {
    Output second = SoftmaxBackward(ops::Softmax(op.input(0)), dy[1]);
    grad_logits = grad_logits ? ops::Add(grad_logits, second) : second;
  }
  return {grad_logits, Output()};
}

Grads Conv2DGrad(const Operation& op, const Grads& dy) {
  const auto strides = Ints(op, "strides");
  const std::string padding = Str(op, "padding");
  return {ops::Conv2DBackpropInput(ops::Shape(op.input(0)), op.input(1), dy[0], strides, padding),
          ops::Conv2DBackpropFilter(op.input(0), ops::Shape(op.input(1)), dy[0], strides, padding)};
}

Grads Conv2DBackpropInputGrad(const Operation& op, const Grads& dy) {
  // out = Conv2DBackpropInput(sizes, filter, g): linear in filter and in g.
  const auto strides = Ints(op, "strides");
  const std::string padding = Str(op, "padding");
  return {Output(), ops::Conv2DBackpropFilter(dy[0], ops::Shape(op.input(1)), op.input(2), strides, padding),
          ops::Conv2D(dy[0], op.input(1), strides, padding)};
}

Grads Conv2DBackpropFilterGrad(const Operation& op, const Grads& dy) {
  const auto strides = Ints(op, "strides");
  const std::string padding = Str(op, "padding");
  return {ops::Conv2DBackpropInput(ops::Shape(op.input(0)), dy[0], op.input(2), strides, padding), Output(),
          ops::Conv2D(op.input(0), dy[0], strides, padding)};
}

Grads MaxPoolGrad(const Operation& op, const Grads& dy) {
  return {ops::MaxPoolGrad(op.input(0), op.output(0), dy[0], Ints(op, "ksize"), Ints(op, "strides"),
                           Str(op, "padding"))};
}

Grads AvgPoolGrad(const Operation& op, const Grads& dy) {
  return {ops::AvgPoolGrad(ops::Shape(op.input(0)), dy[0], Ints(op, "ksize"), Ints(op, "strides"),
                           Str(op, "padding"))};
}

Grads AvgPoolGradGrad(const Operation& op, const Grads& dy) {
  // AvgPoolGrad is linear in its gradient input; its adjoint is AvgPool.
  return {Output(), ops::AvgPool(dy[0], Ints(op, "ksize"), Ints(op, "strides"), Str(op, "padding"))};
}

Grads FusedBatchNormGrad(const Operation& op, const Grads& dy) {
  const bool is_training = op.GetAttr<bool>("is_training");
  NodeBuilder builder("FusedBatchNormGradV3", "FusedBatchNormGradV3");
  // In training the gradient normalises with the batch statistics the forward pass saved;
  // in inference with the mean and variance it was given.
  const Output mean = is_training ? op.output(3) : op.input(3);
  const Output variance = is_training ? op.output(4) : op.input(4);
  Operation grad = builder.Input(dy[0] ? dy[0] : ops::ZerosLike(op.output(0)))
                       .Input(op.input(0))
                       .Input(op.input(1))
                       .Input(mean)
                       .Input(variance)
                       .Input(op.output(5))
                       .Attr("epsilon", op.GetAttr<float>("epsilon"))
                       .Attr("is_training", is_training)
                       .Finalize();
  return {grad.output(0), grad.output(1), grad.output(2), Output(), Output()};
}

}  // namespace

FT_REGISTER_GRADIENT("Relu", [](const Operation& op, const Grads& dy) {
  return Grads{ops::ReluGrad(dy[0], op.output(0))};
});
FT_REGISTER_GRADIENT("Relu6", [](const Operation& op, const Grads& dy) {
  return Grads{ops::Relu6Grad(dy[0], op.input(0))};
});
FT_REGISTER_GRADIENT("Elu", [](const Operation& op, const Grads& dy) {
  return Grads{ops::EluGrad(dy[0], op.output(0))};
});
FT_REGISTER_GRADIENT("LeakyRelu", [](const Operation& op, const Grads& dy) {
  return Grads{ops::LeakyReluGrad(dy[0], op.input(0), op.GetAttr<float>("alpha"))};
});
// The activation gradients are linear in `gradients` with the same mask; no gradient flows to
// the features, which only select the mask (TF does the same).
FT_REGISTER_GRADIENT("ReluGrad", [](const Operation& op, const Grads& dy) {
  return Grads{ops::ReluGrad(dy[0], op.input(1)), ops::ZerosLike(op.input(1))};
});
FT_REGISTER_GRADIENT("Relu6Grad", [](const Operation& op, const Grads& dy) {
  return Grads{ops::Relu6Grad(dy[0], op.input(1)), ops::ZerosLike(op.input(1))};
});
FT_REGISTER_GRADIENT("LeakyReluGrad", [](const Operation& op, const Grads& dy) {
  return Grads{ops::LeakyReluGrad(dy[0], op.input(1), op.GetAttr<float>("alpha")),
               ops::ZerosLike(op.input(1))};
});
FT_REGISTER_GRADIENT("Softmax", SoftmaxGrad);
FT_REGISTER_GRADIENT("LogSoftmax", LogSoftmaxGrad);
FT_REGISTER_GRADIENT("SoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropyGrad);
FT_REGISTER_GRADIENT("SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxCrossEntropyGrad);
FT_REGISTER_GRADIENT("L2Loss", [](const Operation& op, const Grads& dy) {
  return Grads{ops::Mul(op.input(0), dy[0])};
});
FT_REGISTER_GRADIENT("BiasAdd", [](const Operation&, const Grads& dy) {
  return Grads{dy[0], ops::BiasAddGrad(dy[0])};
});
FT_REGISTER_GRADIENT("BiasAddGrad", [](const Operation& op, const Grads& dy) {
  // BiasAddGrad sums over every dimension but the last; its adjoint broadcasts back.
  return Grads{ops::BroadcastTo(dy[0], ops::Shape(op.input(0)))};
});
FT_REGISTER_GRADIENT("Conv2D", Conv2DGrad);
FT_REGISTER_GRADIENT("Conv2DBackpropInput", Conv2DBackpropInputGrad);
FT_REGISTER_GRADIENT("Conv2DBackpropFilter", Conv2DBackpropFilterGrad);
FT_REGISTER_GRADIENT("MaxPool", MaxPoolGrad);
FT_REGISTER_GRADIENT("AvgPool", AvgPoolGrad);
FT_REGISTER_GRADIENT("AvgPoolGrad", AvgPoolGradGrad);
FT_REGISTER_GRADIENT("FusedBatchNormV3", FusedBatchNormGrad);

}  // namespace flowtrain
