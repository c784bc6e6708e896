// Gradients of the array ops of array_ops.cc.
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain {
namespace {

using Grads = std::vector<Output>;

Grads Passthrough(const Operation&, const Grads& dy) { return {dy[0]}; }

Grads ReshapeGrad(const Operation& op, const Grads& dy) {
  return {ops::Reshape(dy[0], ops::Shape(op.input(0))), Output()};
}

Grads SqueezeGrad(const Operation& op, const Grads& dy) {
  return {ops::Reshape(dy[0], ops::Shape(op.input(0)))};
}

Grads BroadcastToGrad(const Operation& op, const Grads& dy) {
  const Output input = op.input(0);
  Output input_shape = ops::Shape(input);
  Operation args = ops::BroadcastGradientArgs(input_shape, op.input(1));
  return {ops::Reshape(ops::Sum(dy[0], args.output(0), /*keep_dims=*/true), input_shape), Output()};
}

Grads FillGrad(const Operation&, const Grads& dy) {
  return {Output(), ops::ReduceSum(dy[0], {}, false)};
}

}  // namespace

FT_REGISTER_GRADIENT("Identity", Passthrough);
FT_REGISTER_GRADIENT("PlaceholderWithDefault", Passthrough);
FT_REGISTER_GRADIENT("Reshape", ReshapeGrad);
FT_REGISTER_GRADIENT("Squeeze", SqueezeGrad);
FT_REGISTER_GRADIENT("BroadcastTo", BroadcastToGrad);
FT_REGISTER_GRADIENT("Fill", FillGrad);
FT_REGISTER_NO_GRADIENT("Const");
FT_REGISTER_NO_GRADIENT("Placeholder");
FT_REGISTER_NO_GRADIENT("Shape");
FT_REGISTER_NO_GRADIENT("ZerosLike");
FT_REGISTER_NO_GRADIENT("OnesLike");
FT_REGISTER_NO_GRADIENT("Where");
FT_REGISTER_NO_GRADIENT("VariableV2");
FT_REGISTER_NO_GRADIENT("Assign");
FT_REGISTER_NO_GRADIENT("AssignAdd");
FT_REGISTER_NO_GRADIENT("AssignSub");
FT_REGISTER_NO_GRADIENT("IsVariableInitialized");

}  // namespace flowtrain
