#include "flowtrain/runtime/internal/function_lowering.h"

#include <deque>
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/graph/op_registry.h"

namespace flowtrain {
namespace {

using AttrMap = google::protobuf::Map<std::string, tensorflow::AttrValue>;

bool IsPartitionedCall(const std::string& op) {
  return op == "PartitionedCall" || op == "StatefulPartitionedCall";
}
bool IsIf(const std::string& op) { return op == "If" || op == "StatelessIf"; }
bool IsWhile(const std::string& op) { return op == "While" || op == "StatelessWhile"; }
bool IsCase(const std::string& op) { return op == "Case" || op == "StatelessCase"; }
bool IsFunctionalOp(const std::string& op) {
  return IsPartitionedCall(op) || IsIf(op) || IsWhile(op) || IsCase(op);
}

bool IsControl(const std::string& input) { return !input.empty() && input[0] == '^'; }

std::string Out(const std::string& node, int index) { return StrCat(node, ":", index); }

std::vector<std::string> SplitColons(const std::string& ref) {
  std::vector<std::string> parts(1);
  for (char c : ref) {
    if (c == ':') {
      parts.emplace_back();
    } else {
      parts.back().push_back(c);
    }
  }
  return parts;
}

// `s` as an index; -1 when it is not a plain non-negative number.
int ParseIndex(const std::string& s) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(s);
}

tensorflow::AttrValue TypeAttr(DataType t) {
  tensorflow::AttrValue v;
  v.set_type(static_cast<tensorflow::DataType>(t));
  return v;
}

// A body or signature's dtype list, resolved against attrs.
using Types = std::vector<DataType>;

// What a lowered piece of a function yields: its results and the nodes its control_ret names.
struct Body {
  std::vector<std::string> outputs;
  std::vector<std::string> control_rets;  // node names
};

// Emits a branch inside a lowered cond: gets the inputs as the branch sees them and the
// branch's pivot, returns the branch's results.
using BranchEmitter = std::function<Body(const std::string& prefix, const std::vector<std::string>& inputs,
                                         const std::string& pivot)>;

// What a graph's library may make the lowering build, so that a few hundred bytes of GraphDef
// cannot exhaust the stack (each level of nesting is a few C++ frames) or the memory (a chain
// of functions each calling the next twice inlines 2^depth bodies). Models TF writes nest
// calls a few levels deep and inline to far fewer nodes.
constexpr size_t kMaxCallDepth = 100;
constexpr size_t kMaxInlinedNodes = size_t{1} << 20;

class Lowering {
 public:
  explicit Lowering(const tensorflow::GraphDef& in) : in_(in) {
    for (const auto& f : in.library().function()) functions_.emplace(f.signature().name(), &f);
    for (const auto& n : in.node()) names_.insert(n.name());
  }

  tensorflow::GraphDef Run() {
    tensorflow::GraphDef out;
    *out.mutable_versions() = in_.versions();
    *out.mutable_library() = in_.library();
    CheckInlinedSize();
    for (const auto& n : in_.node()) LowerNode(n);
    for (auto& n : nodes_) *out.add_node() = std::move(n);
    return out;
  }

  static void SignatureTypes(const tensorflow::FunctionDef& f, const AttrMap& attrs, Types* inputs,
                             Types* outputs) {
    const AttrMap all = WithDefaults(f.signature(), attrs);
    const std::string what = StrCat("Function '", f.signature().name(), "'");
    inputs->clear();
    outputs->clear();
    for (const auto& arg : f.signature().input_arg()) {
      for (DataType t : ArgTypes(arg, all, what)) inputs->push_back(t);
    }
    for (const auto& arg : f.signature().output_arg()) {
      for (DataType t : ArgTypes(arg, all, what)) outputs->push_back(t);
    }
  }

 private:
  const tensorflow::FunctionDef* FindFunction(const std::string& name) const {
    auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : it->second;
  }

  // What inlining a function makes: its body nodes, its nested calls' included (counting stops
  // past kMaxInlinedNodes), and how deep its calls nest.
  struct InlinedSize {
    size_t nodes = 0;
    size_t depth = 0;
  };

  // Refuses, before anything is built, a graph whose calls nest deeper than kMaxCallDepth
  // (InvalidArgument naming the chain) or inline more than kMaxInlinedNodes body nodes
  // (ResourceExhausted). Missing and recursive functions are left for Inline to report.
  void CheckInlinedSize() {
    size_t nodes = 0;
    for (const auto& n : in_.node()) {
      nodes = std::min(nodes + OfCallees(n.name(), n).nodes, kMaxInlinedNodes + 1);
      if (nodes > kMaxInlinedNodes) {
        ResourceExhausted("Inlining the graph's function calls would make more than ", kMaxInlinedNodes,
                          " nodes (reached at node '", n.name(), "')");
      }
    }
  }

