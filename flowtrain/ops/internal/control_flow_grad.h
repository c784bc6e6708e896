// What ops::Gradients needs from the control-flow gradients (control_flow_grad.cc).
//
//   FillMissingCondSwitchGradients(op, out_grads);  // before calling op's gradient function
#ifndef FLOWTRAIN_OPS_INTERNAL_CONTROL_FLOW_GRAD_H_
#define FLOWTRAIN_OPS_INTERNAL_CONTROL_FLOW_GRAD_H_

#include <vector>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops::control_flow_internal {

// For a Switch in a cond branch whose other output gets no gradient: gives that output a
// zero gradient, built behind a Switch of the same predicate so it is alive only when the
// other branch is taken (TF's ZerosLikeOutsideLoop); the gradient Merge then always has a
// live input. Leaves other ops' gradients alone. Builds in the current name scope.
void FillMissingCondSwitchGradients(const Operation& op, std::vector<Output>& out_grads);

}  // namespace flowtrain::ops::control_flow_internal

#endif  // FLOWTRAIN_OPS_INTERNAL_CONTROL_FLOW_GRAD_H_
