// Slot variables: the per-variable state an optimizer or a moving average keeps beside a
// primary variable, named "<primary>/<name>" as TF's slot_creator names them, so that TF
// checkpoints of the same model map one to one.
//
//   Variable m = train::CreateSlot(w, [&] { return ops::ZerosLike(w); }, "Adam");  // "w/Adam"
//
// A slot is non-trainable, in GLOBAL_VARIABLES, colocated with its primary and of the same
// kind (a resource variable beside a resource variable). Its name is made unique with "_1",
// "_2", ... when a node of that name exists (TF's variable scopes do the same). Built in the
// primary's graph at its root name scope, outside any control dependencies of the caller.
// InvalidArgument when the primary's shape is not fully defined.
#ifndef FLOWTRAIN_TRAIN_SLOT_CREATOR_H_
#define FLOWTRAIN_TRAIN_SLOT_CREATOR_H_

#include <functional>
#include <string_view>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain::train {

// A slot of `primary` initialized by `initial_value` (built under "<slot>/Initializer/").
Variable CreateSlot(const Variable& primary, const std::function<Output()>& initial_value,
                    std::string_view name);

// A slot initialized by the tensor `initial_value`, built by the caller (TF's create_slot).
Variable CreateSlotFromValue(const Variable& primary, const Output& initial_value, std::string_view name);

// A zero-initialized slot "<op of primary>/<name>" for a tensor that is not a variable (TF's
// create_zeros_slot of a tensor): a ref variable of the tensor's dtype and shape, not colocated.
Variable CreateZerosSlot(const Output& primary, std::string_view name);

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_SLOT_CREATOR_H_
