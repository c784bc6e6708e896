// Ops that order execution: NoOp, Group (tf.group), WithDependencies
// (tf.control_dependencies + tf.identity) and Tuple (tf.tuple); and TF1's control-flow
// primitives, from which conditionals and loops are built: Switch, Merge, Enter, Exit,
// NextIteration, LoopCond and ControlTrigger (each picks its Ref variant for a reference
// input, as TF's Python wrappers do).
//
//   Operation train = ops::Group({update_w, update_b}, "train");
//   Output loss_after = ops::WithDependencies({train}, loss);
//   SwitchOutputs sw = ops::Switch(x, pred);      // sw.output_true is dead unless pred
//   MergeOutputs m = ops::Merge({sw.output_false, ops::Neg(sw.output_true)});
#ifndef FLOWTRAIN_OPS_CONTROL_FLOW_OPS_H_
#define FLOWTRAIN_OPS_CONTROL_FLOW_OPS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

Operation NoOp(std::string_view name = "NoOp");
// A NoOp with control inputs on every op in `inputs`.
Operation Group(const std::vector<Operation>& inputs, std::string_view name = "group_deps");
// `output`'s value, available only after every op in `dependencies` has run.
Output WithDependencies(const std::vector<Operation>& dependencies, Output output,
                        std::string_view name = "control_dependency");
// tf.tuple: each of `tensors` (empty Outputs stay empty), available only once all of them have
// been computed: "<name>/group_deps" waits for their ops and "<name>/control_dependency",
// "<name>/control_dependency_1"... pass them on after it, each colocated with its tensor.
// Gradients(gate_gradients) uses it as TF does, so that no variable update starts while
// another gradient of the same op still reads the variable. InvalidArgument if all are empty.
std::vector<Output> Tuple(const std::vector<Output>& tensors, std::string_view name = "tuple");

// ---- TF1 control-flow primitives ----
// A tensor that a run does not compute (the untaken side of a Switch, and everything fed only
// by it) is "dead": a node with a dead input is dead itself and produces dead outputs, except
// Merge, which forwards whichever input is alive, and ControlTrigger, which runs anyway.

struct SwitchOutputs {
  Output output_false;  // `data` when pred is false, else dead
  Output output_true;   // `data` when pred is true, else dead
};
// Forwards `data` to one of two outputs by the scalar bool `pred` (RefSwitch for a ref).
SwitchOutputs Switch(Output data, Output pred, std::string_view name = "Switch");

struct MergeOutputs {
  Output output;       // the value of the first input that is alive
  Output value_index;  // int32: which input that was
};
// Forwards the first of `inputs` that is alive; dead only if all are (RefMerge if all are refs).
MergeOutputs Merge(const std::vector<Output>& inputs, std::string_view name = "Merge");

struct EnterOptions {
  // A loop invariant: the value enters the frame once and is visible in every iteration.
  bool is_constant = false;
  // How many iterations of the frame may run at once.
  int64_t parallel_iterations = 10;
};
// Makes `data` available inside the child frame `frame_name` (RefEnter for a ref).
Output Enter(Output data, std::string_view frame_name, const EnterOptions& options = {},
             std::string_view name = "Enter");
// Makes `data` available to the parent frame once the loop ends (RefExit for a ref).
Output Exit(Output data, std::string_view name = "Exit");
// Makes `data` available to the next iteration of its frame (RefNextIteration for a ref).
Output NextIteration(Output data, std::string_view name = "NextIteration");
// The loop's termination condition: a scalar bool; the loop's Switches read it.
Output LoopCond(Output input, std::string_view name = "LoopCond");
// Runs once all its control inputs are done, dead or alive: a control edge that never
// propagates deadness.
Operation ControlTrigger(std::string_view name = "ControlTrigger");

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_CONTROL_FLOW_OPS_H_
