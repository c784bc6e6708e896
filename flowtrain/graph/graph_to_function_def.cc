#include "flowtrain/graph/graph_to_function_def.h"

#include <cctype>
#include <map>
#include <set>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {
namespace {

// How many tensors an output argument of `node`'s op holds: its number_attr's value, its
// type_list_attr's length, or one.
int OutputArgSize(const Node& node, const tensorflow::OpDef::ArgDef& arg) {
  if (!arg.number_attr().empty()) return static_cast<int>(node.GetAttrValue(arg.number_attr()).i());
  if (!arg.type_list_attr().empty()) return node.GetAttrValue(arg.type_list_attr()).list().type_size();
  return 1;
}

// `name` as an argument name TF accepts ([a-z][a-z0-9_]*), not in `used`.
std::string ArgumentName(const std::string& name, std::set<std::string>* used) {
  std::string base;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    base.push_back(std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '_');
  }
  if (base.empty() || !std::islower(static_cast<unsigned char>(base[0]))) base = "arg_" + base;
  std::string unique = base;
  for (int i = 1; used->count(unique) != 0; ++i) unique = StrCat(base, "_", i);
  used->insert(unique);
  return unique;
}

}  // namespace

std::string FunctionBodyOutputName(const Node& node, int index) {
  int offset = 0;
  for (const auto& arg : node.op_def().output_arg()) {
    const int size = OutputArgSize(node, arg);
    if (index < offset + size) return StrCat(node.name(), ":", arg.name(), ":", index - offset);
    offset += size;
  }
  InvalidArgument("Node ", node.DebugName(), " has no output ", index);
}

tensorflow::FunctionDef GraphToFunctionDef(const Graph& body, std::string_view name,
                                           const std::vector<Output>& arguments,
                                           const std::vector<Output>& results,
                                           const std::vector<std::string>& output_names) {
  const std::string fname(name);
  auto fail = [&](auto&&... parts) { InvalidArgument("GraphToFunctionDef '", fname, "': ", parts...); };
  if (fname.empty()) fail("the function needs a name");
  if (!output_names.empty() && output_names.size() != results.size()) {
    fail(output_names.size(), " output names for ", results.size(), " results");
  }
  tensorflow::FunctionDef def;
  tensorflow::OpDef* sig = def.mutable_signature();
  sig->set_name(fname);

  // Arguments: the placeholder nodes, by node, with their argument names.
  std::map<const Node*, std::string> argument_of;
  std::set<std::string> used;
  for (const Output& a : arguments) {
    if (!a || a.graph() != &body || a.node()->type() != "Placeholder" || a.index() != 0) {
      fail("argument ", a ? a.name() : std::string("(empty Output)"),
           " is not a Placeholder of the body graph");
    }
    if (argument_of.count(a.node()) != 0) fail("argument ", a.name(), " is given twice");
    const std::string arg_name = ArgumentName(a.node()->name(), &used);
    argument_of[a.node()] = arg_name;
    auto* arg = sig->add_input_arg();
    arg->set_name(arg_name);
    arg->set_type(static_cast<tensorflow::DataType>(a.dtype()));
  }
  auto reference = [&](const Endpoint& e) {
    auto it = argument_of.find(e.node);
    return it != argument_of.end() ? it->second : FunctionBodyOutputName(*e.node, e.index);
  };

  // Body: every other node, in the graph's (topological) order.
  for (const Operation& op : body.operations()) {
    const Node& node = *op.node();
    if (argument_of.count(&node) != 0) continue;
    if (node.type() == "Placeholder" || node.type() == "PlaceholderV2" ||
        node.type() == "PlaceholderWithDefault") {
      fail("node ", node.name(), " is a placeholder but not an argument of the function");
    }
    tensorflow::NodeDef* nd = def.add_node_def();
    nd->set_name(node.name());
    nd->set_op(node.type());
    nd->set_device(node.requested_device());
    for (const Endpoint& e : node.inputs()) nd->add_input(reference(e));
    // A control input on an argument orders nothing inside a function (arguments are ready at
    // the call), so it is dropped, as TF does.
    for (const Node* c : node.control_inputs()) {
      if (argument_of.count(c) == 0) nd->add_input(StrCat("^", c->name()));
    }
    for (const auto& [attr, value] : node.attrs()) (*nd->mutable_attr())[attr] = value;
  }

  // Results.
  for (size_t i = 0; i < results.size(); ++i) {
    const Output& r = results[i];
    if (!r || !r.valid() || r.graph() != &body) {
      fail("result ", i, " (", r ? r.name() : std::string("an empty Output"),
           ") is not an output of the body graph");
    }
    const std::string out_name = output_names.empty() ? StrCat("output_", i) : output_names[i];
    if (used.count(out_name) != 0) fail("result name '", out_name, "' repeats an argument or result name");
    used.insert(out_name);
    auto* arg = sig->add_output_arg();
    arg->set_name(out_name);
    arg->set_type(static_cast<tensorflow::DataType>(r.dtype()));
    (*def.mutable_ret())[out_name] = reference({r.node(), r.index()});
  }
  return def;
}

}  // namespace flowtrain