  // The inlined size of the functions node `n` calls (by op name or through func attrs).
  InlinedSize OfCallees(const std::string& call, const tensorflow::NodeDef& n) {
    InlinedSize total;
    auto add = [&](const std::string& function) {
      const InlinedSize f = Of(call, function);
      total.nodes = std::min(total.nodes + f.nodes, kMaxInlinedNodes + 1);
      total.depth = std::max(total.depth, f.depth);
    };
    if (FindFunction(n.op()) != nullptr) add(n.op());
    for (const auto& [_, v] : n.attr()) {
      if (v.value_case() == tensorflow::AttrValue::kFunc) add(v.func().name());
      if (v.value_case() == tensorflow::AttrValue::kList) {
        for (const auto& f : v.list().func()) add(f.name());
      }
    }
    return total;
  }

  // The inlined size of `function`, called (at the outermost level) by node `call`.
  InlinedSize Of(const std::string& call, const std::string& function) {
    const tensorflow::FunctionDef* f = FindFunction(function);
    if (f == nullptr || std::find(stack_.begin(), stack_.end(), function) != stack_.end()) return {};
    InlinedSize size;
    if (auto memo = inlined_sizes_.find(function); memo != inlined_sizes_.end()) {
      size = memo->second;
    } else {
      if (stack_.size() >= kMaxCallDepth) TooDeep(call, function);
      stack_.push_back(function);
      for (const auto& n : f->node_def()) {
        const InlinedSize callees = OfCallees(call, n);
        size.nodes = std::min(size.nodes + 1 + callees.nodes, kMaxInlinedNodes + 1);
        size.depth = std::max(size.depth, callees.depth);
      }
      ++size.depth;
      stack_.pop_back();
      inlined_sizes_.emplace(function, size);
    }
    if (stack_.size() + size.depth > kMaxCallDepth) TooDeep(call, function);
    return size;
  }

  [[noreturn]] void TooDeep(const std::string& call, const std::string& function) const {
    InvalidArgument("Node '", call, "' nests function calls more than ", kMaxCallDepth,
                    " deep, too deep to inline (from '", stack_.empty() ? function : stack_.front(), "' to '",
                    function, "')");
  }

  // A name no node has yet, `base` when free.
  std::string Unique(const std::string& base) {
    std::string name = base;
    for (int i = 1; names_.count(name) != 0; ++i) name = StrCat(base, "_", i);
    names_.insert(name);
    return name;
  }

  tensorflow::NodeDef& Emit(const std::string& name, const std::string& op, const std::string& device) {
    tensorflow::NodeDef& n = nodes_.emplace_back();
    n.set_name(name);
    n.set_op(op);
    n.set_device(device);
    return n;
  }

  // Emits a node forwarding `input` (of dtype t), named after `base`; returns its output.
  std::string Identity(const std::string& base, const std::string& input, DataType t,
                       const std::string& device, const std::vector<std::string>& controls = {}) {
    tensorflow::NodeDef& n = Emit(Unique(base), "Identity", device);
    n.add_input(input);
    for (const std::string& c : controls) n.add_input("^" + c);
    (*n.mutable_attr())["T"] = TypeAttr(t);
    return Out(n.name(), 0);
  }

  // Copies `n`, or lowers it when it calls a function.
  void LowerNode(const tensorflow::NodeDef& n) {
    if (IsPartitionedCall(n.op())) {
      auto f = n.attr().find("f");
      if (f == n.attr().end() || f->second.value_case() != tensorflow::AttrValue::kFunc) {
        InvalidArgument("Node '", n.name(), "' (", n.op(), ") has no function attr 'f'");
      }
      LowerNamedCall(n, f->second.func().name(), f->second.func().attr());
    } else if (IsIf(n.op())) {
      LowerIf(n);
    } else if (IsWhile(n.op())) {
      LowerWhile(n);
    } else if (IsCase(n.op())) {
      LowerCase(n);
    } else if (FindFunction(n.op()) != nullptr) {
      LowerNamedCall(n, n.op(), n.attr());
    } else {
      nodes_.push_back(n);
    }
  }

  static void Split(const tensorflow::NodeDef& n, std::vector<std::string>* data,
                    std::vector<std::string>* controls) {
    for (const std::string& in : n.input()) {
      if (IsControl(in)) {
        controls->push_back(in.substr(1));
      } else {
        data->push_back(in);
      }
    }
  }

