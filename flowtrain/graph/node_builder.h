// NodeBuilder: adds one node to a graph. It checks the inputs against the op's signature,
// infers type attrs from the inputs, fills attr defaults, applies the graph's building context
// (name scope, control dependencies, device, colocation) and runs the op's shape function, so
// every error names the op while the user is building.
//
//   Operation op = NodeBuilder("MatMul", "logits")
//                      .Input(x).Input(w)
//                      .Attr("transpose_b", true)
//                      .Finalize();
//
// The graph is the inputs' graph; an op without inputs goes to Graph(g) if given, else the
// default graph. Inputs from two graphs are an InvalidArgument naming both tensors.
#ifndef FLOWTRAIN_GRAPH_NODE_BUILDER_H_
#define FLOWTRAIN_GRAPH_NODE_BUILDER_H_

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "flowtrain/graph/attr_value_util.h"
#include "flowtrain/graph/graph.h"

namespace flowtrain {

class NodeBuilder {
 public:
  // `name` empty means the op type. The name is made unique inside the current name scope,
  // unless ExactName() is used or it ends in "/" ("dense/Reshape/" is "dense/Reshape" as
  // given: TF's `op(name=scope)`).
  explicit NodeBuilder(std::string_view op_type, std::string_view name = {});

  NodeBuilder& Graph(Graph* graph);
  // One input per argument of the op signature, in order; lists for list arguments.
  NodeBuilder& Input(const Output& input);
  NodeBuilder& Input(const std::vector<Output>& inputs);
  NodeBuilder& ControlInput(const Operation& op);
  NodeBuilder& ControlInputs(const std::vector<Operation>& ops);
  NodeBuilder& Device(std::string device);
  // Uses `name` as the full node name as given (GraphDef import).
  NodeBuilder& ExactName();
  // Ignores the graph's control-dependency scopes (GraphDef import, init ops).
  NodeBuilder& IgnoreControlScopes();

  template <typename T>
  NodeBuilder& Attr(std::string_view name, const T& value) {
    return SetAttr(name, MakeAttrValue(value));
  }
  NodeBuilder& SetAttr(std::string_view name, AttrValue value);

  Operation Finalize();

 private:
  std::string op_type_;
  std::string name_;
  flowtrain::Graph* graph_ = nullptr;
  std::vector<std::variant<Output, std::vector<Output>>> args_;
  std::vector<Operation> control_inputs_;
  AttrMap attrs_;
  std::string device_;
  bool exact_name_ = false;
  bool ignore_control_scopes_ = false;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_NODE_BUILDER_H_
