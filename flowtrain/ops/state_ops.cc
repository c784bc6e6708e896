#include "flowtrain/ops/state_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {
namespace {

void AssignShape(InferenceContext& c) {
  if (c.GetAttr<bool>("validate_shape")) {
    c.set_output(0, c.Merge(c.input(0), c.input(1)));
  } else {
    c.set_output(0, c.input(1));
  }
}

void AssignUpdateShape(InferenceContext& c) { c.set_output(0, c.Merge(c.input(0), c.input(1))); }

void RequireRef(const Output& ref, std::string_view op) {
  if (!ref || !ref.is_ref()) {
    InvalidArgument(op, " requires a variable (a reference tensor) as its first input, got ",
                    ref ? ref.DebugString() : std::string("an empty Output"));
  }
}

// ScatterAdd and ScatterSub: `op` of the rows `indices` of `ref` with `updates`.
Output ScatterUpdate(std::string_view op, Output ref, Output indices, Output updates, bool use_locking,
                     std::string_view name) {
  RequireRef(ref, op);
  return NodeBuilder(op, name)
      .Input(ref)
      .Input(indices)
      .Input(updates)
      .Attr("use_locking", use_locking)
      .Finalize();
}

}  // namespace

FT_REGISTER_OP("VariableV2")
    .Output("ref: Ref(dtype)")
    .Attr("shape: shape")
    .Attr("dtype: type")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ShapeFromShapeAttr);

FT_REGISTER_OP("CountUpTo")
    .Input("ref: Ref(T)")
    .Output("output: T")
    .Attr("limit: int")
    .Attr("T: {int32, int64}")
    .SetShapeFn([](InferenceContext& c) { c.set_output(0, c.WithRank(c.input(0), 0)); });

FT_REGISTER_OP("Assign")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: type")
    .Attr("validate_shape: bool = true")
    .Attr("use_locking: bool = true")
    .SetAllowsUninitializedInput()
    .SetShapeFn(AssignShape);

#define FT_ASSIGN_UPDATE_OP(Name)                                                   \
  FT_REGISTER_OP(Name)                                                              \
      .Input("ref: Ref(T)")                                                         \
      .Input("value: T")                                                            \
      .Output("output_ref: Ref(T)")                                                 \
      .Attr("T: {bfloat16, half, float, double, uint8, int8, int16, int32, int64}") \
      .Attr("use_locking: bool = false")                                            \
      .SetShapeFn(AssignUpdateShape)
FT_ASSIGN_UPDATE_OP("AssignAdd");
FT_ASSIGN_UPDATE_OP("AssignSub");

// ScatterAdd and ScatterSub: the rows `indices` of `ref` plus (minus) the rows of `updates`.
#define FT_SCATTER_UPDATE_OP(Name)                                                  \
  FT_REGISTER_OP(Name)                                                              \
      .Input("ref: Ref(T)")                                                         \
      .Input("indices: Tindices")                                                   \
      .Input("updates: T")                                                          \
      .Output("output_ref: Ref(T)")                                                 \
      .Attr("T: {bfloat16, half, float, double, uint8, int8, int16, int32, int64}") \
      .Attr("Tindices: {int32, int64}")                                             \
      .Attr("use_locking: bool = false")                                            \
      .SetShapeFn([](InferenceContext& c) { c.set_output(0, c.input(0)); })
FT_SCATTER_UPDATE_OP("ScatterAdd");
FT_SCATTER_UPDATE_OP("ScatterSub");
#undef FT_ASSIGN_UPDATE_OP

FT_REGISTER_OP("IsVariableInitialized")
    .Input("ref: Ref(dtype)")
    .Output("is_initialized: bool")
    .Attr("dtype: type")
    .SetAllowsUninitializedInput()
    .SetShapeFn(shape_fns::ScalarShape);

namespace ops {

Output VariableV2(const PartialTensorShape& shape, DataType dtype, std::string_view name,
                  std::string_view container, std::string_view shared_name) {
  return NodeBuilder("VariableV2", name)
      .Attr("shape", shape)
      .Attr("dtype", dtype)
      .Attr("container", container)
      .Attr("shared_name", shared_name)
      .Finalize();
}

Output Assign(Output ref, Output value, bool validate_shape, bool use_locking, std::string_view name) {
  RequireRef(ref, "Assign");
  return NodeBuilder("Assign", name)
      .Input(ref)
      .Input(value)
      .Attr("validate_shape", validate_shape)
      .Attr("use_locking", use_locking)
      .Finalize();
}

Output AssignAdd(Output ref, Output value, bool use_locking, std::string_view name) {
  RequireRef(ref, "AssignAdd");
  return NodeBuilder("AssignAdd", name).Input(ref).Input(value).Attr("use_locking", use_locking).Finalize();
}

Output CountUpTo(Output ref, int64_t limit, std::string_view name) {
  RequireRef(ref, "CountUpTo");
  return NodeBuilder("CountUpTo", name).Input(ref).Attr("limit", limit).Finalize();
}

Output AssignSub(Output ref, Output value, bool use_locking, std::string_view name) {
  RequireRef(ref, "AssignSub");
  return NodeBuilder("AssignSub", name).Input(ref).Input(value).Attr("use_locking", use_locking).Finalize();
}

Output ScatterAdd(Output ref, Output indices, Output updates, bool use_locking, std::string_view name) {
  return ScatterUpdate("ScatterAdd", ref, indices, updates, use_locking, name);
}

Output ScatterSub(Output ref, Output indices, Output updates, bool use_locking, std::string_view name) {
  return ScatterUpdate("ScatterSub", ref, indices, updates, use_locking, name);
}

Output IsVariableInitialized(Output ref, std::string_view name) {
  RequireRef(ref, "IsVariableInitialized");
  return NodeBuilder("IsVariableInitialized", name).Input(ref).Attr("dtype", ref.dtype()).Finalize();
}

}  // namespace ops
}  // namespace flowtrain