  static const tensorflow::AttrValue& GetAttr(const tensorflow::NodeDef& n, const std::string& name) {
    auto it = n.attr().find(name);
    if (it == n.attr().end())
      InvalidArgument("Node '", n.name(), "' (", n.op(), ") has no attr '", name, "'");
    return it->second;
  }

  static Types TypeList(const tensorflow::NodeDef& n, const std::string& attr) {
    Types types;
    for (int t : GetAttr(n, attr).list().type()) types.push_back(static_cast<DataType>(t));
    return types;
  }

  // The dtypes `arg` stands for under `attrs` (a function's or an op's argument).
  static Types ArgTypes(const tensorflow::OpDef::ArgDef& arg, const AttrMap& attrs, const std::string& what) {
    auto attr = [&](const std::string& name) -> const tensorflow::AttrValue& {
      auto it = attrs.find(name);
      if (it == attrs.end())
        InvalidArgument(what, ": no value for attr '", name, "' of argument '", arg.name(), "'");
      return it->second;
    };
    Types types;
    if (!arg.type_list_attr().empty()) {
      for (int t : attr(arg.type_list_attr()).list().type()) types.push_back(static_cast<DataType>(t));
      return types;
    }
    const DataType t = arg.type_attr().empty() ? static_cast<DataType>(arg.type())
                                               : static_cast<DataType>(attr(arg.type_attr()).type());
    const int64_t count = arg.number_attr().empty() ? 1 : attr(arg.number_attr()).i();
    types.assign(static_cast<size_t>(std::max<int64_t>(count, 0)), t);
    return types;
  }

  // `attrs` with the defaults of `sig`'s attrs it lacks.
  static AttrMap WithDefaults(const tensorflow::OpDef& sig, const AttrMap& attrs) {
    AttrMap all = attrs;
    for (const auto& a : sig.attr()) {
      if (a.has_default_value() && all.count(a.name()) == 0) all[a.name()] = a.default_value();
    }
    return all;
  }

  // Replaces every "$name" placeholder in `v` (and in the attrs of functions it names).
  static void Substitute(tensorflow::AttrValue* v, const AttrMap& attrs, const std::string& what) {
    switch (v->value_case()) {
      case tensorflow::AttrValue::kPlaceholder: {
        auto it = attrs.find(v->placeholder());
        if (it == attrs.end())
          InvalidArgument(what, ": no value for attr placeholder '$", v->placeholder(), "'");
        *v = it->second;
        break;
      }
      case tensorflow::AttrValue::kFunc:
        for (auto& [_, a] : *v->mutable_func()->mutable_attr()) Substitute(&a, attrs, what);
        break;
      case tensorflow::AttrValue::kList:
        for (auto& f : *v->mutable_list()->mutable_func()) {
          for (auto& [_, a] : *f.mutable_attr()) Substitute(&a, attrs, what);
        }
        break;
      default:
        break;
    }
  }

  // The signature of the op or function `n` runs.
  const tensorflow::OpDef& SignatureOf(const tensorflow::NodeDef& n, const std::string& what) const {
    if (const tensorflow::FunctionDef* f = FindFunction(n.op())) return f->signature();
    const OpRegistration* op = OpRegistry::Global()->LookUp(n.op());
    if (op == nullptr) InvalidArgument(what, ": body node '", n.name(), "' has unknown op '", n.op(), "'");
    return op->def;
  }

