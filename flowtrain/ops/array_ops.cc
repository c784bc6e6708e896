#include "flowtrain/ops/array_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {
namespace {

void ConstShape(InferenceContext& c) {
  c.set_output(0, c.node().constant_value()->shape());
}

void PlaceholderShape(InferenceContext& c) { shape_fns::ShapeFromShapeAttr(c); }

void PlaceholderWithDefaultShape(InferenceContext& c) {
  const PartialTensorShape shape = c.GetAttr<PartialTensorShape>("shape");
  if (!shape.IsCompatibleWith(c.input(0))) {
    InvalidArgument("Default input shape ", c.input(0).DebugString(),
                    " is not compatible with the placeholder shape ", shape.DebugString());
  }
  c.set_output(0, shape);
}

void ReshapeShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  PartialTensorShape target = c.InputAsShape(1);
  if (target.unknown_rank()) {
    c.set_output(0, target);
    return;
  }
  int unknown_index = -1;
  int64_t known_product = 1;
  for (int i = 0; i < target.dims(); ++i) {
    if (target.dim_size(i) < 0) {
      if (unknown_index >= 0 && c.input_tensor(1) != nullptr) {
        InvalidArgument("Cannot infer multiple unknown dimensions in shape ", target.DebugString());
      }
      unknown_index = i;
    } else {
      known_product *= target.dim_size(i);
    }
  }
  const int64_t in_elements = in.num_elements();
  if (in_elements >= 0 && c.input_tensor(1) != nullptr) {
    if (unknown_index >= 0) {
      if (known_product == 0 || in_elements % known_product != 0) {
        InvalidArgument("Cannot reshape a tensor with ", in_elements, " elements to shape ",
                        target.DebugString());
      }
      DimVector dims(target.dim_sizes());
      dims[unknown_index] = in_elements / known_product;
      target = PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
    } else if (known_product != in_elements) {
      InvalidArgument("Cannot reshape a tensor with ", in_elements, " elements to shape ",
                      target.DebugString(), " (", known_product, " elements)");
    }
  }
  c.set_output(0, target);
}

void ShapeShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  c.set_output(0, in.unknown_rank() ? PartialTensorShape({-1}) : PartialTensorShape({in.dims()}));
}

void PackShape(InferenceContext& c) {
  PartialTensorShape merged = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) merged = c.Merge(merged, c.input(i));
  if (merged.unknown_rank()) {
    c.set_output(0, merged);
    return;
  }
  int64_t axis = c.GetAttr<int64_t>("axis");
  const int rank = merged.dims() + 1;
  if (axis < -rank || axis >= rank) {
    InvalidArgument("Invalid axis: ", axis, "; must be in [", -rank, ",", rank, ")");
  }
  if (axis < 0) axis += rank;
  DimVector dims(merged.dim_sizes());
  dims.insert(dims.begin() + axis, c.num_inputs());
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void SqueezeShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  if (in.unknown_rank()) {
    c.set_output(0, in);
    return;
  }
  std::vector<int64_t> axes = c.GetAttr<std::vector<int64_t>>("squeeze_dims");
  for (int64_t& a : axes) {
    if (a < -in.dims() || a >= in.dims()) {
      InvalidArgument("Tried to squeeze dim index ", a, " for tensor with ", in.dims(), " dimensions.");
    }
    if (a < 0) a += in.dims();
  }
  DimVector dims;
  for (int i = 0; i < in.dims(); ++i) {
    const bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    const int64_t d = in.dim_size(i);
    if (listed) {
      if (d > 1) InvalidArgument("Can not squeeze dim[", i, "], expected a dimension of 1, got ", d);
      continue;
    }
    if (axes.empty() && d == 1) continue;
    if (axes.empty() && d < 0) {
      c.set_output(0, PartialTensorShape::Unknown());
      return;
    }
    dims.push_back(d);
  }
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void GatherV2Shape(InferenceContext& c) {
  const PartialTensorShape& params = c.input(0);
  const PartialTensorShape& indices = c.input(1);
  const Tensor* axis_tensor = c.input_tensor(2);
  if (params.unknown_rank() || indices.unknown_rank() || axis_tensor == nullptr) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  int64_t axis = axis_tensor->dtype() == DT_INT32 ? axis_tensor->scalar<int32_t>()
                                                  : axis_tensor->scalar<int64_t>();
  if (axis < -params.dims() || axis >= params.dims()) {
    InvalidArgument("Shape must be at least rank ", axis + 1, " but is rank ", params.dims());
  }
  if (axis < 0) axis += params.dims();
  DimVector dims;
  for (int i = 0; i < axis; ++i) dims.push_back(params.dim_size(i));
  for (int64_t d : indices.dim_sizes()) dims.push_back(d);
  for (int i = static_cast<int>(axis) + 1; i < params.dims(); ++i) dims.push_back(params.dim_size(i));
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void WhereShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  c.set_output(0, PartialTensorShape({-1, in.unknown_rank() ? -1 : in.dims()}));
}

}  // namespace

FT_REGISTER_OP("Const")
    .Output("output: dtype")
    .Attr("value: tensor")
    .Attr("dtype: type")
    .SetShapeFn(ConstShape);

FT_REGISTER_OP("Placeholder")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape = <unknown>")
    .SetShapeFn(PlaceholderShape);

FT_REGISTER_OP("PlaceholderWithDefault")
    .Input("input: dtype")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .SetShapeFn(PlaceholderWithDefaultShape);

