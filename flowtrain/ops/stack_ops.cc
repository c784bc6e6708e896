#include "flowtrain/ops/stack_ops.h"

#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"

namespace flowtrain {

// As TensorArrayV3, the DT_RESOURCE handle keeps the static shape of the old string handle.
FT_REGISTER_OP("StackV2")
    .Input("max_size: int32")
    .Output("handle: resource")
    .Attr("elem_type: type")
    .Attr("stack_name: string = ''")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      c.WithRank(c.input(0), 0);
      c.set_output(0, PartialTensorShape({2}));
    });

FT_REGISTER_OP("StackPushV2")
    .Input("handle: resource")
    .Input("elem: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("swap_memory: bool = false")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) { c.set_output(0, c.input(1)); });

FT_REGISTER_OP("StackPopV2")
    .Input("handle: resource")
    .Output("elem: elem_type")
    .Attr("elem_type: type")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

FT_REGISTER_OP("StackCloseV2").Input("handle: resource").SetIsStateful().SetShapeFn(shape_fns::UnknownShape);

// The stacks carry forward values to a gradient loop; they are not differentiated themselves.
FT_REGISTER_NO_GRADIENT("StackV2");
FT_REGISTER_NO_GRADIENT("StackPushV2");
FT_REGISTER_NO_GRADIENT("StackPopV2");
FT_REGISTER_NO_GRADIENT("StackCloseV2");

namespace ops {

Output StackV2(DataType elem_type, Output max_size, std::string_view name, const std::string& stack_name) {
  return NodeBuilder("StackV2", name)
      .Input(max_size)
      .Attr("elem_type", elem_type)
      .Attr("stack_name", stack_name)
      .Finalize()
      .output(0);
}

Output StackV2(DataType elem_type, int32_t max_size, std::string_view name, const std::string& stack_name) {
  OpNameScope scope(GetDefaultGraph(), name);
  Output size = Const(max_size, "max_size");
  scope.Exit();
  return NodeBuilder("StackV2", scope.op_name())
      .ExactName()
      .Input(size)
      .Attr("elem_type", elem_type)
      .Attr("stack_name", stack_name)
      .Finalize()
      .output(0);
}

Output StackPushV2(Output handle, Output elem, bool swap_memory, std::string_view name) {
  return NodeBuilder("StackPushV2", name)
      .Input(handle)
      .Input(elem)
      .Attr("swap_memory", swap_memory)
      .Finalize()
      .output(0);
}

Output StackPopV2(Output handle, DataType elem_type, std::string_view name) {
  return NodeBuilder("StackPopV2", name).Input(handle).Attr("elem_type", elem_type).Finalize().output(0);
}

Operation StackCloseV2(Output handle, std::string_view name) {
  return NodeBuilder("StackCloseV2", name).Input(handle).Finalize();
}

}  // namespace ops
}  // namespace flowtrain