  // Inlines `function` with `attrs` on `inputs`: emits its body under `prefix`/ and returns
  // its results (Identity nodes "<prefix>/output/_<i>", waiting for the control_ret nodes
  // when `outputs_wait`). `controls` gate the body. `call` names the node for errors.
  Body Inline(const std::string& call, const std::string& prefix, const std::string& function,
              const AttrMap& call_attrs, const std::vector<std::string>& inputs, const Types* input_types,
              const Types* output_types, const std::vector<std::string>& controls, const std::string& device,
              bool outputs_wait) {
    const tensorflow::FunctionDef* f = FindFunction(function);
    if (f == nullptr) {
      InvalidArgument("Node '", call, "' calls function '", function,
                      "', which is not in the graph's library");
    }
    for (const std::string& active : stack_) {
      if (active == function) {
        InvalidArgument("Node '", call, "' calls function '", function,
                        "' from within itself: recursive functions cannot be inlined");
      }
    }
    const std::string what = StrCat("Node '", call, "' calling function '", function, "'");
    const tensorflow::OpDef& sig = f->signature();
    const AttrMap attrs = WithDefaults(sig, call_attrs);

    // Arguments: one Identity per flat input.
    std::map<std::string, std::vector<std::string>> args;
    Types in_types;
    std::vector<std::pair<std::string, Types>> arg_types;
    for (const auto& arg : sig.input_arg()) {
      Types t = ArgTypes(arg, attrs, what);
      in_types.insert(in_types.end(), t.begin(), t.end());
      arg_types.emplace_back(arg.name(), std::move(t));
    }
    if (in_types.size() != inputs.size()) {
      InvalidArgument(what, ": the function takes ", in_types.size(), " inputs but the node gives ",
                      inputs.size());
    }
    if (input_types != nullptr && *input_types != in_types) {
      InvalidArgument(what, ": the node's input dtypes ", TypesString(*input_types),
                      " differ from the function's ", TypesString(in_types));
    }
    std::string input_control;
    if (!controls.empty()) {
      tensorflow::NodeDef& nc = Emit(Unique(prefix + "/input_control_node"), "NoOp", device);
      for (const std::string& c : controls) nc.add_input("^" + c);
      input_control = nc.name();
    }
    std::vector<std::string> gate;
    if (!input_control.empty()) gate.push_back(input_control);
    size_t flat = 0;
    for (const auto& [name, types] : arg_types) {
      std::vector<std::string>& ids = args[name];
      for (DataType t : types) {
        ids.push_back(Identity(StrCat(prefix, "/input/_", flat), inputs[flat], t, device, gate));
        ++flat;
      }
    }

    // Body nodes, renamed; references resolved once every name is known.
    std::map<std::string, std::string> renamed;
    for (const auto& n : f->node_def()) renamed[n.name()] = Unique(StrCat(prefix, "/", n.name()));
    std::map<std::string, const tensorflow::NodeDef*> body;
    for (const auto& n : f->node_def()) body[n.name()] = &n;
    std::map<std::string, tensorflow::NodeDef> instantiated;  // attrs substituted, by body name
    for (const auto& n : f->node_def()) {
      tensorflow::NodeDef copy = n;
      for (auto& [_, v] : *copy.mutable_attr()) Substitute(&v, attrs, what);
      instantiated.emplace(n.name(), std::move(copy));
    }
    // "arg", "arg:i" or "node:output_arg:i" as a graph endpoint (or several, for a list arg).
    auto resolve = [&](const std::string& ref) -> std::vector<std::string> {
      const std::vector<std::string> parts = SplitColons(ref);
      if (parts.size() <= 2 && args.count(parts[0]) != 0) {
        const std::vector<std::string>& a = args.at(parts[0]);
        if (parts.size() == 1) return a;
        const int i = ParseIndex(parts[1]);
        if (i < 0 || i >= static_cast<int>(a.size()))
          InvalidArgument(what, ": '", ref, "' is beyond argument '", parts[0], "'");
        return {a[i]};
      }
      auto node = instantiated.find(parts[0]);
      if (parts.size() != 3 || node == instantiated.end()) {
        InvalidArgument(what, ": '", ref, "' names no argument or body node output");
      }
      const tensorflow::NodeDef& n = node->second;
      const tensorflow::OpDef& op = SignatureOf(n, what);
      const AttrMap node_attrs = WithDefaults(op, n.attr());
      int offset = 0;
      for (const auto& out : op.output_arg()) {
        const int size = static_cast<int>(ArgTypes(out, node_attrs, what).size());
        if (out.name() == parts[1]) {
          const int i = ParseIndex(parts[2]);
          if (i < 0 || i >= size) InvalidArgument(what, ": '", ref, "' is beyond output '", parts[1], "'");
          return {Out(renamed.at(parts[0]), offset + i)};
        }
        offset += size;
      }
      InvalidArgument(what, ": body node '", parts[0], "' (", n.op(), ") has no output '", parts[1], "'");
    };

    stack_.push_back(function);
    for (const auto& fn : f->node_def()) {
      tensorflow::NodeDef n = instantiated.at(fn.name());
      n.set_name(renamed.at(fn.name()));
      if (n.device().empty()) n.set_device(device);
      n.clear_input();
      for (const std::string& in : fn.input()) {
        if (IsControl(in)) {
          auto it = renamed.find(in.substr(1));
          if (it == renamed.end()) InvalidArgument(what, ": control input '", in, "' names no body node");
          n.add_input("^" + it->second);
        } else {
          for (const std::string& e : resolve(in)) n.add_input(e);
        }
      }
      if (n.input_size() == 0 && !input_control.empty()) n.add_input("^" + input_control);
      LowerNode(n);
    }
    stack_.pop_back();

    Body result;
    for (const auto& [_, node] : f->control_ret()) {
      auto it = renamed.find(node);
      if (it == renamed.end()) InvalidArgument(what, ": control_ret '", node, "' names no body node");
      result.control_rets.push_back(it->second);
    }
    Types out_types;
    std::vector<std::string> results;
    for (const auto& out : sig.output_arg()) {
      Types t = ArgTypes(out, attrs, what);
      auto ret = f->ret().find(out.name());
      if (ret == f->ret().end()) InvalidArgument(what, ": result '", out.name(), "' has no ret entry");
      std::vector<std::string> e = resolve(ret->second);
      if (e.size() != t.size())
        InvalidArgument(what, ": result '", out.name(), "' has the wrong number of tensors");
      out_types.insert(out_types.end(), t.begin(), t.end());
      results.insert(results.end(), e.begin(), e.end());
    }
    if (output_types != nullptr && *output_types != out_types) {
      InvalidArgument(what, ": the node's output dtypes ", TypesString(*output_types),
                      " differ from the function's ", TypesString(out_types));
    }
    const std::vector<std::string> none;
    for (size_t i = 0; i < results.size(); ++i) {
      result.outputs.push_back(Identity(StrCat(prefix, "/output/_", i), results[i], out_types[i], device,
                                        outputs_wait ? result.control_rets : none));
    }
    output_types_ = out_types;
    return result;
  }

