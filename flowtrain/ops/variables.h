// Variable: TF1's `tf.Variable` — a VariableV2 node, its initializer (`<name>/Assign`), the
// snapshot read by consumers (`<name>/read`) and its initial value, registered in the graph's
// variable collections.
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
  // The VariableV2 output (a reference), for ops that update the variable.
  Output ref() const { return variable_; }
  // The snapshot consumers read ("<name>/read").
  Output value() const { return snapshot_; }
  operator Output() const { return snapshot_; }  // NOLINT: variables read like tensors in TF
  Operation initializer() const { return initializer_; }
  Output initial_value() const { return initial_value_; }
  // "w:0", as TF names a variable; op().name() is "w".
  std::string name() const { return variable_.name(); }
  DataType dtype() const { return variable_.dtype(); }
  const PartialTensorShape& shape() const { return variable_.shape(); }
  Graph* graph() const { return variable_.graph(); }
  bool trainable() const { return trainable_; }

  Output Assign(Output value, std::string_view name = "Assign") const;
  Output AssignAdd(Output delta, std::string_view name = "AssignAdd") const;
  Output AssignSub(Output delta, std::string_view name = "AssignSub") const;

  bool operator==(const Variable& other) const { return variable_ == other.variable_; }

  // Recreates a Variable handle for an existing VariableV2 node named `name` with the standard
  // "<name>/Assign", "<name>/read" and "<name>/initial_value" nodes (e.g. after GraphDef import).
  static Variable FromGraph(Graph& graph, std::string_view name);

 private:
  void Build(Graph& graph, const std::function<Output()>& make_initial_value, bool in_initializer_scope,
             const VariableOptions& options);

  Output variable_;
  Output snapshot_;
  Output initial_value_;
  Operation initializer_;
  bool trainable_ = true;
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
