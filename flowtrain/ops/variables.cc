#include "flowtrain/ops/variables.h"

#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/resource_variable_ops.h"
#include "flowtrain/ops/state_ops.h"

namespace flowtrain {

Variable::Variable(const Tensor& initial_value, const VariableOptions& options) {
  Tensor value = initial_value;
  if (options.dtype != DT_INVALID && options.dtype != value.dtype()) {
    InvalidArgument("Variable '", options.name, "': initial value has type ", DataTypeString(value.dtype()),
                    ", requested ", DataTypeString(options.dtype));
  }
  // A resource variable builds even a constant initial value under "<name>/Initializer/".
  Build(
      GetDefaultGraph(), [&] { return ops::Const(value, "initial_value"); }, options.use_resource, options);
}

Variable::Variable(Output initial_value, const VariableOptions& options) {
  if (!initial_value) InvalidArgument("Variable '", options.name, "': empty initial value");
  Build(
      *initial_value.graph(), [&] { return initial_value; }, false, options);
}

Variable::Variable(const std::function<Output()>& initial_value_fn, const VariableOptions& options) {
  Build(GetDefaultGraph(), initial_value_fn, true, options);
}

namespace {

// A ReadVariableOp of `handle` with the variable's declared shape (TF's reads know it from the
// handle's shape data; the op's own shape function cannot see it).
Output Read(const Output& handle, DataType dtype, const PartialTensorShape& shape) {
  Output read = ops::ReadVariableOp(handle, dtype);
  handle.graph()->SetOutputShape(read.op(), 0, shape);
  return read;
}

}  // namespace

void Variable::Build(Graph& graph, const std::function<Output()>& make_initial_value,
                     bool in_initializer_scope, const VariableOptions& options) {
  // Variables are created outside any control-dependency context (TF's init_scope).
  auto no_controls = graph.ClearControlDependencies();
  OpNameScope scope(graph, options.name);
  const std::string& name = scope.op_name();
  {
    auto as_default = graph.AsDefault();
    ScopeGuard init_scope;
    if (in_initializer_scope) init_scope = graph.NameScope("Initializer");
    initial_value_ = make_initial_value();
  }
  if (!initial_value_) InvalidArgument("Variable '", name, "': the initial value is empty");
  const PartialTensorShape& shape = initial_value_.shape();
  if (options.validate_shape && !shape.IsFullyDefined()) {
    InvalidArgument("initial_value must have a shape specified: ", initial_value_.DebugString());
  }
  const PartialTensorShape var_shape = options.validate_shape ? shape : PartialTensorShape::Unknown();
  if (options.use_resource) {
    is_resource_ = true;
    dtype_ = initial_value_.dtype();
    shape_ = var_shape;
    variable_ = NodeBuilder("VarHandleOp", name)
                    .Graph(&graph)
                    .ExactName()
                    .Attr("shape", var_shape)
                    .Attr("dtype", dtype_)
                    .Attr("container", "")
                    .Attr("shared_name", name)
                    .Finalize()
                    .output(0);
    {
      auto is_initialized = graph.NameScope("IsInitialized");
      ops::VarIsInitializedOp(variable_);
    }
    auto colocate = graph.ColocateWith(variable_.op());
    initializer_ =
        NodeBuilder("AssignVariableOp", "Assign").Input(variable_).Input(initial_value_).Finalize();
    auto read = graph.NameScope("Read");
    snapshot_ = Read(variable_, dtype_, shape_);
  } else {
    variable_ = NodeBuilder("VariableV2", name)
                    .Graph(&graph)
                    .ExactName()
                    .Attr("shape", var_shape)
                    .Attr("dtype", initial_value_.dtype())
                    .Attr("container", "")
                    .Attr("shared_name", "")
                    .Finalize();
    auto colocate = graph.ColocateWith(variable_.op());
    initializer_ = ops::Assign(variable_, initial_value_, options.validate_shape).op();
    snapshot_ = ops::Identity(variable_, "read");
  }
  scope.Exit();
  trainable_ = options.trainable;
  std::vector<std::string> collections = options.collections;
  if (collections.empty()) collections.push_back(GraphKeys::kGlobalVariables);
  if (options.trainable && std::find(collections.begin(), collections.end(),
                                     GraphKeys::kTrainableVariables) == collections.end()) {
    collections.push_back(GraphKeys::kTrainableVariables);
  }
  for (const std::string& key : collections) graph.AddToCollection(key, *this);
}

Output Variable::value() const {
  if (!is_resource_) return snapshot_;
  return Read(variable_, dtype_, shape_);
}

namespace {

// A read of the resource variable `handle` ordered after `update`.
Output ReadAfter(const Output& handle, DataType dtype, const PartialTensorShape& shape,
                 const Operation& update) {
  auto deps = handle.graph()->ControlDependencies({update});
  return Read(handle, dtype, shape);
}

}  // namespace

Output Variable::Assign(Output value, std::string_view name) const {
  if (is_resource_)
    return ReadAfter(variable_, dtype_, shape_, ops::AssignVariableOp(variable_, value, name));
  return ops::Assign(variable_, value, true, true, name);
}
Output Variable::AssignAdd(Output delta, std::string_view name) const {
  if (is_resource_)
    return ReadAfter(variable_, dtype_, shape_, ops::AssignAddVariableOp(variable_, delta, name));
  return ops::AssignAdd(variable_, delta, false, name);
}
Output Variable::AssignSub(Output delta, std::string_view name) const {
  if (is_resource_)
    return ReadAfter(variable_, dtype_, shape_, ops::AssignSubVariableOp(variable_, delta, name));
  return ops::AssignSub(variable_, delta, false, name);
}

Variable Variable::FromGraph(Graph& graph, std::string_view name) {
  Node* var = graph.FindNode(name);
  if (var == nullptr || (var->type() != "VariableV2" && var->type() != "VarHandleOp")) {
    NotFound("No VariableV2 or VarHandleOp node named '", name, "' in the graph");
  }
  Variable v;
  v.variable_ = Output(var, 0);
  if (var->type() == "VarHandleOp") {
    v.is_resource_ = true;
    v.dtype_ = var->GetAttr<DataType>("dtype");
    v.shape_ = var->GetAttr<PartialTensorShape>("shape");
    if (Node* read = graph.FindNode(StrCat(name, "/Read/ReadVariableOp"))) v.snapshot_ = Output(read, 0);
  } else if (Node* read = graph.FindNode(StrCat(name, "/read"))) {
    v.snapshot_ = Output(read, 0);
  }
  if (Node* assign = graph.FindNode(StrCat(name, "/Assign"))) {
    v.initializer_ = Operation(assign);
    v.initial_value_ = Output(assign->input(1).node, assign->input(1).index);
  }
  if (!v.snapshot_) v.snapshot_ = v.variable_;
  return v;
}

namespace ops {

static Graph& GraphOrDefault(Graph* graph) { return graph != nullptr ? *graph : GetDefaultGraph(); }

std::vector<Variable> GlobalVariables(Graph* graph) {
  return GraphOrDefault(graph).GetCollection<Variable>(GraphKeys::kGlobalVariables);
}
std::vector<Variable> LocalVariables(Graph* graph) {
  return GraphOrDefault(graph).GetCollection<Variable>(GraphKeys::kLocalVariables);
}
std::vector<Variable> TrainableVariables(Graph* graph) {
  return GraphOrDefault(graph).GetCollection<Variable>(GraphKeys::kTrainableVariables);
}

Operation VariablesInitializer(const std::vector<Variable>& variables, std::string_view name, Graph* graph) {
  Graph& g = variables.empty() ? GraphOrDefault(graph) : *variables.front().graph();
  std::vector<Operation> initializers;
  for (const Variable& v : variables) initializers.push_back(v.initializer());
  return NodeBuilder("NoOp", name).Graph(&g).ControlInputs(initializers).Finalize();
}

Operation GlobalVariablesInitializer(Graph* graph) {
  return VariablesInitializer(GlobalVariables(graph), "init", &GraphOrDefault(graph));
}

Operation LocalVariablesInitializer(Graph* graph) {
  return VariablesInitializer(LocalVariables(graph), "init", &GraphOrDefault(graph));
}

Output ReportUninitializedVariables(std::optional<std::vector<Variable>> variables, std::string_view name,
                                    Graph* graph) {
  Graph& g = GraphOrDefault(graph);
  std::vector<Variable> list;
  if (variables.has_value()) {
    list = *variables;
  } else {
    list = GlobalVariables(&g);
    for (const Variable& v : LocalVariables(&g)) list.push_back(v);
  }
  auto as_default = g.AsDefault();
  auto scope = g.NameScope(name);
  if (list.empty()) {
    return ops::Const(Tensor(DT_STRING, TensorShape({0})));
  }
  std::vector<Output> initialized;
  std::vector<std::string> names;
  for (const Variable& v : list) {
    initialized.push_back(v.is_resource() ? ops::VarIsInitializedOp(v.ref())
                                          : ops::IsVariableInitialized(v.ref()));
    names.push_back(v.op().name());
  }
  Output mask = ops::LogicalNot(ops::Pack(initialized));
  Output name_tensor = ops::Const(Tensor::FromVector<std::string>(names));
  return ops::BooleanMask(name_tensor, mask);
}

}  // namespace ops
}  // namespace flowtrain