  static std::string TypesString(const Types& types) {
    std::string s = "[";
    for (size_t i = 0; i < types.size(); ++i) StrAppend(&s, i == 0 ? "" : ", ", DataTypeString(types[i]));
    return s + "]";
  }

  // The node of `name` standing for a lowered node: an IdentityN of `outputs` (a NoOp when
  // there are none) waiting for `controls`.
  void EmitStandIn(const std::string& name, const std::vector<std::string>& outputs, const Types& types,
                   const std::vector<std::string>& controls, const std::string& device) {
    tensorflow::NodeDef& n = Emit(name, outputs.empty() ? "NoOp" : "IdentityN", device);
    for (const std::string& o : outputs) n.add_input(o);
    for (const std::string& c : controls) n.add_input("^" + c);
    if (!outputs.empty()) {
      tensorflow::AttrValue t;
      for (DataType d : types) t.mutable_list()->add_type(static_cast<tensorflow::DataType>(d));
      (*n.mutable_attr())["T"] = t;
    }
  }

  void LowerNamedCall(const tensorflow::NodeDef& n, const std::string& function, const AttrMap& attrs) {
    std::vector<std::string> data, controls;
    Split(n, &data, &controls);
    Types tin, tout;
    const bool typed = IsPartitionedCall(n.op());
    if (typed) {
      tin = TypeList(n, "Tin");
      tout = TypeList(n, "Tout");
    }
    Body body = Inline(n.name(), n.name(), function, attrs, data, typed ? &tin : nullptr,
                       typed ? &tout : nullptr, controls, n.device(), false);
    EmitStandIn(n.name(), body.outputs, output_types_, body.control_rets, n.device());
  }

