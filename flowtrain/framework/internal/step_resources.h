// Which ops create resources in a run's step container (TF's per-step container: the
// TensorArrays and stacks a run makes, dropped when the run ends). A kernel file declares
// its ops beside their kernels; the executor asks while compiling a plan, so a plan without
// such an op runs with no step container and no cleanup at all.
//
//   FT_REGISTER_STEP_RESOURCE_OP("StackV2");
//   if (CreatesStepResources(node->type())) ...
//
// Thread-safe. Registration happens during static initialisation; lookups any time after.
#ifndef FLOWTRAIN_FRAMEWORK_INTERNAL_STEP_RESOURCES_H_
#define FLOWTRAIN_FRAMEWORK_INTERNAL_STEP_RESOURCES_H_

#include <string>
#include <string_view>

namespace flowtrain {

// Declares that kernels of `op_type` create resources in OpKernelContext::step_container().
void RegisterStepResourceOp(std::string op_type);
// Whether `op_type` was declared with RegisterStepResourceOp.
bool CreatesStepResources(std::string_view op_type);

namespace step_resources_internal {
struct StepResourceOpRegistrar {
  explicit StepResourceOpRegistrar(const char* op_type) { RegisterStepResourceOp(op_type); }
};
}  // namespace step_resources_internal

#define FT_REGISTER_STEP_RESOURCE_OP_UNIQ_HELPER(ctr, op) FT_REGISTER_STEP_RESOURCE_OP_UNIQ(ctr, op)
#define FT_REGISTER_STEP_RESOURCE_OP_UNIQ(ctr, op)                                                     \
  static const ::flowtrain::step_resources_internal::StepResourceOpRegistrar ft_step_resource_op_##ctr \
      [[maybe_unused]] (op)
#define FT_REGISTER_STEP_RESOURCE_OP(op) FT_REGISTER_STEP_RESOURCE_OP_UNIQ_HELPER(__COUNTER__, op)

}  // namespace flowtrain

#endif  // FLOWTRAIN_FRAMEWORK_INTERNAL_STEP_RESOURCES_H_
