// The global step: the int64 scalar variable "global_step" that counts training steps, kept in
// the graph's GLOBAL_STEP collection (tf.train.get_global_step and friends). Optimizers
// increment it; hooks read it to decide when to save, log or stop.
//
//   Variable step = train::GetOrCreateGlobalStep();           // "global_step", int64, zeros
//   auto train_op = train::AdamOptimizer(1e-3).Minimize(loss, step);
//   std::optional<Variable> found = train::GetGlobalStep(&g);  // nullopt if there is none
#ifndef FLOWTRAIN_OPS_TRAINING_UTIL_H_
#define FLOWTRAIN_OPS_TRAINING_UTIL_H_

#include <cstdint>
#include <optional>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain::train {

// The single item of the GLOBAL_STEP collection, else the VariableV2 named "global_step",
// else nullopt. With several items in the collection it logs "Multiple tensors in global_step
// collection." and returns nullopt, as TF. The result passes AssertGlobalStep.
std::optional<Variable> GetGlobalStep(Graph* graph = nullptr);

// Creates "global_step" (int64 scalar, zeros initializer, trainable=false, collections
// GLOBAL_VARIABLES and GLOBAL_STEP) at the root name scope. InvalidArgument
// ("\"global_step\" already exists.") if there is one already.
Variable CreateGlobalStep(Graph* graph = nullptr);

Variable GetOrCreateGlobalStep(Graph* graph = nullptr);

// InvalidArgument unless `global_step` has an integer dtype and, when its shape is known, is a
// scalar (TF raises TypeError with these messages).
void AssertGlobalStep(const Variable& global_step);

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_OPS_TRAINING_UTIL_H_
