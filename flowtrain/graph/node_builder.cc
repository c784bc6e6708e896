#include "flowtrain/graph/node_builder.h"

#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/function_capture.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {
namespace {

bool IsValidNodeName(std::string_view name) {
  if (name.empty()) return false;
  auto ok_first = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.'; };
  auto ok_rest = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '/' ||
           c == '>';
  };
  if (!ok_first(name.front())) return false;
  return std::all_of(name.begin() + 1, name.end(), ok_rest);
}

std::string InputShapesString(const Node& node) {
  std::vector<std::string> shapes;
  for (const Endpoint& e : node.inputs()) shapes.push_back(e.node->output_shape(e.index).DebugString());
  return StrJoin(shapes, ", ");
}

// Resolves type attrs from the inputs and checks fixed types, filling `node_attrs` and
// returning the expected dtype of every (flattened) input.
class SignatureMatcher {
 public:
  SignatureMatcher(const tensorflow::OpDef& def, AttrMap& attrs, std::string_view node_name)
      : def_(def), attrs_(attrs), node_name_(node_name) {}

  void SetType(const std::string& attr, DataType dtype) {
    auto it = attrs_.find(attr);
    if (it == attrs_.end()) {
      attrs_[attr] = MakeAttrValue(dtype);
      return;
    }
    const DataType existing = static_cast<DataType>(it->second.type());
    if (existing != dtype) {
      InvalidArgument("Input to '", node_name_, "' (op: '", def_.name(), "') has type ",
                      DataTypeString(dtype), " that does not match type ", DataTypeString(existing),
                      " of attr '", attr, "'");
    }
  }

  DataType TypeOf(const tensorflow::OpDef::ArgDef& arg) const {
    if (arg.type() != tensorflow::DT_INVALID) return static_cast<DataType>(arg.type());
    auto it = attrs_.find(arg.type_attr());
    if (it == attrs_.end()) {
      InvalidArgument("Op '", def_.name(), "' node '", node_name_, "': attr '", arg.type_attr(),
                      "' is not set and cannot be inferred");
    }
    return static_cast<DataType>(it->second.type());
  }

  std::vector<DataType> ArgTypes(const tensorflow::OpDef::ArgDef& arg) const {
    std::vector<DataType> types;
    if (!arg.type_list_attr().empty()) {
      auto it = attrs_.find(arg.type_list_attr());
      if (it == attrs_.end()) {
        InvalidArgument("Op '", def_.name(), "' node '", node_name_, "': attr '", arg.type_list_attr(),
                        "' is not set and cannot be inferred");
      }
      for (int t : it->second.list().type()) types.push_back(static_cast<DataType>(t));
    } else {
      int64_t count = 1;
      if (!arg.number_attr().empty()) {
        auto it = attrs_.find(arg.number_attr());
        if (it == attrs_.end()) {
          InvalidArgument("Op '", def_.name(), "' node '", node_name_, "': attr '", arg.number_attr(),
                          "' is not set");
        }
        count = it->second.i();
      }
      types.assign(count, TypeOf(arg));
    }
    if (arg.is_ref()) {
      for (DataType& t : types) t = MakeRefType(t);
    }
    return types;
  }

 private:
  const tensorflow::OpDef& def_;
  AttrMap& attrs_;
  std::string_view node_name_;
};

void CheckAttrsAgainstDef(const tensorflow::OpDef& def, AttrMap& attrs, std::string_view node) {
  for (const auto& attr_def : def.attr()) {
    auto it = attrs.find(attr_def.name());
    if (it == attrs.end()) {
      if (!attr_def.has_default_value()) {
        InvalidArgument("NodeDef '", node, "' missing attr '", attr_def.name(), "' from Op<", def.name(),
                        ">");
      }
      attrs[attr_def.name()] = attr_def.default_value();
      continue;
    }
    if (!AttrValueHasType(it->second, attr_def.type())) {
      InvalidArgument("Attr '", attr_def.name(), "' of node '", node, "' (op: '", def.name(), "') has type ",
                      AttrValueTypeName(it->second), ", expected ", attr_def.type());
    }
    if (attr_def.has_allowed_values() && attr_def.type() == "type") {
      const auto& allowed = attr_def.allowed_values().list().type();
      if (std::find(allowed.begin(), allowed.end(), it->second.type()) == allowed.end()) {
        std::vector<std::string> names;
        for (int t : allowed) names.push_back(DataTypeString(static_cast<DataType>(t)));
        InvalidArgument("Value for attr '", attr_def.name(), "' of ",
                        DataTypeString(static_cast<DataType>(it->second.type())),
                        " is not in the list of allowed values: ", StrJoin(names, ", "),
                        "\n\t; NodeDef: ", node, " (op: '", def.name(), "')");
      }
    }
    if (attr_def.has_minimum() && attr_def.type() == "int" && it->second.i() < attr_def.minimum()) {
      InvalidArgument("Value for attr '", attr_def.name(), "' of ", it->second.i(),
                      " must be at least minimum ", attr_def.minimum(), " for node '", node, "'");
    }
  }
  for (const auto& [name, value] : attrs) {
    if (name.starts_with("_")) continue;  // internal attrs (_class, _output_shapes)
    bool known = false;
    for (const auto& attr_def : def.attr()) known = known || attr_def.name() == name;
    if (!known) {
      InvalidArgument("Node '", node, "' (op: '", def.name(), "') has unknown attr '", name, "'");
    }
  }
}

}  // namespace

