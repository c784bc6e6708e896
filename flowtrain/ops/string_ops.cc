#include "flowtrain/ops/string_ops.h"

#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/op_registry.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {

FT_REGISTER_OP("AsString")
    .Input("input: T")
    .Output("output: string")
    .Attr(
        "T: {float, double, half, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool, "
        "string}")
    .Attr("precision: int = -1")
    .Attr("scientific: bool = false")
    .Attr("shortest: bool = false")
    .Attr("width: int = -1")
    .Attr("fill: string = ''")
    .SetShapeFn([](InferenceContext& c) { c.set_output(0, c.input(0)); });

namespace ops {

Output AsString(Output input, const AsStringOptions& options) {
  return NodeBuilder("AsString", options.name)
      .Input(input)
      .Attr("precision", options.precision)
      .Attr("scientific", options.scientific)
      .Attr("shortest", options.shortest)
      .Attr("width", options.width)
      .Attr("fill", options.fill)
      .Finalize();
}

}  // namespace ops
}  // namespace flowtrain
