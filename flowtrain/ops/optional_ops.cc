// TF's optional ops: a DT_VARIANT scalar that holds a list of tensors or nothing. TF's v2
// cond writes them: its forward If returns every intermediate its gradient needs wrapped in
// an optional, None from the branch that did not compute it (cond_v2), and the gradient
// branches unwrap them.
#include "flowtrain/graph/op_registry.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {
namespace {

void ShapesFromAttr(InferenceContext& c) {
  const auto shapes = c.GetAttr<std::vector<PartialTensorShape>>("output_shapes");
  for (int i = 0; i < c.num_outputs(); ++i) {
    c.set_output(i, i < static_cast<int>(shapes.size()) ? shapes[i] : PartialTensorShape::Unknown());
  }
}

using op_registry_internal::OpRegistrar;
const OpRegistrar kOptionalFromValue = OpDefBuilder("OptionalFromValue")
                                           .Input("components: Toutput_types")
                                           .Output("optional: variant")
                                           .Attr("Toutput_types: list(type) >= 1")
                                           .SetShapeFn(shape_fns::ScalarShape);
const OpRegistrar kOptionalNone =
    OpDefBuilder("OptionalNone").Output("optional: variant").SetShapeFn(shape_fns::ScalarShape);
const OpRegistrar kOptionalHasValue = OpDefBuilder("OptionalHasValue")
                                          .Input("optional: variant")
                                          .Output("has_value: bool")
                                          .SetShapeFn(shape_fns::ScalarShape);
const OpRegistrar kOptionalGetValue = OpDefBuilder("OptionalGetValue")
                                          .Input("optional: variant")
                                          .Output("components: output_types")
                                          .Attr("output_types: list(type) >= 1")
                                          .Attr("output_shapes: list(shape) >= 1")
                                          .SetShapeFn(ShapesFromAttr);

}  // namespace
}  // namespace flowtrain
