#include "flowtrain/ops/control_flow_ops.h"

#include <algorithm>

#include "flowtrain/core/error.h"

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

Output WithDependencies(const std::vector<Operation>& dependencies, Output output, std::string_view name) {
  return NodeBuilder("Identity", name).Input(output).ControlInputs(dependencies).Finalize();
}

std::vector<Output> Tuple(const std::vector<Output>& tensors, std::string_view name) {
  std::vector<Operation> gating_ops;
  for (const Output& t : tensors) {
    if (t) gating_ops.push_back(t.op());
  }
  if (gating_ops.empty()) InvalidArgument("Must have at least one Tensor: ", name);
  // Unique ops in creation order, as TF sorts them by id.
  std::sort(gating_ops.begin(), gating_ops.end(),
            [](const Operation& a, const Operation& b) { return a.node()->id() < b.node()->id(); });
  gating_ops.erase(std::unique(gating_ops.begin(), gating_ops.end()), gating_ops.end());
  Graph& graph = *gating_ops.front().graph();
  auto as_default = graph.AsDefault();
  auto scope = graph.NameScope(name);
  const Operation gate = Group(gating_ops);
  std::vector<Output> gated;
  gated.reserve(tensors.size());
  for (const Output& t : tensors) {
    if (!t) {
      gated.emplace_back();
      continue;
    }
    auto colocate = graph.ColocateWith(t.op());
    gated.push_back(WithDependencies({gate}, t));
  }
  return gated;
}

}  // namespace ops
}  // namespace flowtrain