NodeBuilder::NodeBuilder(std::string_view op_type, std::string_view name)
    : op_type_(op_type), name_(name.empty() ? op_type : name) {
  // TF's rule for `op(name=scope)` inside `with name_scope(...) as scope`: a name ending in
  // "/" is the op's full name, as given.
  if (name_.size() > 1 && name_.back() == '/') {
    name_.pop_back();
    exact_name_ = true;
  }
}

NodeBuilder& NodeBuilder::Graph(flowtrain::Graph* graph) {
  graph_ = graph;
  return *this;
}

NodeBuilder& NodeBuilder::Input(const Output& input) {
  args_.emplace_back(input);
  return *this;
}

NodeBuilder& NodeBuilder::Input(const std::vector<Output>& inputs) {
  args_.emplace_back(inputs);
  return *this;
}

NodeBuilder& NodeBuilder::ControlInput(const Operation& op) {
  control_inputs_.push_back(op);
  return *this;
}

NodeBuilder& NodeBuilder::ControlInputs(const std::vector<Operation>& ops) {
  control_inputs_.insert(control_inputs_.end(), ops.begin(), ops.end());
  return *this;
}

NodeBuilder& NodeBuilder::Device(std::string device) {
  device_ = std::move(device);
  return *this;
}

NodeBuilder& NodeBuilder::ExactName() {
  exact_name_ = true;
  return *this;
}

NodeBuilder& NodeBuilder::IgnoreControlScopes() {
  ignore_control_scopes_ = true;
  return *this;
}

NodeBuilder& NodeBuilder::SetAttr(std::string_view name, AttrValue value) {
  attrs_[std::string(name)] = std::move(value);
  return *this;
}

