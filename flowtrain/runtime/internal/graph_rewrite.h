// The graph rewrite a run's plan gets when it is compiled (executor.h): the nodes the run
// needs become the nodes it executes, some groups of them fused into one kernel that never
// materialises the tensors passed inside the group. The graph itself is not changed: its
// nodes, names, collections and checkpoints stay as built; only the executable copy differs.
//
// Fusions (all on when ConfigProto::remapping is true, none when it is false):
//  - TF's remapper (grappler, CPU): MatMul -> BiasAdd (-> Relu) becomes _FusedMatMul with
//    fused_ops [BiasAdd] or [BiasAdd, Relu], named after the group's last node; the bias and
//    the clamp are applied to each tile of the product while it is in registers.
//  - flowtrain's own: a MatMul feeding only the delta of an ApplyGradientDescent (a weight
//    gradient of 32 columns or more) becomes _FusedMatMulApplyGradientDescent named after the
//    ApplyGradientDescent: var -= lr * op(a) * op(b) as one product accumulating into the
//    variable, so the gradient is never written and read back.
//  - flowtrain's own: a MatMul feeding only the gradients of a ReluGrad (a layer's input
//    gradient going back through its ReLU) becomes _FusedMatMulReluGrad named after the
//    ReluGrad: the product zeroed where the features are not positive as it is stored.
// A group fuses only when every tensor passed inside it has no other consumer in the run,
// is neither fed nor fetched, its nodes are not targets (but the last), nothing
// control-depends on them, and all of them ask for the same device. The fused node waits
// for everything the group's nodes waited for, and stands for the last node: its outputs,
// fetches of them and control dependencies on it.
//
//   std::vector<ExecNode> exec = RewriteForExecution(needed, feeds, fetches, targets, true);
#ifndef FLOWTRAIN_RUNTIME_INTERNAL_GRAPH_REWRITE_H_
#define FLOWTRAIN_RUNTIME_INTERNAL_GRAPH_REWRITE_H_

#include <memory>
#include <string>
#include <vector>

#include "flowtrain/graph/node.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {

// One node of an executable plan: a graph node as it is, or a fused group standing for several.
struct ExecNode {
  // The graph node it stands for: its name, outputs and errors (a group's last node).
  const Node* node = nullptr;
  // The op it runs, for traces: node->type(), or the fused op ("_FusedMatMul").
  std::string type;
  std::vector<Endpoint> inputs;
  std::vector<bool> ref_inputs;  // per input: the kernel takes the variable itself
  std::vector<const Node*> control_inputs;
  std::vector<const Node*> fused;    // the group's other graph nodes, first to last
  std::unique_ptr<OpKernel> kernel;  // a group's kernel; null: the session's kernel of `node`
};

// One ExecNode per node of `nodes` (the nodes a run needs), groups fused when `remapping`.
// `feeds`, `fetches` and `targets` are the run's.
std::vector<ExecNode> RewriteForExecution(const std::vector<const Node*>& nodes,
                                          const std::vector<Endpoint>& feeds,
                                          const std::vector<Endpoint>& fetches,
                                          const std::vector<const Node*>& targets, bool remapping);

// TF's dependency optimizer (grappler), as far as it changes what runs: a node none of whose
// outputs a running kernel reads -- reached only through control edges, as the input gradient
// of a network's first layer is, through its gradient's tuple -- runs as a NoOp. It still
// waits for its inputs and what waits for it still waits, but its kernel does not run (nor
// fail). Nodes that may have effects always run: stateful ops, ops taking or giving references
// or resources, control flow, placeholders, ops without outputs, fetched nodes and targets.
// Turned off by ConfigProto::dependency_optimization = false.
void SkipKernelsNothingReads(std::vector<ExecNode>& exec, const std::vector<Endpoint>& feeds,
                             const std::vector<Endpoint>& fetches, const std::vector<const Node*>& targets);

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_INTERNAL_GRAPH_REWRITE_H_
