// TF's resource-variable ops (use_resource=True): a VarHandleOp outputs a DT_RESOURCE handle
// naming the variable in the session's resource manager; the other ops read or update the
// variable through that handle. Op names, inputs and attrs are TF 1.15's. Most code uses the
// Variable class with `.use_resource = true` (variables.h) rather than these directly.
//
//   Output h = ops::VarHandleOp(DT_FLOAT, TensorShape({2}), "w", "", "w");
//   Operation init = ops::AssignVariableOp(h, ops::Const<float>({1, 2}));
//   Output value = ops::ReadVariableOp(h, DT_FLOAT);
//   Operation bump = ops::AssignAddVariableOp(h, ops::Const<float>({1, 1}));
//
// Reading a variable never assigned is FailedPrecondition naming it; a handle to something
// other than a variable (a queue's) is InvalidArgument.
#ifndef FLOWTRAIN_OPS_RESOURCE_VARIABLE_OPS_H_
#define FLOWTRAIN_OPS_RESOURCE_VARIABLE_OPS_H_

#include <string_view>

#include "flowtrain/graph/graph.h"

namespace flowtrain {

// The shape a resource variable's handle was declared with: the "shape" attr of the
// VarHandleOp producing input `handle`, else an unknown shape (the handle comes from
// elsewhere, e.g. a feed). Shape functions and builders of the ops taking handles use it.
PartialTensorShape ResourceVariableShape(const Output& handle);

namespace ops {

Output VarHandleOp(DataType dtype, const PartialTensorShape& shape, std::string_view name = "VarHandleOp",
                   std::string_view container = "", std::string_view shared_name = "");
Output ReadVariableOp(Output handle, DataType dtype, std::string_view name = "ReadVariableOp");
Operation AssignVariableOp(Output handle, Output value, std::string_view name = "AssignVariableOp");
Operation AssignAddVariableOp(Output handle, Output value, std::string_view name = "AssignAddVariableOp");
Operation AssignSubVariableOp(Output handle, Output value, std::string_view name = "AssignSubVariableOp");
Output VarIsInitializedOp(Output handle, std::string_view name = "VarIsInitializedOp");
// Deletes the resource behind `handle`; with ignore_lookup_error a missing one is no error.
Operation DestroyResourceOp(Output handle, bool ignore_lookup_error = true,
                            std::string_view name = "DestroyResourceOp");
// TF 2.x's DisableCopyOnRead, which TF2 SavedModels run on each restored variable. flowtrain's
// variables have no copy-on-read mode, so it only fails (FailedPrecondition) when the variable
// does not exist.
Operation DisableCopyOnRead(Output handle, std::string_view name = "DisableCopyOnRead");
// The variable's current shape (TF's VariableShape), int32 or int64.
Output VariableShape(Output handle, DataType out_type = DT_INT32, std::string_view name = "VariableShape");
// Rows `indices` of the variable (tf.gather on a resource variable, axis 0).
Output ResourceGather(Output handle, Output indices, DataType dtype,
                      std::string_view name = "ResourceGather");
// Adds the rows of `updates` to the rows `indices` of the variable (a row named twice gets
// both), as ScatterAdd (state_ops.h) does on reference variables.
Operation ResourceScatterAdd(Output handle, Output indices, Output updates,
                             std::string_view name = "ResourceScatterAdd");

}  // namespace ops
}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_RESOURCE_VARIABLE_OPS_H_
