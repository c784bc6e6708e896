#include "flowtrain/ops/control_flow_ops.h"

#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {

FT_REGISTER_OP("NoOp").SetShapeFn(shape_fns::UnknownShape);

namespace ops {

Operation NoOp(std::string_view name) { return NodeBuilder("NoOp", name).Finalize(); }

Operation Group(const std::vector<Operation>& inputs, std::string_view name) {
  NodeBuilder builder("NoOp", name);
  builder.ControlInputs(inputs);
  if (!inputs.empty()) builder.Graph(inputs.front().graph());
  return builder.Finalize();
}

Output WithDependencies(const std::vector<Operation>& dependencies, Output output,
                        std::string_view name) {
  return NodeBuilder("Identity", name).Input(output).ControlInputs(dependencies).Finalize();
}

}  // namespace ops
}  // namespace flowtrain