Operation NodeBuilder::Finalize() {
  const OpRegistration& registration = OpRegistry::Global()->Get(op_type_);
  const tensorflow::OpDef& def = registration.def;

  // A function body being built (Graph::CaptureExternalInputs) takes the tensors of other
  // graphs through its capture function, so that they become inputs of the function's call.
  if (graph_ == nullptr) {
    flowtrain::Graph& default_graph = GetDefaultGraph();
    if (CaptureFunction capture = CaptureFunctionFor(default_graph)) {
      auto map = [&](Output& in) {
        if (in && in.graph() != &default_graph) in = capture(in);
      };
      for (auto& arg : args_) {
        if (Output* in = std::get_if<Output>(&arg)) {
          map(*in);
        } else {
          for (Output& in : std::get<std::vector<Output>>(arg)) map(in);
        }
      }
    }
  }
  // Which graph: the inputs' (all must agree), else the explicit one, else the default.
  const Output* first_input = nullptr;
  auto check_graph = [&](const Output& in) {
    if (!in) InvalidArgument("Input to op '", name_, "' (", op_type_, ") is an empty Output");
    if (first_input == nullptr) {
      first_input = &in;
    } else if (in.graph() != first_input->graph()) {
      InvalidArgument(in.DebugString(), " must be from the same graph as ", first_input->DebugString(), ".");
    }
  };
  for (const auto& arg : args_) {
    if (const Output* in = std::get_if<Output>(&arg)) {
      check_graph(*in);
    } else {
      for (const Output& in : std::get<std::vector<Output>>(arg)) check_graph(in);
    }
  }
  flowtrain::Graph* graph = graph_;
  if (first_input != nullptr) {
    if (graph != nullptr && graph != first_input->graph()) {
      InvalidArgument(first_input->DebugString(), " is not an element of the graph of op '", name_, "'.");
    }
    graph = first_input->graph();
  }
  if (graph == nullptr) graph = &GetDefaultGraph();
  graph->CheckNotFinalized();
  for (const Operation& op : control_inputs_) {
    if (!op || op.graph() != graph) {
      InvalidArgument("Control input to '", name_, "' is not an element of this graph.");
    }
  }

  if (args_.size() != static_cast<size_t>(def.input_arg_size())) {
    InvalidArgument("Op '", op_type_, "' expects ", def.input_arg_size(), " inputs, got ", args_.size(),
                    " for node '", name_, "'");
  }

  auto node = std::unique_ptr<Node>(new Node());
  node->registration_ = &registration;
  node->attrs_ = attrs_;

  // Infer type and length attrs from the inputs.
  SignatureMatcher matcher(def, node->attrs_, name_);
  for (int a = 0; a < def.input_arg_size(); ++a) {
    const auto& arg = def.input_arg(a);
    const bool is_list = !arg.number_attr().empty() || !arg.type_list_attr().empty();
    std::vector<Output> inputs;
    if (const Output* in = std::get_if<Output>(&args_[a])) {
      if (is_list) {
        InvalidArgument("Input '", arg.name(), "' of op '", op_type_, "' expects a list");
      }
      inputs.push_back(*in);
    } else {
      if (!is_list) {
        InvalidArgument("Input '", arg.name(), "' of op '", op_type_, "' expects one tensor, got a list");
      }
      inputs = std::get<std::vector<Output>>(args_[a]);
    }
    if (!arg.number_attr().empty()) {
      node->attrs_[arg.number_attr()] = MakeAttrValue(static_cast<int64_t>(inputs.size()));
    }
    if (!arg.type_list_attr().empty()) {
      std::vector<DataType> types;
      for (const Output& in : inputs) types.push_back(in.dtype());
      if (node->attrs_.count(arg.type_list_attr()) == 0) {
        node->attrs_[arg.type_list_attr()] = MakeAttrValue(types);
      }
    } else if (!arg.type_attr().empty()) {
      for (const Output& in : inputs) matcher.SetType(arg.type_attr(), in.dtype());
    }
    for (const Output& in : inputs) node->inputs_.push_back(Endpoint{in.node(), in.index()});
  }
  node->name_ = name_;  // provisional, for messages
  CheckAttrsAgainstDef(def, node->attrs_, name_);

  // Check input dtypes (and ref-ness) against the signature.
  size_t flat = 0;
  for (const auto& arg : def.input_arg()) {
    for (DataType expected : matcher.ArgTypes(arg)) {
      if (flat >= node->inputs_.size()) {
        InvalidArgument("Op '", op_type_, "' node '", name_, "': too few inputs for '", arg.name(), "'");
      }
      const Endpoint& e = node->inputs_[flat];
      const DataType actual = e.node->output_type(e.index);
      if (BaseType(actual) != BaseType(expected)) {
        InvalidArgument("Input '", arg.name(), "' of '", op_type_, "' Op has type ",
                        DataTypeString(BaseType(actual)), " that does not match expected type of ",
                        DataTypeString(BaseType(expected)), ".");
      }
      if (IsRefType(expected) && !IsRefType(actual)) {
        InvalidArgument("Input '", arg.name(), "' of '", op_type_, "' Op requires l-value input");
      }
      node->input_types_.push_back(expected);
      ++flat;
    }
  }
  if (flat != node->inputs_.size()) {
    InvalidArgument("Op '", op_type_, "' node '", name_, "': list lengths do not match inputs");
  }
  for (const auto& arg : def.output_arg()) {
    for (DataType t : matcher.ArgTypes(arg)) node->output_types_.push_back(t);
  }

  // Name, context, device.
  if (!exact_name_) {
    std::string base = StrCat(graph->CurrentNameScope(), name_);
    if (!IsValidNodeName(base)) InvalidArgument("'", base, "' is not a valid node name");
    node->name_ = graph->UniqueName(base);
  } else if (!IsValidNodeName(name_)) {
    InvalidArgument("'", name_, "' is not a valid node name");
  }
  const Graph::BuildContext context = graph->CurrentBuildContext(op_type_, node->name_);
  std::vector<Node*> controls;
  for (const Operation& op : control_inputs_) controls.push_back(op.node());
  if (!ignore_control_scopes_) {
    for (Node* n : context.control_dependencies) {
      // TF skips a control dependency on an op that is already a data input.
      bool is_input = std::any_of(node->inputs_.begin(), node->inputs_.end(),
                                  [n](const Endpoint& e) { return e.node == n; });
      if (!is_input) controls.push_back(n);
    }
  }
  for (Node* n : controls) {
    if (std::find(node->control_inputs_.begin(), node->control_inputs_.end(), n) ==
        node->control_inputs_.end()) {
      node->control_inputs_.push_back(n);
    }
  }
  node->requested_device_ = device_.empty() ? context.device : device_;
  if (!context.colocation.empty() && node->attrs_.count("_class") == 0) {
    node->attrs_["_class"] = MakeAttrValue(context.colocation);
  }
  if (def.name() == "Const") {
    try {
      node->constant_value_ = node->GetAttr<Tensor>("value");
    } catch (const Error& e) {
      // The value comes from a GraphDef as often as from code: say which node it is.
      ThrowError(e.code(), StrCat(e.what(), " (the value of '", node->name_, "', op: 'Const')"));
    }
  }

  // Shape inference.
  node->output_shapes_.assign(node->output_types_.size(), PartialTensorShape::Unknown());
  if (registration.shape_fn) {
    InferenceContext context_for_shapes(*node);
    try {
      registration.shape_fn(context_for_shapes);
    } catch (const Error& e) {
      ThrowError(e.code(), StrCat(e.what(), " for '", node->name_, "' (op: '", op_type_,
                                  "') with input shapes: ", InputShapesString(*node), "."));
    }
    node->output_shapes_ = context_for_shapes.TakeOutputs();
  }
  Node* added = graph->AddNode(std::move(node));
  graph->NotifyNodeAdded(added);
  return Operation(added);
}

}  // namespace flowtrain
