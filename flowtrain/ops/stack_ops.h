// The stack ops TF1's while-loop gradients use to keep forward values for the gradient loop
// (StackV2, StackPushV2, StackPopV2, StackCloseV2). The stack lives in the session for the
// duration of one run; the graph passes its DT_RESOURCE handle.
//
//   Output stack = ops::StackV2(DT_FLOAT, /*max_size=*/-1, "f_acc");
//   Output pushed = ops::StackPushV2(stack, x);          // outputs x
//   Output popped = ops::StackPopV2(stack, DT_FLOAT);    // last pushed first
//   Operation close = ops::StackCloseV2(stack);
//
// Run-time errors name the stack: a pop from an empty stack, a push past max_size, a value of
// the wrong dtype, any use after close raise InvalidArgument.
#ifndef FLOWTRAIN_OPS_STACK_OPS_H_
#define FLOWTRAIN_OPS_STACK_OPS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

// A stack of `elem_type` values; a negative max_size means unbounded. `stack_name` names the
// run-time stack (empty: the node's name).
Output StackV2(DataType elem_type, int32_t max_size = -1, std::string_view name = "StackV2",
               const std::string& stack_name = "");
Output StackV2(DataType elem_type, Output max_size, std::string_view name = "StackV2",
               const std::string& stack_name = "");
// Pushes `elem` and outputs it. swap_memory (GPU memory to host) changes nothing on a CPU.
Output StackPushV2(Output handle, Output elem, bool swap_memory = false,
                   std::string_view name = "StackPushV2");
Output StackPopV2(Output handle, DataType elem_type, std::string_view name = "StackPopV2");
Operation StackCloseV2(Output handle, std::string_view name = "StackCloseV2");

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_STACK_OPS_H_
