// Ops that order execution: NoOp, Group (tf.group) and WithDependencies
// (tf.control_dependencies + tf.identity).
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

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_CONTROL_FLOW_OPS_H_
