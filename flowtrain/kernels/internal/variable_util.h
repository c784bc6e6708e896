// What the kernels of ref variables (state_kernels.cc), resource variables
// (resource_variable_kernels.cc) and optimizer updates (training_kernels.cc) share: finding the
// variable behind a DT_RESOURCE handle input, and the assign/add/sub updates of a Var, so
// both kinds of variable run the same code.
//
//   std::shared_ptr<Var> var = LookupResourceVar(ctx, 0);  // FailedPrecondition if never set
//   absl::MutexLock lock(&var->mu);
//   AddToVar(*var, ctx->input(1), /*add=*/true, type_string());
#ifndef FLOWTRAIN_KERNELS_INTERNAL_VARIABLE_UTIL_H_
#define FLOWTRAIN_KERNELS_INTERNAL_VARIABLE_UTIL_H_

#include <memory>
#include <string_view>

#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/resource_mgr.h"

namespace flowtrain {

// The type_name VarHandleOp gives its handles; other handle kinds are refused.
inline constexpr const char* kVarHandleTypeName = "Var";

// The handle held by input `i`; InvalidArgument when it is not a scalar variable handle (a
// queue's handle, say), naming the op.
const ResourceHandle& VariableHandle(OpKernelContext* ctx, int i);
// The variable behind handle input `i`. FailedPrecondition naming the variable ("Error while
// reading resource variable w ... uninitialized") when it does not exist yet.
std::shared_ptr<Var> LookupResourceVar(OpKernelContext* ctx, int i);
// The variable behind handle input `i`, created (uninitialized) if missing, as assignments do.
std::shared_ptr<Var> LookupOrCreateResourceVar(OpKernelContext* ctx, int i);

// Makes `value` the variable's value and marks it initialized. The variable takes the buffer
// when nobody else holds it, copies in place when its own buffer is private and fits, and
// takes a private copy otherwise, so that no reader ever sees a value change under it.
void AssignToVar(Var& var, const Tensor& value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(var.mu);
// var += delta (add) or var -= delta. FailedPrecondition if uninitialized, InvalidArgument
// naming `op` on a shape or dtype mismatch.
void AddToVar(Var& var, const Tensor& delta, bool add, std::string_view op)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(var.mu);
// var[indices[i], ...] += updates[i, ...] (add) or -= for every i, in order (a row named twice
// is updated twice): TF's ScatterAdd / ScatterSub / ResourceScatterAdd. `updates` must have
// shape indices.shape + var.shape[1:]. Every index is checked before anything is written, so
// an index out of [0, rows) is InvalidArgument naming `op`, the index and the variable, and
// leaves the variable as it was.
void ScatterAddToVar(Var& var, const Tensor& indices, const Tensor& updates, bool add, std::string_view op)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(var.mu);

}  // namespace flowtrain

#endif  // FLOWTRAIN_KERNELS_INTERNAL_VARIABLE_UTIL_H_
