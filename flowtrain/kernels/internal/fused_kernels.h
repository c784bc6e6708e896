// Kernels of fused nodes: the graph rewrites of runtime/graph_rewrite.h put one of these in a
// run's plan in place of a group of graph nodes, which then never materialise the tensors
// passed inside the group. Each kernel is created for the group's last node (its name, its
// outputs) and takes the group's outside inputs in the order given below.
//
//   // MatMul -> BiasAdd -> Relu as TF's _FusedMatMul, inputs (a, b, bias):
//   std::unique_ptr<OpKernel> k = CreateFusedMatMulKernel(*matmul, *bias_add, relu);
#ifndef FLOWTRAIN_KERNELS_INTERNAL_FUSED_KERNELS_H_
#define FLOWTRAIN_KERNELS_INTERNAL_FUSED_KERNELS_H_

#include <memory>

#include "flowtrain/graph/node.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {

// TF's _FusedMatMul with fused_ops [BiasAdd] or [BiasAdd, Relu] (`relu` null for the first):
// inputs (a, b, bias) of the MatMul and the BiasAdd; the output of the last node,
// relu(op(a) * op(b) + bias), the bias and the clamp applied to each tile of the product
// while it is in registers.
std::unique_ptr<OpKernel> CreateFusedMatMulKernel(const Node& matmul, const Node& bias_add, const Node* relu);

// ReluGrad of a product (flowtrain's own fusion, not TF's): MatMul -> ReluGrad's gradients,
// the product zeroed where the features are not positive as each tile is stored. Inputs
// (a, b, features): the MatMul's, then ReluGrad's second; output: ReluGrad's.
std::unique_ptr<OpKernel> CreateMatMulReluGradKernel(const Node& matmul, const Node& relu_grad);

// A weight gradient applied straight to its variable (flowtrain's own fusion, not TF's):
// MatMul -> ApplyGradientDescent's delta, computed as var -= alpha * op(a) * op(b), one GEMM
// accumulating into the variable's buffer. Inputs (var: ref, alpha, a, b): the
// ApplyGradientDescent's first two, then the MatMul's; output: the variable, as
// ApplyGradientDescent's ref output.
std::unique_ptr<OpKernel> CreateMatMulApplyGradientDescentKernel(const Node& matmul, const Node& apply);

}  // namespace flowtrain

#endif  // FLOWTRAIN_KERNELS_INTERNAL_FUSED_KERNELS_H_
