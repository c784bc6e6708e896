// Kernels of the dividing ops: RealDiv and Div, FloorDiv, TruncateDiv, TruncateMod and Mod,
// FloorMod, DivNoNan, with broadcasting (cwise_binary_op.h). Integer division by zero is an
// InvalidArgument and min / -1 wraps, as in TensorFlow.
#include "flowtrain/kernels/internal/cwise_binary_functors.h"
#include "flowtrain/kernels/internal/cwise_binary_op.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

using namespace cwise_internal;  // NOLINT: the shared elementwise machinery

FT_REGISTER_KERNEL("RealDiv", BinaryCwiseOp<RealDivFn>);
FT_REGISTER_KERNEL("FloorDiv", BinaryCwiseOp<FloorDivFn>);
FT_REGISTER_KERNEL("Div", BinaryCwiseOp<RealDivFn>);
FT_REGISTER_KERNEL("TruncateDiv", BinaryCwiseOp<TruncateDivFn>);
FT_REGISTER_KERNEL("TruncateMod", BinaryCwiseOp<TruncateModFn>);
FT_REGISTER_KERNEL("Mod", BinaryCwiseOp<TruncateModFn>);
FT_REGISTER_KERNEL("FloorMod", BinaryCwiseOp<FloorModFn>);
FT_REGISTER_KERNEL("DivNoNan", BinaryCwiseOp<DivNoNanFn>);

}  // namespace
}  // namespace flowtrain
