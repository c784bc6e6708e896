// Variable scopes and GetVariable (tf.variable_scope / tf.get_variable): variables named by
// the enclosing variable scopes ("dense/kernel"), created once and shared on request, so that
// layers and optimizers can find "their" variables by name.
//
//   {
//     ops::VariableScope scope("dense");                        // also opens name scope "dense"
//     Variable w = ops::GetVariable("kernel", {784, 10});       // "dense/kernel", glorot_uniform
//     Variable b = ops::GetVariable("bias", {10}, DT_FLOAT, ops::ZerosInitializer());
//   }
//   {
//     ops::VariableScope scope("dense", {.reuse = ops::Reuse::kReuse});
//     Variable same = ops::GetVariable("kernel", {784, 10});    // the same variable
//   }
//
// Creating a variable that exists without reuse, or reusing one that does not exist, is an
// InvalidArgument with TF's message. The store lives in the graph (collection
// "__variable_store", as TF keeps it).
#ifndef FLOWTRAIN_OPS_VARIABLE_SCOPE_H_
#define FLOWTRAIN_OPS_VARIABLE_SCOPE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain::ops {

// tf.variable_scope's `reuse`: inherit the enclosing scope's setting, reuse (variables must
// exist), or AUTO_REUSE (create when missing, reuse otherwise).
enum class Reuse { kInherit, kReuse, kAutoReuse };

struct VariableScopeOptions {
  Reuse reuse = Reuse::kInherit;
  // Default initializer for GetVariable calls inside (inherited by nested scopes).
  Initializer initializer;
  // Opens a name scope of the same name (made unique), as TF does; layers turn this off and
  // open their own.
  bool auxiliary_name_scope = true;
  // Whether GetVariable calls inside build resource variables (TF's use_resource); unset
  // inherits the enclosing scope's, and at the root means ref variables.
  std::optional<bool> use_resource;
};

class VariableScope {
 public:
  explicit VariableScope(std::string_view name, VariableScopeOptions options = {}, Graph* graph = nullptr);
  ~VariableScope();
  VariableScope(const VariableScope&) = delete;
  VariableScope& operator=(const VariableScope&) = delete;
  // The full scope name, e.g. "outer/dense".
  const std::string& name() const { return name_; }
  bool reuse() const { return reuse_ != Reuse::kInherit; }
  // The name scope opened for this variable scope ("dense_1/"), empty if none.
  const std::string& original_name_scope() const { return original_name_scope_; }

 private:
  Graph& graph_;
  std::string name_;
  Reuse reuse_;
  std::string original_name_scope_;
  ScopeGuard name_scope_;
};

// The current variable scope's full name ("" at the root).
std::string CurrentVariableScopeName(Graph* graph = nullptr);

struct GetVariableOptions {
  bool trainable = true;
  // Empty means GLOBAL_VARIABLES (trainable ones also join TRAINABLE_VARIABLES).
  std::vector<std::string> collections;
  // A resource variable (TF's use_resource=True); unset takes the variable scope's setting.
  std::optional<bool> use_resource;
};

// tf.get_variable: the variable "<current scope>/<name>", created with `initializer` (default:
// the scope's, else glorot_uniform for floats and zeros for integers and bools).
Variable GetVariable(std::string_view name, const TensorShape& shape, DataType dtype = DT_FLOAT,
                     Initializer initializer = nullptr, const GetVariableOptions& options = {});

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_VARIABLE_SCOPE_H_
