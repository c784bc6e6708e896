// Variable: TF1's `tf.Variable` — a VariableV2 node, its initializer (`<name>/Assign`), the
// snapshot read by consumers (`<name>/read`) and its initial value, registered in the graph's
// variable collections.
//
// With `.use_resource = true` it is TF's ResourceVariable instead, with TF 1.15's nodes: a
// VarHandleOp `<name>` (shared_name `<name>`), `<name>/IsInitialized/VarIsInitializedOp`,
// the initializer `<name>/Assign` (AssignVariableOp), the snapshot
// `<name>/Read/ReadVariableOp` and the initial value under `<name>/Initializer/`. Each use as a
// tensor (value(), the conversion) then reads the variable afresh with a ReadVariableOp built
// in the current scope, so a read made under control dependencies sees the updates they
// order before it.
//
//   Variable w(ops::Const<float>({0, 0}), {.name = "w"});
//   Variable b([] { return ops::Const(0.0f); }, {.name = "b"});  // built under b/Initializer/
//   Output y = ops::Add(w, b);                                   // reads w/read and b/read
//   Session sess(g);
//   sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
#ifndef FLOWTRAIN_OPS_VARIABLES_H_
#define FLOWTRAIN_OPS_VARIABLES_H_

#include <functional>
#include <string>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/graph/graph.h"

namespace flowtrain {

struct VariableOptions {
  std::string name = "Variable";
  // Trainable variables also join TRAINABLE_VARIABLES, which optimizers read.
  bool trainable = true;
  // Collections to add the variable to; empty means GLOBAL_VARIABLES.
  std::vector<std::string> collections;
  bool validate_shape = true;
  // Forces the dtype of the initial value (for initial values given as a Tensor).
  DataType dtype = DT_INVALID;
  // Builds a resource variable (TF's use_resource=True) instead of a VariableV2.
  bool use_resource = false;
};

class Variable {
 public:
  Variable() = default;
  // From a tensor value: a Const named "<name>/initial_value".
  Variable(const Tensor& initial_value, const VariableOptions& options = {});
  // From a graph value built by the caller.
  Variable(Output initial_value, const VariableOptions& options = {});
  // From a function run under "<name>/Initializer/", colocated with the variable (this is how
  // initializers such as glorot_uniform name their ops).
  Variable(const std::function<Output()>& initial_value_fn, const VariableOptions& options = {});

  explicit operator bool() const { return static_cast<bool>(variable_); }
  Operation op() const { return variable_.op(); }
  bool is_resource() const { return is_resource_; }
  // What ops that update the variable take: the VariableV2 output (a reference), or for a
  // resource variable the VarHandleOp's handle.
  Output ref() const { return variable_; }
  // The variable's value for consumers: the snapshot ("<name>/read") of a ref variable; for a
  // resource variable a new ReadVariableOp in the graph's current scope and control context.
  Output value() const;
  operator Output() const { return value(); }  // NOLINT: variables read like tensors in TF
  // The read built with the variable ("<name>/read", "<name>/Read/ReadVariableOp"): the
  // VariableDef's snapshot.
  Output snapshot() const { return snapshot_; }
  Operation initializer() const { return initializer_; }
  Output initial_value() const { return initial_value_; }
  // "w:0", as TF names a variable; op().name() is "w".
  std::string name() const { return variable_.name(); }
  DataType dtype() const { return is_resource_ ? dtype_ : variable_.dtype(); }
  const PartialTensorShape& shape() const { return is_resource_ ? shape_ : variable_.shape(); }
  Graph* graph() const { return variable_.graph(); }
  bool trainable() const { return trainable_; }

  // The updates. For a resource variable the op built is AssignVariableOp (AssignAdd..,
  // AssignSub..) named `name`, and the Output returned a read of the variable ordered after it,
  // as TF's assign(read_value=True).
  Output Assign(Output value, std::string_view name = "Assign") const;
  Output AssignAdd(Output delta, std::string_view name = "AssignAdd") const;
  Output AssignSub(Output delta, std::string_view name = "AssignSub") const;

  bool operator==(const Variable& other) const { return variable_ == other.variable_; }

  // Recreates a Variable handle for an existing VariableV2 (or VarHandleOp) node named `name`
  // with the standard "<name>/Assign" and "<name>/read" (or "<name>/Read/ReadVariableOp")
  // nodes (e.g. after GraphDef import). NotFound if there is no such node.
  static Variable FromGraph(Graph& graph, std::string_view name);

 private:
  void Build(Graph& graph, const std::function<Output()>& make_initial_value, bool in_initializer_scope,
             const VariableOptions& options);

  Output variable_;
  Output snapshot_;
  Output initial_value_;
  Operation initializer_;
  bool trainable_ = true;
  bool is_resource_ = false;
  // A resource variable's dtype and declared shape (its handle is a scalar DT_RESOURCE).
  DataType dtype_ = DT_INVALID;
  PartialTensorShape shape_ = PartialTensorShape::Unknown();
};

namespace ops {

// The variables of a collection of `graph` (default: the default graph).
std::vector<Variable> GlobalVariables(Graph* graph = nullptr);
std::vector<Variable> LocalVariables(Graph* graph = nullptr);
std::vector<Variable> TrainableVariables(Graph* graph = nullptr);

// tf.variables_initializer: a group of the initializers, or a NoOp when there are none.
Operation VariablesInitializer(const std::vector<Variable>& variables, std::string_view name = "init",
                               Graph* graph = nullptr);
Operation GlobalVariablesInitializer(Graph* graph = nullptr);
Operation LocalVariablesInitializer(Graph* graph = nullptr);
// A 1-D string tensor with the names of the uninitialized variables among `variables`
// (default: global and local variables), as tf.report_uninitialized_variables.
Output ReportUninitializedVariables(std::optional<std::vector<Variable>> variables = std::nullopt,
                                    std::string_view name = "report_uninitialized_variables",
                                    Graph* graph = nullptr);

}  // namespace ops
}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_VARIABLES_H_
