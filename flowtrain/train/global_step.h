// tf.train.global_step as ReadGlobalStep (train::GlobalStep is the Saver's step argument): the
// value of the global step, read in a session. Hooks and training loops use it to log or
// decide by the step.
//
//   Variable step = train::GetOrCreateGlobalStep();
//   ...
//   int64_t now = train::ReadGlobalStep(session, step);
#ifndef FLOWTRAIN_TRAIN_GLOBAL_STEP_H_
#define FLOWTRAIN_TRAIN_GLOBAL_STEP_H_

#include <cstdint>

#include "flowtrain/graph/graph.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain::train {

// Runs `global_step_tensor` in `session` and returns its value as an integer, as TF's
// int(sess.run(t)) does: integer tensors as they are, floating-point ones truncated toward
// zero. A tensor that is not a scalar (or a one-element tensor), of a type that is not a
// number, or a non-finite or out-of-range value throws InvalidArgument; the run's own errors
// (an uninitialized variable: FailedPrecondition) propagate.
int64_t ReadGlobalStep(SessionInterface& session, const Output& global_step_tensor);

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_GLOBAL_STEP_H_