  // A cond on `pred` (a bool scalar endpoint) over `inputs` of `types`: each branch emitted
  // by its emitter behind its pivot, the results merged. Returns the merged results and the
  // node that runs once whichever branch ran has done its side effects ("" if none has any).
  Body LowerCond(const std::string& name, const std::string& pred, const std::vector<std::string>& inputs,
                 const Types& types, const Types& out_types, const std::vector<std::string>& controls,
                 const std::string& device, const BranchEmitter& then_branch,
                 const BranchEmitter& else_branch) {
    tensorflow::NodeDef& sw = Emit(Unique(name + "/switch_pred"), "Switch", device);
    sw.add_input(pred);
    sw.add_input(pred);
    for (const std::string& c : controls) sw.add_input("^" + c);
    (*sw.mutable_attr())["T"] = TypeAttr(DT_BOOL);
    const std::string switch_pred = sw.name();
    const std::string pivot_f = Identity(name + "/pivot_f", Out(switch_pred, 0), DT_BOOL, device);
    const std::string pivot_t = Identity(name + "/pivot_t", Out(switch_pred, 1), DT_BOOL, device);
    std::vector<std::string> then_in, else_in;
    for (size_t i = 0; i < inputs.size(); ++i) {
      tensorflow::NodeDef& s = Emit(Unique(StrCat(name, "/input_", i)), "Switch", device);
      s.add_input(inputs[i]);
      s.add_input(pred);
      for (const std::string& c : controls) s.add_input("^" + c);
      (*s.mutable_attr())["T"] = TypeAttr(types[i]);
      else_in.push_back(Out(s.name(), 0));
      then_in.push_back(Out(s.name(), 1));
    }
    const std::string pivot_t_node = pivot_t.substr(0, pivot_t.rfind(':'));
    const std::string pivot_f_node = pivot_f.substr(0, pivot_f.rfind(':'));
    Body then_body = then_branch(name + "/then", then_in, pivot_t_node);
    Body else_body = else_branch(name + "/else", else_in, pivot_f_node);
    if (then_body.outputs.size() != out_types.size() || else_body.outputs.size() != out_types.size()) {
      InvalidArgument("Node '", name, "': its branches give ", then_body.outputs.size(), " and ",
                      else_body.outputs.size(), " results but the node has ", out_types.size(), " outputs");
    }
    Body result;
    for (size_t i = 0; i < out_types.size(); ++i) {
      tensorflow::NodeDef& m = Emit(Unique(StrCat(name, "/output_", i)), "Merge", device);
      m.add_input(then_body.outputs[i]);
      m.add_input(else_body.outputs[i]);
      (*m.mutable_attr())["T"] = TypeAttr(out_types[i]);
      (*m.mutable_attr())["N"].set_i(2);
      result.outputs.push_back(Out(m.name(), 0));
    }
    if (!then_body.control_rets.empty() || !else_body.control_rets.empty()) {
      const std::string t = Identity(name + "/then_done", pivot_t, DT_BOOL, device, then_body.control_rets);
      const std::string e = Identity(name + "/else_done", pivot_f, DT_BOOL, device, else_body.control_rets);
      tensorflow::NodeDef& m = Emit(Unique(name + "/branch_executed"), "Merge", device);
      m.add_input(t);
      m.add_input(e);
      (*m.mutable_attr())["T"] = TypeAttr(DT_BOOL);
      (*m.mutable_attr())["N"].set_i(2);
      result.control_rets.push_back(m.name());
    }
    return result;
  }

  // An emitter inlining the function `f` (a func attr value) with `types` in, `out` out.
  BranchEmitter InlineEmitter(const std::string& call, const tensorflow::NameAttrList& f, const Types& types,
                              const Types& out, const std::string& device) {
    return [=, this](const std::string& prefix, const std::vector<std::string>& inputs,
                     const std::string& pivot) {
      const std::vector<std::string> in(inputs.begin(), inputs.begin() + static_cast<long>(types.size()));
      return Inline(call, prefix, f.name(), f.attr(), in, &types, &out, {pivot}, device, true);
    };
  }

  // `pred` (of dtype t) as a bool, converted by TF's truth rules when it is not one.
  std::string AsBool(const std::string& name, const std::string& pred, DataType t,
                     const std::string& device) {
    if (t == DT_BOOL) return pred;
    tensorflow::NodeDef& n = Emit(Unique(name + "/to_bool"), "ToBool", device);
    n.add_input(pred);
    (*n.mutable_attr())["T"] = TypeAttr(t);
    return Out(n.name(), 0);
  }

  // An If's or Case's inputs: the predicate or branch index first, then the branches' inputs
  // (as many as Tin says), and its control inputs; Tin and Tout.
  static void SplitSelectorCall(const tensorflow::NodeDef& n, std::vector<std::string>* data,
                                std::vector<std::string>* controls, Types* tin, Types* tout) {
    Split(n, data, controls);
    *tin = TypeList(n, "Tin");
    *tout = TypeList(n, "Tout");
    if (data->size() != tin->size() + 1) {
      InvalidArgument("Node '", n.name(), "' (", n.op(), ") has ", data->size(), " inputs, Tin says ",
                      tin->size() + 1);
    }
  }

  void LowerIf(const tensorflow::NodeDef& n) {
    std::vector<std::string> data, controls;
    Types tin, tout;
    SplitSelectorCall(n, &data, &controls, &tin, &tout);
    const std::string pred =
        AsBool(n.name(), data[0], static_cast<DataType>(GetAttr(n, "Tcond").type()), n.device());
    const std::vector<std::string> inputs(data.begin() + 1, data.end());
    Body body = LowerCond(n.name(), pred, inputs, tin, tout, controls, n.device(),
                          InlineEmitter(n.name(), GetAttr(n, "then_branch").func(), tin, tout, n.device()),
                          InlineEmitter(n.name(), GetAttr(n, "else_branch").func(), tin, tout, n.device()));
    EmitStandIn(n.name(), body.outputs, tout, body.control_rets, n.device());
  }

