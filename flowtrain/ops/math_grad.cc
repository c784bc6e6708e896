// Gradients of the math ops of math_ops.cc (registered here rather than beside each op so the
// gradient code, which builds other math ops, reads as one piece).
#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain {
namespace {

using Grads = std::vector<Output>;

Grads AddGrad(const Operation& op, const Grads& dy) {
  auto [gx, gy] = ops::ReduceBroadcastGradients(op.input(0), op.input(1), dy[0], dy[0]);
  return {gx, gy};
}

Grads SubGrad(const Operation& op, const Grads& dy) {
  auto [gx, gy] = ops::ReduceBroadcastGradients(op.input(0), op.input(1), dy[0], ops::Neg(dy[0]));
  return {gx, gy};
}

Grads MulGrad(const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  auto [gx, gy] = ops::ReduceBroadcastGradients(x, y, ops::Mul(dy[0], y), ops::Mul(x, dy[0]));
  return {gx, gy};
}

Grads MatMulGrad(const Operation& op, const Grads& dy) {
  const bool ta = op.GetAttr<bool>("transpose_a");
  const bool tb = op.GetAttr<bool>("transpose_b");
  const Output a = op.input(0);
  const Output b = op.input(1);
  const Output g = dy[0];
  if (!ta && !tb) return {ops::MatMul(g, b, false, true), ops::MatMul(a, g, true, false)};
  if (!ta && tb) return {ops::MatMul(g, b, false, false), ops::MatMul(g, a, true, false)};
  if (ta && !tb) return {ops::MatMul(b, g, false, true), ops::MatMul(a, g, false, false)};
  return {ops::MatMul(b, g, true, true), ops::MatMul(g, a, true, true)};
}

Grads AddNGrad(const Operation& op, const Grads& dy) { return Grads(op.num_inputs(), dy[0]); }

// Reshapes the reduced gradient so it broadcasts back over the reduced dimensions.
Output ExpandReducedGradient(const Operation& op, const Output& grad) {
  const Output input = op.input(0);
  if (op.GetAttr<bool>("keep_dims")) return ops::BroadcastTo(grad, ops::Shape(input));
  // The shape with reduced dimensions set to 1: Shape(x) * keep_mask + reduce_mask, built
  // from the constant axes when they are known, else from the axes at run time.
  const Node* axes_node = op.input(1).node();
  const Tensor* axes = axes_node->constant_value();
  const PartialTensorShape& in_shape = input.shape();
  if (axes == nullptr || in_shape.unknown_rank()) {
    Unimplemented("Gradient of ", op.type(), " '", op.name(),
                  "' needs constant reduction axes and an input of known rank");
  }
  std::vector<int32_t> keep(in_shape.dims(), 1), reduce(in_shape.dims(), 0);
  for (int64_t i = 0; i < axes->NumElements(); ++i) {
    int64_t a = axes->dtype() == DT_INT32 ? axes->flat<int32_t>()[i] : axes->flat<int64_t>()[i];
    if (a < 0) a += in_shape.dims();
    keep[a] = 0;
    reduce[a] = 1;
  }
  Output kept_shape = ops::Add(ops::Mul(ops::Shape(input), ops::Const(Tensor::FromVector<int32_t>(keep))),
                               ops::Const(Tensor::FromVector<int32_t>(reduce)));
  return ops::BroadcastTo(ops::Reshape(grad, kept_shape), ops::Shape(input));
}

Grads SumGrad(const Operation& op, const Grads& dy) {
  return {ExpandReducedGradient(op, dy[0]), Output()};
}

Grads MeanGrad(const Operation& op, const Grads& dy) {
  const Output input = op.input(0);
  Output expanded = ExpandReducedGradient(op, dy[0]);
  // Divide by the number of elements reduced into each output: size(input) / size(output).
  Output count = ops::Cast(ops::FloorDiv(ops::ReduceProd(ops::Shape(input)),
                                    ops::Maximum(ops::ReduceProd(ops::Shape(op.output(0))),
                                                 ops::Const(int32_t{1}))),
                           input.dtype());
  return {ops::RealDiv(expanded, count), Output()};
}

Grads CastGrad(const Operation& op, const Grads& dy) {
  const DataType src = op.input(0).dtype();
  if (!IsFloatingType(src) || !IsFloatingType(op.output(0).dtype())) return {Output()};
  return {ops::Cast(dy[0], src)};
}

}  // namespace

FT_REGISTER_GRADIENT("Add", AddGrad);
FT_REGISTER_GRADIENT("AddV2", AddGrad);
FT_REGISTER_GRADIENT("Sub", SubGrad);
FT_REGISTER_GRADIENT("Mul", MulGrad);
FT_REGISTER_GRADIENT("MatMul", MatMulGrad);
FT_REGISTER_GRADIENT("AddN", AddNGrad);
FT_REGISTER_GRADIENT("Sum", SumGrad);
FT_REGISTER_GRADIENT("Mean", MeanGrad);
FT_REGISTER_GRADIENT("Cast", CastGrad);
FT_REGISTER_GRADIENT("Neg", [](const Operation&, const Grads& dy) { return Grads{ops::Neg(dy[0])}; });
FT_REGISTER_GRADIENT("RealDiv", [](const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  // d(x/y)/dx = 1/y; d(x/y)/dy = -x/y^2.
  auto [gx, gy] = ops::ReduceBroadcastGradients(
      x, y, ops::RealDiv(dy[0], y), ops::Mul(dy[0], ops::RealDiv(ops::RealDiv(ops::Neg(x), y), y)));
  return Grads{gx, gy};
});
FT_REGISTER_NO_GRADIENT("FloorDiv");
FT_REGISTER_NO_GRADIENT("LogicalNot");
FT_REGISTER_NO_GRADIENT("BroadcastGradientArgs");

}  // namespace flowtrain