FT_REGISTER_OP("Identity")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("Reshape")
    .Input("tensor: T")
    .Input("shape: Tshape")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tshape: {int32, int64} = DT_INT32")
    .SetShapeFn(ReshapeShape);

FT_REGISTER_OP("Shape")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(ShapeShape);

FT_REGISTER_OP("Pack")
    .Input("values: N * T")
    .Output("output: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("axis: int = 0")
    .SetShapeFn(PackShape);

FT_REGISTER_OP("Squeeze")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("squeeze_dims: list(int) = []")
    .SetShapeFn(SqueezeShape);

FT_REGISTER_OP("GatherV2")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Input("axis: Taxis")
    .Output("output: Tparams")
    .Attr("batch_dims: int = 0")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .Attr("Taxis: {int32, int64}")
    .SetShapeFn(GatherV2Shape);

FT_REGISTER_OP("Where")
    .Input("input: T")
    .Output("index: int64")
    .Attr("T: {bool, float, double, int32, int64, uint8, int8, int16} = DT_BOOL")
    .SetShapeFn(WhereShape);

namespace ops {

Output Const(const Tensor& value, std::string_view name) {
  if (!value.IsInitialized()) InvalidArgument("Const '", name, "' needs an initialized tensor");
  return NodeBuilder("Const", name).Attr("value", value).Attr("dtype", value.dtype()).Finalize();
}

Output Placeholder(DataType dtype, const PartialTensorShape& shape, std::string_view name) {
  return NodeBuilder("Placeholder", name).Attr("dtype", dtype).Attr("shape", shape).Finalize();
}

Output PlaceholderWithDefault(Output input, const PartialTensorShape& shape,
                              std::string_view name) {
  return NodeBuilder("PlaceholderWithDefault", name)
      .Input(input)
      .Attr("dtype", input.dtype())
      .Attr("shape", shape)
      .Finalize();
}

Output Identity(Output input, std::string_view name) {
  return NodeBuilder("Identity", name).Input(input).Finalize();
}

Output Reshape(Output tensor, Output shape, std::string_view name) {
  return NodeBuilder("Reshape", name).Input(tensor).Input(shape).Finalize();
}

Output Reshape(Output tensor, const std::vector<int64_t>& shape, std::string_view name) {
  std::vector<int32_t> dims(shape.begin(), shape.end());
  OpNameScope scope(*tensor.graph(), name);
  Output shape_const = Const(Tensor::FromVector<int32_t>(dims), "shape");
  scope.Exit();
  return NodeBuilder("Reshape", scope.op_name()).ExactName().Input(tensor).Input(shape_const).Finalize();
}

Output Shape(Output input, DataType out_type, std::string_view name) {
  return NodeBuilder("Shape", name).Input(input).Attr("out_type", out_type).Finalize();
}

Output Pack(const std::vector<Output>& values, int64_t axis, std::string_view name) {
  if (values.empty()) InvalidArgument("Pack '", name, "' needs at least one value");
  return NodeBuilder("Pack", name).Input(values).Attr("axis", axis).Finalize();
}

Output Squeeze(Output input, const std::vector<int64_t>& axis, std::string_view name) {
  return NodeBuilder("Squeeze", name).Input(input).Attr("squeeze_dims", axis).Finalize();
}

Output GatherV2(Output params, Output indices, Output axis, std::string_view name) {
  return NodeBuilder("GatherV2", name).Input(params).Input(indices).Input(axis).Finalize();
}

Output Where(Output condition, std::string_view name) {
  return NodeBuilder("Where", name).Input(condition).Finalize();
}

Output BooleanMask(Output tensor, Output mask, std::string_view name) {
  Graph& g = *tensor.graph();
  auto scope = g.NameScope(name);
  Output indices = Squeeze(Where(mask), {1});
  return GatherV2(tensor, indices, Const(int32_t{0}, "GatherV2/axis"));
}

}  // namespace ops
}  // namespace flowtrain

namespace flowtrain {
namespace {

void FillShape(InferenceContext& c) { c.set_output(0, c.InputAsShape(0)); }

void BroadcastToShape(InferenceContext& c) {
  const PartialTensorShape target = c.InputAsShape(1);
  // Checks compatibility where both are known; the result has the target's shape.
  shape_fns::BroadcastShapes(c.input(0), target);
  c.set_output(0, target);
}

}  // namespace

FT_REGISTER_OP("Fill")
    .Input("dims: index_type")
    .Input("value: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("index_type: {int32, int64} = DT_INT32")
    .SetShapeFn(FillShape);

FT_REGISTER_OP("ZerosLike").Input("x: T").Output("y: T").Attr("T: type").SetShapeFn(shape_fns::UnchangedShape);
FT_REGISTER_OP("OnesLike").Input("x: T").Output("y: T").Attr("T: type").SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("BroadcastTo")
    .Input("input: T")
    .Input("shape: Tidx")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn(BroadcastToShape);

namespace ops {

Output Fill(Output dims, Output value, std::string_view name) {
  return NodeBuilder("Fill", name).Input(dims).Input(value).Finalize();
}
Output ZerosLike(Output x, std::string_view name) {
  return NodeBuilder("ZerosLike", name).Input(x).Finalize();
}
Output OnesLike(Output x, std::string_view name) {
  return NodeBuilder("OnesLike", name).Input(x).Finalize();
}
Output BroadcastTo(Output input, Output shape, std::string_view name) {
  return NodeBuilder("BroadcastTo", name).Input(input).Input(shape).Finalize();
}

}  // namespace ops
}  // namespace flowtrain
