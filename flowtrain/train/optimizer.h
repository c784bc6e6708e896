// Optimizer: the base of TF1's tf.train optimizers. Minimize() = ComputeGradients() (symbolic
// gradients of the loss w.r.t. the trainable variables) + ApplyGradients() (one fused update
// op per variable, then the optimizer's finishing ops, then global_step += 1).
//
//   Variable step = train::GetOrCreateGlobalStep();
//   train::AdamOptimizer adam(1e-3);
//   Operation train_op = adam.Minimize(loss, step);            // the "Adam" op
//   // or, to transform gradients first:
//   auto grads_and_vars = adam.ComputeGradients(loss);
//   Operation apply = adam.ApplyGradients(grads_and_vars, step);
//
// Names are TF's, so a TF checkpoint of the same model maps one to one: slots
// "<var>/<OptimizerName>" (then "_1", ...), non-slot variables such as "beta1_power", update ops
// "<OptimizerName>/update_<var>/Apply<Op>", hyper-parameter constants
// "<OptimizerName>/learning_rate", and the returned op named "<OptimizerName>" (an AssignAdd of
// the global step when one is given, else the group of the updates).
//
// Sparse gradients (ops/indexed_slices.h): a variable read by a gather (an embedding table)
// gets IndexedSlices from ComputeGradients, and ApplyGradients updates only the rows they
// name with the optimizer's SparseApply* kernel, as TF's _apply_sparse: GradientDescent
// scatters -lr * g into the rows (ScatterSub, ResourceScatterAdd) without merging repeated
// rows; the others first sum the rows of a repeated index (Unique + UnsortedSegmentSum, TF's
// _deduplicate_indexed_slices). Adam is TF1's non-lazy Adam: m and v decay everywhere, the
// named rows get the gradient, and every row of the variable moves.
//
// An optimizer object may be used for several Minimize calls (its slots are per variable); it
// must outlive none of the graph objects it created, and it is not thread-safe.
#ifndef FLOWTRAIN_TRAIN_OPTIMIZER_H_
#define FLOWTRAIN_TRAIN_OPTIMIZER_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/indexed_slices.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain::train {

// A gradient (dense or IndexedSlices) and the variable it is for; an empty gradient means "no
// gradient" (skipped). A dense gradient converts to `const Output&` as before; a sparse one
// refuses to (see ops::GradientValue).
using GradAndVar = std::pair<ops::GradientValue, Variable>;

// A hyper-parameter given as a number (becomes a Const "<Optimizer>/<name>") or as a tensor
// (e.g. a learning-rate schedule of the global step).
using HyperParameter = std::variant<double, Output>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Gradients of `loss` (a float scalar or tensor; its sum is minimized) for `var_list`
  // (default: the graph's TRAINABLE_VARIABLES), as (grad, var) pairs in var_list order.
  // Gated per op as TF's default GATE_OP (see ops::Gradients' gate_gradients).
  // InvalidArgument "No variables to optimize." when the list is empty.
  std::vector<GradAndVar> ComputeGradients(const Output& loss, std::vector<Variable> var_list = {});

  // Builds the updates; increments `global_step` after all of them when given. `name`
  // defaults to the optimizer's name. InvalidArgument when no pair has a gradient.
  Operation ApplyGradients(const std::vector<GradAndVar>& grads_and_vars,
                           std::optional<Variable> global_step = std::nullopt, std::string_view name = {});

  // ComputeGradients + ApplyGradients.
  Operation Minimize(const Output& loss, std::optional<Variable> global_step = std::nullopt,
                     std::vector<Variable> var_list = {}, std::string_view name = {});

  // The slot `slot_name` ("m", "v", "momentum", "accumulator", "rms") of `var`, if created.
  std::optional<Variable> GetSlot(const Variable& var, std::string_view slot_name) const;
  std::vector<std::string> GetSlotNames() const;
  // Every variable the optimizer created (slots and non-slot variables), in creation order.
  std::vector<Variable> variables() const { return created_; }

  const std::string& name() const { return name_; }
  bool use_locking() const { return use_locking_; }

 protected:
  Optimizer(bool use_locking, std::string name);

  // Hooks for subclasses, called by ApplyGradients:
  // Creates slot (and non-slot) variables for `var_list`; outside control dependencies.
  virtual void CreateSlots(const std::vector<Variable>& var_list) {}
  // Turns hyper-parameters into tensors, inside the "<name>/" scope.
  virtual void Prepare() {}
  // The update of one variable, built inside "<name>/update_<var>/".
  virtual Operation ApplyDense(const Output& grad, const Variable& var) = 0;
  // The update of one variable by a sparse gradient, also inside "<name>/update_<var>/".
  // Indices may repeat; by default they are summed first (ops::DeduplicateIndexedSlices) and
  // ApplySparse runs, as TF's _apply_sparse_duplicate_indices.
  virtual Operation ApplySparseDuplicateIndices(const ops::IndexedSlices& grad, const Variable& var);
  // The update by slices whose indices are unique. By default ApplyDense of the slices made
  // dense, for an optimizer without a sparse update.
  virtual Operation ApplySparse(const ops::IndexedSlices& grad, const Variable& var);
  // Groups the updates (and adds the optimizer's own per-step ops) under `name_scope`.
  virtual Operation Finish(const std::vector<Operation>& update_ops, std::string_view name_scope);

  // Helpers for subclasses.
  // A hyper-parameter as a tensor: a Const named `name` in the current scope, or the tensor.
  Output HyperParameterTensor(const HyperParameter& value, std::string_view name) const;
  // `t` cast to `dtype` when it differs (TF's math_ops.cast of the hyper-parameters).
  static Output CastTo(const Output& t, DataType dtype);
  // The slot variable "<var>/<op_name>" (made unique with _1, _2 ... as TF's variable scopes),
  // non-trainable, in GLOBAL_VARIABLES, colocated with `var`, initialized by `initializer`.
  Variable GetOrMakeSlot(const Variable& var, const ops::Initializer& initializer, std::string_view slot_name,
                         std::string_view op_name);
  Variable ZerosSlot(const Variable& var, std::string_view slot_name, std::string_view op_name);
  Variable GetSlotOrDie(const Variable& var, std::string_view slot_name) const;
  // A non-trainable scalar variable shared by all updates of this optimizer in this graph
  // ("beta1_power"), colocated with `colocate_with`; created once.
  Variable CreateNonSlotVariable(double initial_value, std::string_view name, const Variable& colocate_with);
  std::optional<Variable> GetNonSlotVariable(std::string_view name, Graph* graph) const;

 private:
  bool use_locking_;
  std::string name_;
  // slot name → (primary variable node → slot variable)
  std::map<std::string, std::map<const void*, Variable>, std::less<>> slots_;
  // (graph, name) → non-slot variable
  std::map<std::pair<const Graph*, std::string>, Variable> non_slots_;
  std::vector<Variable> created_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_OPTIMIZER_H_
