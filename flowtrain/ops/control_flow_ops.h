// Ops that order execution: NoOp, Group (tf.group), WithDependencies
// (tf.control_dependencies + tf.identity) and Tuple (tf.tuple).
//
//   Operation train = ops::Group({update_w, update_b}, "train");
//   Output loss_after = ops::WithDependencies({train}, loss);
#ifndef FLOWTRAIN_OPS_CONTROL_FLOW_OPS_H_
#define FLOWTRAIN_OPS_CONTROL_FLOW_OPS_H_

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

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_CONTROL_FLOW_OPS_H_
