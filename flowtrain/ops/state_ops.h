// TF1 reference-variable ops: VariableV2 and the ops that update a variable in place. Most
// code uses the Variable class (variables.h) rather than these directly.
//
//   Output v = ops::VariableV2(TensorShape({2}), DT_FLOAT, "v");
//   Operation init = ops::Assign(v, ops::Const<float>({1, 2})).op();
//   Output bumped = ops::AssignAdd(v, ops::Const<float>({1, 1}));
#ifndef FLOWTRAIN_OPS_STATE_OPS_H_
#define FLOWTRAIN_OPS_STATE_OPS_H_

#include <string_view>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

Output VariableV2(const PartialTensorShape& shape, DataType dtype, std::string_view name = "Variable",
                  std::string_view container = "", std::string_view shared_name = "");
Output Assign(Output ref, Output value, bool validate_shape = true, bool use_locking = true,
              std::string_view name = "Assign");
Output AssignAdd(Output ref, Output value, bool use_locking = false, std::string_view name = "AssignAdd");
Output AssignSub(Output ref, Output value, bool use_locking = false, std::string_view name = "AssignSub");
// ref[indices[i], ...] += updates[i, ...] (ScatterAdd) or -= (ScatterSub) for every i, a row
// named twice updated twice; outputs ref. `updates` has shape indices.shape + ref.shape[1:].
// An index out of [0, rows) fails the run with InvalidArgument and writes nothing.
Output ScatterAdd(Output ref, Output indices, Output updates, bool use_locking = false,
                  std::string_view name = "ScatterAdd");
Output ScatterSub(Output ref, Output indices, Output updates, bool use_locking = false,
                  std::string_view name = "ScatterSub");
Output IsVariableInitialized(Output ref, std::string_view name = "IsVariableInitialized");
// tf.count_up_to: increments the int32/int64 scalar variable `ref` and returns its value from
// before; OutOfRange("Reached limit of <limit>") once it has reached `limit`.
Output CountUpTo(Output ref, int64_t limit, std::string_view name = "CountUpTo");

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_STATE_OPS_H_
