// Elementwise binary kernels with numpy broadcasting, shared by the arithmetic and comparison
// ops. Same-shape and scalar operands take vectorized Eigen paths; other shapes broadcast
// through stride arithmetic. Large outputs are split across the intra-op pool.
//
//   class AddOp : public BinaryCwiseOp<AddFunctor> { ... };
#ifndef FLOWTRAIN_KERNELS_INTERNAL_CWISE_BINARY_H_
#define FLOWTRAIN_KERNELS_INTERNAL_CWISE_BINARY_H_

#include "flowtrain/core/tensor.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {

// The broadcast shape of two operands; InvalidArgument naming the op if incompatible.
TensorShape BroadcastOutputShape(const TensorShape& x, const TensorShape& y, std::string_view op);

// For each output element, the flat index into an operand of shape `in` broadcast to `out`
// is sum(coord[d] * stride[d]); these are those strides (0 on broadcast dimensions), aligned
// to the output's rank.
DimVector BroadcastStrides(const TensorShape& in, const TensorShape& out);

}  // namespace flowtrain

#endif  // FLOWTRAIN_KERNELS_INTERNAL_CWISE_BINARY_H_
