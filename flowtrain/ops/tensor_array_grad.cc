// Gradients of the TensorArrayV3 ops, as TF registers them (python/ops/tensor_array_grad.py).
// The gradient of a forward array is another array, created by TensorArrayGradV3 and shared
// by every gradient op of one gradient computation (its `source`): a read's gradient is a
// write to it and the other way round, gather pairs with scatter and concat with split. The
// gradients of the flow tensors order those ops as the forward flows order the forward ones.
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/tensor_array_ops.h"

namespace flowtrain {
namespace {

using Grads = std::vector<Output>;

// The gradient computation a gradient tensor belongs to: its name up to the last component
// starting with "gradients" ("gradients", "gradients_1", "outer/gradients"), as TF's
// _GetGradSource.
std::string GradSource(const Output& grad) {
  const std::string& name = grad.op().name();
  size_t end = std::string::npos;
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    if (slash == std::string::npos) slash = name.size();
    if (name.compare(start, 9, "gradients") == 0) end = slash;
    start = slash + 1;
  }
  if (end == std::string::npos) {
    InvalidArgument("Expected op/tensor name to start with gradients (excluding scope), got: ", name);
  }
  return name.substr(0, end);
}

ops::TensorArray GradArray(const Operation& op, DataType dtype, const Output& grad, const Output& flow) {
  return ops::TensorArray::FromHandle(dtype, op.input(0), flow).Grad(GradSource(grad), flow);
}

Grads ReadGrad(const Operation& op, const Grads& dy) {
  if (!dy[0]) return Grads(3);
  const Output flow = op.input(2);
  ops::TensorArray g = GradArray(op, op.GetAttr<DataType>("dtype"), dy[0], flow);
  return Grads{Output(), Output(), g.Write(op.input(1), dy[0]).flow()};
}

Grads WriteGrad(const Operation& op, const Grads& dy) {
  if (!dy[0]) return Grads(4);
  ops::TensorArray g = GradArray(op, op.GetAttr<DataType>("T"), dy[0], dy[0]);
  return Grads{Output(), Output(), g.Read(op.input(1)), dy[0]};
}

Grads GatherGrad(const Operation& op, const Grads& dy) {
  if (!dy[0]) return Grads(3);
  ops::TensorArray g = GradArray(op, op.GetAttr<DataType>("dtype"), dy[0], op.input(2));
  return Grads{Output(), Output(), g.Scatter(op.input(1), dy[0]).flow()};
}

Grads ScatterGrad(const Operation& op, const Grads& dy) {
  if (!dy[0]) return Grads(4);
  ops::TensorArray g = GradArray(op, op.GetAttr<DataType>("T"), dy[0], dy[0]);
  return Grads{Output(), Output(), g.Gather(op.input(1)), dy[0]};
}

Grads ConcatGrad(const Operation& op, const Grads& dy) {
  if (!dy[0]) return Grads(2);
  ops::TensorArray g = GradArray(op, op.GetAttr<DataType>("dtype"), dy[0], op.input(1));
  return Grads{Output(), g.Split(dy[0], op.output(1)).flow()};
}

Grads SplitGrad(const Operation& op, const Grads& dy) {
  if (!dy[0]) return Grads(4);
  ops::TensorArray g = GradArray(op, op.GetAttr<DataType>("T"), dy[0], dy[0]);
  return Grads{Output(), g.Concat(), Output(), dy[0]};
}

}  // namespace

FT_REGISTER_GRADIENT("TensorArrayReadV3", ReadGrad);
FT_REGISTER_GRADIENT("TensorArrayWriteV3", WriteGrad);
FT_REGISTER_GRADIENT("TensorArrayGatherV3", GatherGrad);
FT_REGISTER_GRADIENT("TensorArrayScatterV3", ScatterGrad);
FT_REGISTER_GRADIENT("TensorArrayConcatV3", ConcatGrad);
FT_REGISTER_GRADIENT("TensorArraySplitV3", SplitGrad);
FT_REGISTER_NO_GRADIENT("TensorArrayV3");
FT_REGISTER_NO_GRADIENT("TensorArrayGradV3");
FT_REGISTER_NO_GRADIENT("TensorArraySizeV3");
FT_REGISTER_NO_GRADIENT("TensorArrayCloseV3");

}  // namespace flowtrain
