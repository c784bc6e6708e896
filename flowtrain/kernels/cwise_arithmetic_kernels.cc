// Kernels of Add (and AddV2, string concatenation too), Sub, Mul, Maximum, Minimum and
// SquaredDifference, with broadcasting (cwise_binary_op.h).
#include "flowtrain/kernels/internal/cwise_binary_functors.h"
#include "flowtrain/kernels/internal/cwise_binary_op.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

using namespace cwise_internal;  // NOLINT: the shared elementwise machinery

FT_REGISTER_KERNEL("Add", BinaryCwiseOp<AddFn>);
FT_REGISTER_KERNEL("AddV2", BinaryCwiseOp<AddFn>);
FT_REGISTER_KERNEL("Sub", BinaryCwiseOp<SubFn>);
FT_REGISTER_KERNEL("Mul", BinaryCwiseOp<MulFn>);
FT_REGISTER_KERNEL("Maximum", BinaryCwiseOp<MaximumFn>);
FT_REGISTER_KERNEL("Minimum", BinaryCwiseOp<MinimumFn>);
FT_REGISTER_KERNEL("SquaredDifference", BinaryCwiseOp<SquaredDifferenceFn>);

}  // namespace
}  // namespace flowtrain
