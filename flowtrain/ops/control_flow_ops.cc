#include "flowtrain/ops/control_flow_ops.h"

#include <algorithm>

#include "flowtrain/core/error.h"

#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {

FT_REGISTER_OP("NoOp").SetShapeFn(shape_fns::UnknownShape);

namespace {

void SwitchShape(InferenceContext& c) {
  c.WithRank(c.input(1), 0);
  c.set_output(0, c.input(0));
  c.set_output(1, c.input(0));
}

// The most specific shape every input is compatible with; value_index is a scalar.
void MergeShape(InferenceContext& c) {
  PartialTensorShape merged = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) merged = merged.MostSpecificCompatibleShape(c.input(i));
  c.set_output(0, merged);
  c.set_output(1, PartialTensorShape({}));
}

void LoopCondShape(InferenceContext& c) { c.set_output(0, c.WithRank(c.input(0), 0)); }

}  // namespace

FT_REGISTER_OP("Switch")
    .Input("data: T")
    .Input("pred: bool")
    .Output("output_false: T")
    .Output("output_true: T")
    .Attr("T: type")
    .SetShapeFn(SwitchShape);

FT_REGISTER_OP("RefSwitch")
    .Input("data: Ref(T)")
    .Input("pred: bool")
    .Output("output_false: Ref(T)")
    .Output("output_true: Ref(T)")
    .Attr("T: type")
    .SetAllowsUninitializedInput()
    .SetShapeFn(SwitchShape);

FT_REGISTER_OP("Merge")
    .Input("inputs: N * T")
    .Output("output: T")
    .Output("value_index: int32")
    .Attr("T: type")
    .Attr("N: int >= 1")
    .SetShapeFn(MergeShape);

FT_REGISTER_OP("RefMerge")
    .Input("inputs: Ref(N * T)")
    .Output("output: Ref(T)")
    .Output("value_index: int32")
    .Attr("T: type")
    .Attr("N: int >= 1")
    .SetAllowsUninitializedInput()
    .SetShapeFn(MergeShape);

FT_REGISTER_OP("Enter")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("frame_name: string")
    .Attr("is_constant: bool = false")
    .Attr("parallel_iterations: int = 10")
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("RefEnter")
    .Input("data: Ref(T)")
    .Output("output: Ref(T)")
    .Attr("T: type")
    .Attr("frame_name: string")
    .Attr("is_constant: bool = false")
    .Attr("parallel_iterations: int = 10")
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("Exit")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("RefExit")
    .Input("data: Ref(T)")
    .Output("output: Ref(T)")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("NextIteration")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("RefNextIteration")
    .Input("data: Ref(T)")
    .Output("output: Ref(T)")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("LoopCond").Input("input: bool").Output("output: bool").SetShapeFn(LoopCondShape);

FT_REGISTER_OP("ControlTrigger").SetShapeFn(shape_fns::UnknownShape);

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

SwitchOutputs Switch(Output data, Output pred, std::string_view name) {
  Operation op = NodeBuilder(data.is_ref() ? "RefSwitch" : "Switch", name).Input(data).Input(pred).Finalize();
  return {Output(op.node(), 0), Output(op.node(), 1)};
}

MergeOutputs Merge(const std::vector<Output>& inputs, std::string_view name) {
  if (inputs.empty()) InvalidArgument("Merge needs at least one input: ", name);
  const bool all_refs = std::all_of(inputs.begin(), inputs.end(), [](const Output& o) { return o.is_ref(); });
  Operation op = NodeBuilder(all_refs ? "RefMerge" : "Merge", name).Input(inputs).Finalize();
  return {Output(op.node(), 0), Output(op.node(), 1)};
}

Output Enter(Output data, std::string_view frame_name, const EnterOptions& options, std::string_view name) {
  return NodeBuilder(data.is_ref() ? "RefEnter" : "Enter", name)
      .Input(data)
      .Attr("frame_name", std::string(frame_name))
      .Attr("is_constant", options.is_constant)
      .Attr("parallel_iterations", options.parallel_iterations)
      .Finalize();
}

Output Exit(Output data, std::string_view name) {
  return NodeBuilder(data.is_ref() ? "RefExit" : "Exit", name).Input(data).Finalize();
}

Output NextIteration(Output data, std::string_view name) {
  return NodeBuilder(data.is_ref() ? "RefNextIteration" : "NextIteration", name).Input(data).Finalize();
}

Output LoopCond(Output input, std::string_view name) {
  return NodeBuilder("LoopCond", name).Input(input).Finalize();
}

Operation ControlTrigger(std::string_view name) { return NodeBuilder("ControlTrigger", name).Finalize(); }

}  // namespace ops
}  // namespace flowtrain