  // Branches k.. of a Case: branch k when `index` (the last input, int32) equals k, else
  // the rest; the last branch takes every other index, as TF's Case.
  Body CaseFrom(const std::string& call, const std::string& prefix, size_t k,
                const std::vector<tensorflow::NameAttrList>& branches, const std::vector<std::string>& inputs,
                const Types& tin, const Types& tout, const std::vector<std::string>& controls,
                const std::string& device) {
    if (k + 1 == branches.size()) {
      const std::vector<std::string> in(inputs.begin(), inputs.begin() + static_cast<long>(tin.size()));
      return Inline(call, StrCat(prefix, "/branch_", k), branches[k].name(), branches[k].attr(), in, &tin,
                    &tout, controls, device, true);
    }
    const std::string index = inputs.back();
    tensorflow::NodeDef& c = Emit(Unique(StrCat(prefix, "/index_", k)), "Const", device);
    (*c.mutable_attr())["dtype"] = TypeAttr(DT_INT32);
    tensorflow::AttrValue value;
    value.mutable_tensor()->set_dtype(tensorflow::DT_INT32);
    value.mutable_tensor()->mutable_tensor_shape();
    value.mutable_tensor()->add_int_val(static_cast<int>(k));
    (*c.mutable_attr())["value"] = value;
    // Past the first, the index is a Switch output inside the enclosing else branch, and the
    // constant must live there too. The first is the Case's own input, which may be fed.
    if (k > 0) c.add_input("^" + index.substr(0, index.rfind(':')));
    const std::string k_const = c.name();
    tensorflow::NodeDef& eq = Emit(Unique(StrCat(prefix, "/is_", k)), "Equal", device);
    eq.add_input(index);
    eq.add_input(Out(k_const, 0));
    (*eq.mutable_attr())["T"] = TypeAttr(DT_INT32);
    const std::string pred = Out(eq.name(), 0);
    Types with_index = tin;
    with_index.push_back(DT_INT32);
    BranchEmitter then_branch = [&](const std::string&, const std::vector<std::string>& in,
                                    const std::string& pivot) {
      const std::vector<std::string> args(in.begin(), in.begin() + static_cast<long>(tin.size()));
      return Inline(call, StrCat(prefix, "/branch_", k), branches[k].name(), branches[k].attr(), args, &tin,
                    &tout, {pivot}, device, true);
    };
    BranchEmitter else_branch = [&](const std::string&, const std::vector<std::string>& in,
                                    const std::string& pivot) {
      return CaseFrom(call, prefix, k + 1, branches, in, tin, tout, {pivot}, device);
    };
    return LowerCond(StrCat(prefix, "/case_", k), pred, inputs, with_index, tout, controls, device,
                     then_branch, else_branch);
  }

  void LowerCase(const tensorflow::NodeDef& n) {
    std::vector<std::string> data, controls;
    Types tin, tout;
    SplitSelectorCall(n, &data, &controls, &tin, &tout);
    const auto& list = GetAttr(n, "branches").list().func();
    const std::vector<tensorflow::NameAttrList> branches(list.begin(), list.end());
    if (branches.empty()) InvalidArgument("Node '", n.name(), "' (", n.op(), ") has no branches");
    std::vector<std::string> inputs(data.begin() + 1, data.end());
    inputs.push_back(data[0]);
    Body body = CaseFrom(n.name(), n.name(), 0, branches, inputs, tin, tout, controls, n.device());
    EmitStandIn(n.name(), body.outputs, tout, body.control_rets, n.device());
  }

