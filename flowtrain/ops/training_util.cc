#include "flowtrain/ops/training_util.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/variable_scope.h"

namespace flowtrain::train {
namespace {

Graph& GraphOrDefault(Graph* graph) { return graph != nullptr ? *graph : GetDefaultGraph(); }

}  // namespace

std::optional<Variable> GetGlobalStep(Graph* graph) {
  Graph& g = GraphOrDefault(graph);
  std::vector<Variable> steps = g.GetCollection<Variable>(GraphKeys::kGlobalStep);
  if (steps.size() > 1) {
    FT_LOG(ERROR) << "Multiple tensors in global_step collection.";
    return std::nullopt;
  }
  std::optional<Variable> step;
  if (steps.size() == 1) {
    step = steps.front();
  } else if (Node* node = g.FindNode("global_step")) {
    if (node->type() != "VariableV2") {
      InvalidArgument("Existing \"global_step\" must be a Variable or Tensor: global_step is a ",
                      node->type());
    }
    step = Variable::FromGraph(g, "global_step");
  } else {
    return std::nullopt;
  }
  AssertGlobalStep(*step);
  return step;
}

void AssertGlobalStep(const Variable& global_step) {
  if (!IsIntegerType(global_step.dtype())) {
    InvalidArgument("Existing \"global_step\" does not have integer type: ",
                    DataTypeString(global_step.dtype()));
  }
  const PartialTensorShape& shape = global_step.shape();
  if (shape.IsFullyDefined() && shape.dims() != 0) {
    InvalidArgument("Existing \"global_step\" is not scalar: ", shape.DebugString());
  }
}

Variable CreateGlobalStep(Graph* graph) {
  Graph& g = GraphOrDefault(graph);
  if (GetGlobalStep(&g).has_value()) InvalidArgument("\"global_step\" already exists.");
  auto as_default = g.AsDefault();
  auto root = g.NameScope("");
  return ops::GetVariable(
      GraphKeys::kGlobalStep, TensorShape(), DT_INT64, ops::ZerosInitializer(),
      {.trainable = false, .collections = {GraphKeys::kGlobalVariables, GraphKeys::kGlobalStep}});
}

Variable GetOrCreateGlobalStep(Graph* graph) {
  Graph& g = GraphOrDefault(graph);
  if (std::optional<Variable> step = GetGlobalStep(&g)) return *step;
  return CreateGlobalStep(&g);
}

}  // namespace flowtrain::train
