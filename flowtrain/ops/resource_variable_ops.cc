#include "flowtrain/ops/resource_variable_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"

namespace flowtrain {
namespace {

// The declared shape of the variable behind input `i` of the node being built.
PartialTensorShape InputVariableShape(InferenceContext& c, int i) {
  const Endpoint& in = c.node().input(i);
  return ResourceVariableShape(Output(in.node, in.index));
}

void ReadShape(InferenceContext& c) { c.set_output(0, InputVariableShape(c, 0)); }

// Assigning checks the value against the declared shape, as TF's shape function does with
// the handle's shape data: a mismatch fails while building.
void AssignShape(InferenceContext& c) { c.Merge(InputVariableShape(c, 0), c.input(1)); }

void RequireHandle(const Output& handle, std::string_view op) {
  if (!handle || handle.dtype() != DT_RESOURCE) {
    InvalidArgument(op, " requires a resource variable handle as its first input, got ",
                    handle ? handle.DebugString() : std::string("an empty Output"));
  }
}

}  // namespace

PartialTensorShape ResourceVariableShape(const Output& handle) {
  if (handle && handle.node()->type() == "VarHandleOp") {
    return handle.node()->GetAttr<PartialTensorShape>("shape");
  }
  return PartialTensorShape::Unknown();
}

// Every op here is stateful, as in TF: what it reads or writes lives in the session, so runs
// must never fold, share or cache them.
FT_REGISTER_OP("VarHandleOp")
    .Output("resource: resource")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("debug_name: string = ''")  // TF 2.x's, as allowed_devices: left out on export
    .Attr("dtype: type")
    .Attr("shape: shape")
    .Attr("allowed_devices: list(string) = []")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("ReadVariableOp")
    .Input("resource: resource")
    .Output("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn(ReadShape);

FT_REGISTER_OP("AssignVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .Attr("validate_shape: bool = false")  // TF 2.x; left out on export at its default
    .SetIsStateful()
    .SetShapeFn(AssignShape);

FT_REGISTER_OP("AssignAddVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn(AssignShape);

FT_REGISTER_OP("AssignSubVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn(AssignShape);

FT_REGISTER_OP("ResourceScatterAdd")
    .Input("resource: resource")
    .Input("indices: Tindices")
    .Input("updates: dtype")
    .Attr("dtype: {bfloat16, half, float, double, uint8, int8, int16, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .SetIsStateful();

FT_REGISTER_OP("VarIsInitializedOp")
    .Input("resource: resource")
    .Output("is_initialized: bool")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("DestroyResourceOp")
    .Input("resource: resource")
    .Attr("ignore_lookup_error: bool = true")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

// TF 2.x's SavedModels call it on every restored variable. flowtrain's variables have no
// copy-on-read mode (a sparse update never makes reads copy), so it only checks the variable
// exists.
FT_REGISTER_OP("DisableCopyOnRead")
    .Input("resource: resource")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

FT_REGISTER_OP("VariableShape")
    .Input("input: resource")
    .Output("output: out_type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      const PartialTensorShape shape = InputVariableShape(c, 0);
      c.set_output(0, shape.unknown_rank() ? PartialTensorShape({-1}) : PartialTensorShape({shape.dims()}));
    });

FT_REGISTER_OP("ResourceGather")
    .Input("resource: resource")
    .Input("indices: Tindices")
    .Output("output: dtype")
    .Attr("batch_dims: int = 0")
    .Attr("validate_indices: bool = true")
    .Attr("dtype: type")
    .Attr("Tindices: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      // Refused here, while building or importing, so that kernel and gradient need not.
      if (c.GetAttr<int64_t>("batch_dims") != 0) {
        InvalidArgument("ResourceGather: flowtrain gathers with batch_dims=0 only, got ",
                        c.GetAttr<int64_t>("batch_dims"));
      }
      const PartialTensorShape params = InputVariableShape(c, 0);
      const PartialTensorShape& indices = c.input(1);
      if (params.unknown_rank() || indices.unknown_rank()) {
        c.set_output(0, PartialTensorShape::Unknown());
        return;
      }
      c.WithRankAtLeast(params, 1);
      std::vector<int64_t> dims;
      for (int d = 0; d < indices.dims(); ++d) dims.push_back(indices.dim_size(d));
      for (int d = 1; d < params.dims(); ++d) dims.push_back(params.dim_size(d));
      c.set_output(0, PartialTensorShape(dims));
    });

// The gradient of a read is the gradient of the variable: it goes to the handle, which is
// what optimizers differentiate with respect to (TF's _ReadGrad).
FT_REGISTER_GRADIENT("ReadVariableOp",
                     [](const Operation&, const std::vector<Output>& dy) -> std::vector<Output> {
                       return {dy[0]};
                     });
FT_REGISTER_SPARSE_GRADIENT("ReadVariableOp",
                            [](const Operation&, const std::vector<ops::GradientValue>& dy) {
                              return std::vector<ops::GradientValue>{dy[0]};
                            });

// ResourceGather: IndexedSlices of the variable's shape naming the rows read.
FT_REGISTER_SPARSE_GRADIENT("ResourceGather", [](const Operation& op,
                                                 const std::vector<ops::GradientValue>& dy) {
  return std::vector<ops::GradientValue>{
      ops::GatherRowsGradient(ops::VariableShape(op.input(0)), op.input(1), ops::ToDense(dy[0])), Output()};
});

FT_REGISTER_NO_GRADIENT("VarHandleOp");
FT_REGISTER_NO_GRADIENT("AssignVariableOp");
FT_REGISTER_NO_GRADIENT("AssignAddVariableOp");
FT_REGISTER_NO_GRADIENT("AssignSubVariableOp");
FT_REGISTER_NO_GRADIENT("ResourceScatterAdd");
FT_REGISTER_NO_GRADIENT("VarIsInitializedOp");
FT_REGISTER_NO_GRADIENT("DestroyResourceOp");
FT_REGISTER_NO_GRADIENT("VariableShape");
FT_REGISTER_NO_GRADIENT("DisableCopyOnRead");

namespace ops {

Output VarHandleOp(DataType dtype, const PartialTensorShape& shape, std::string_view name,
                   std::string_view container, std::string_view shared_name) {
  return NodeBuilder("VarHandleOp", name)
      .Attr("dtype", dtype)
      .Attr("shape", shape)
      .Attr("container", container)
      .Attr("shared_name", shared_name)
      .Finalize()
      .output(0);
}

Output ReadVariableOp(Output handle, DataType dtype, std::string_view name) {
  RequireHandle(handle, "ReadVariableOp");
  return NodeBuilder("ReadVariableOp", name).Input(handle).Attr("dtype", dtype).Finalize().output(0);
}

Operation AssignVariableOp(Output handle, Output value, std::string_view name) {
  RequireHandle(handle, "AssignVariableOp");
  return NodeBuilder("AssignVariableOp", name).Input(handle).Input(value).Finalize();
}

Operation AssignAddVariableOp(Output handle, Output value, std::string_view name) {
  RequireHandle(handle, "AssignAddVariableOp");
  return NodeBuilder("AssignAddVariableOp", name).Input(handle).Input(value).Finalize();
}

Operation AssignSubVariableOp(Output handle, Output value, std::string_view name) {
  RequireHandle(handle, "AssignSubVariableOp");
  return NodeBuilder("AssignSubVariableOp", name).Input(handle).Input(value).Finalize();
}

Operation ResourceScatterAdd(Output handle, Output indices, Output updates, std::string_view name) {
  RequireHandle(handle, "ResourceScatterAdd");
  return NodeBuilder("ResourceScatterAdd", name).Input(handle).Input(indices).Input(updates).Finalize();
}

Output VarIsInitializedOp(Output handle, std::string_view name) {
  RequireHandle(handle, "VarIsInitializedOp");
  return NodeBuilder("VarIsInitializedOp", name).Input(handle).Finalize().output(0);
}

Operation DestroyResourceOp(Output handle, bool ignore_lookup_error, std::string_view name) {
  return NodeBuilder("DestroyResourceOp", name)
      .Input(handle)
      .Attr("ignore_lookup_error", ignore_lookup_error)
      .Finalize();
}

Operation DisableCopyOnRead(Output handle, std::string_view name) {
  RequireHandle(handle, "DisableCopyOnRead");
  return NodeBuilder("DisableCopyOnRead", name).Input(handle).Finalize();
}

Output VariableShape(Output handle, DataType out_type, std::string_view name) {
  RequireHandle(handle, "VariableShape");
  return NodeBuilder("VariableShape", name).Input(handle).Attr("out_type", out_type).Finalize().output(0);
}

Output ResourceGather(Output handle, Output indices, DataType dtype, std::string_view name) {
  RequireHandle(handle, "ResourceGather");
  return NodeBuilder("ResourceGather", name)
      .Input(handle)
      .Input(indices)
      .Attr("dtype", dtype)
      .Finalize()
      .output(0);
}

}  // namespace ops
}  // namespace flowtrain