  void LowerWhile(const tensorflow::NodeDef& n) {
    std::vector<std::string> data, controls;
    Split(n, &data, &controls);
    const Types types = TypeList(n, "T");
    const std::string& name = n.name();
    const std::string& device = n.device();
    if (data.empty() || data.size() != types.size()) {
      InvalidArgument("Node '", name, "' (", n.op(), ") has ", data.size(), " loop variables, T says ",
                      types.size(), " (a loop needs at least one)");
    }
    auto p = n.attr().find("parallel_iterations");
    const int64_t parallel = p == n.attr().end() ? 10 : p->second.i();
    std::string loop_controls;
    if (!controls.empty()) {
      tensorflow::NodeDef& nc = Emit(Unique(name + "/LoopControlInputs"), "NoOp", device);
      for (const std::string& c : controls) nc.add_input("^" + c);
      loop_controls = nc.name();
    }
    std::vector<std::string> merges, next_names;
    for (size_t i = 0; i < data.size(); ++i) {
      tensorflow::NodeDef& e = Emit(Unique(StrCat(name, "/enter/_", i)), "Enter", device);
      e.add_input(data[i]);
      if (!loop_controls.empty()) e.add_input("^" + loop_controls);
      (*e.mutable_attr())["T"] = TypeAttr(types[i]);
      (*e.mutable_attr())["frame_name"].set_s(name);
      (*e.mutable_attr())["is_constant"].set_b(false);
      (*e.mutable_attr())["parallel_iterations"].set_i(parallel);
      const std::string enter = e.name();
      next_names.push_back(Unique(StrCat(name, "/next_iteration/_", i)));
      tensorflow::NodeDef& m = Emit(Unique(StrCat(name, "/merge/_", i)), "Merge", device);
      m.add_input(Out(enter, 0));
      m.add_input(Out(next_names.back(), 0));
      (*m.mutable_attr())["T"] = TypeAttr(types[i]);
      (*m.mutable_attr())["N"].set_i(2);
      merges.push_back(Out(m.name(), 0));
    }
    const tensorflow::NameAttrList& cond = GetAttr(n, "cond").func();
    const tensorflow::NameAttrList& body_fn = GetAttr(n, "body").func();
    const std::string first_merge = merges[0].substr(0, merges[0].rfind(':'));
    Body c = Inline(name, name + "/cond", cond.name(), cond.attr(), merges, &types, nullptr, {first_merge},
                    device, true);
    if (c.outputs.size() != 1) {
      InvalidArgument("Node '", name, "' calling function '", cond.name(),
                      "': a loop condition must give one result, it gives ", c.outputs.size());
    }
    const std::string pred = AsBool(name + "/cond", c.outputs[0], output_types_[0], device);
    tensorflow::NodeDef& lc = Emit(Unique(name + "/LoopCond"), "LoopCond", device);
    lc.add_input(pred);
    const std::string loop_cond = lc.name();
    std::vector<std::string> switches;
    for (size_t i = 0; i < data.size(); ++i) {
      tensorflow::NodeDef& s = Emit(Unique(StrCat(name, "/switch/_", i)), "Switch", device);
      s.add_input(merges[i]);
      s.add_input(Out(loop_cond, 0));
      (*s.mutable_attr())["T"] = TypeAttr(types[i]);
      switches.push_back(s.name());
    }
    const std::string body_control =
        Identity(name + "/loop_body_control", Out(switches[0], 1), types[0], device);
    std::vector<std::string> body_in;
    for (const std::string& s : switches) body_in.push_back(Out(s, 1));
    Body b = Inline(name, name + "/body", body_fn.name(), body_fn.attr(), body_in, &types, &types,
                    {body_control.substr(0, body_control.rfind(':'))}, device, true);
    std::vector<std::string> exits;
    for (size_t i = 0; i < data.size(); ++i) {
      tensorflow::NodeDef& x = Emit(Unique(StrCat(name, "/exit/_", i)), "Exit", device);
      x.add_input(Out(switches[i], 0));
      (*x.mutable_attr())["T"] = TypeAttr(types[i]);
      exits.push_back(Out(x.name(), 0));
      tensorflow::NodeDef& ni = Emit(next_names[i], "NextIteration", device);
      ni.add_input(b.outputs[i]);
      (*ni.mutable_attr())["T"] = TypeAttr(types[i]);
    }
    EmitStandIn(name, exits, types, {}, device);
  }

  const tensorflow::GraphDef& in_;
  std::map<std::string, const tensorflow::FunctionDef*> functions_;
  std::set<std::string> names_;
  std::deque<tensorflow::NodeDef> nodes_;  // a deque: Emit's references stay valid
  std::vector<std::string> stack_;         // the functions being inlined, outermost first
  std::map<std::string, InlinedSize> inlined_sizes_;
  Types output_types_;  // the result dtypes of the last function inlined
};

}  // namespace

bool CallsFunctions(const Graph& graph) {
  for (int i = 0; i < graph.num_nodes(); ++i) {
    const std::string& op = graph.node(i)->type();
    if (IsFunctionalOp(op) || graph.library().Find(op) != nullptr) return true;
  }
  return false;
}

void FunctionSignatureTypes(const tensorflow::FunctionDef& function,
                            const google::protobuf::Map<std::string, tensorflow::AttrValue>& attrs,
                            std::vector<DataType>* inputs, std::vector<DataType>* outputs) {
  Lowering::SignatureTypes(function, attrs, inputs, outputs);
}

tensorflow::GraphDef LowerFunctionCalls(const tensorflow::GraphDef& graph_def) {
  return Lowering(graph_def).Run();
}

std::unique_ptr<Graph> LowerFunctionCalls(const Graph& graph) {
  auto lowered = std::make_unique<Graph>();
  ImportGraphDef(LowerFunctionCalls(graph.ToGraphDef()), lowered.get());
  return lowered;
}

}  // namespace flowtrain
