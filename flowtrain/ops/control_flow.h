// Conditionals and loops as TF 1.x builds them (control flow v1): tf.cond, tf.case and
// tf.while_loop, with TF's node names ("cond/Switch", "cond/switch_t", "cond/Merge",
// "while/Enter", "while/LoopCond", "while/Exit"...), so that the GraphDefs match TF's node
// for node and the gradient functions (control_flow_grad.cc) can differentiate through them.
//
//   Output r = ops::Cond(x > zero, [&] { return ops::Square(x); }, [&] { return -x; });
//   std::vector<Output> out = ops::WhileLoop(
//       [&](const std::vector<Output>& v) { return v[0] < ten; },
//       [&](const std::vector<Output>& v) { return std::vector<Output>{v[0] + one, v[1] * x}; },
//       {i0, x});
//
// The branch and body functions are called once, while building, with the graph's context
// set so that every node they build is gated by the predicate or runs in the loop's frame.
// Bad input (a non-scalar or non-bool predicate, branches returning different numbers or
// types of tensors, a body changing a loop variable's type or shape) throws InvalidArgument
// naming the cond or loop. Not thread safe: build one graph's control flow from one thread.
#ifndef FLOWTRAIN_OPS_CONTROL_FLOW_H_
#define FLOWTRAIN_OPS_CONTROL_FLOW_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

// A cond branch: builds and returns the branch's results.
using BranchFn = std::function<std::vector<Output>()>;
using SingleBranchFn = std::function<Output()>;

// tf.cond: the results of `true_fn` where the scalar bool `pred` is true, else of `false_fn`
// (one Merge per result, "cond/Merge", "cond/Merge_1"...). Both must return as many tensors,
// of the same dtypes, and at least one.
std::vector<Output> Cond(Output pred, const BranchFn& true_fn, const BranchFn& false_fn,
                         std::string_view name = "cond");
Output Cond(Output pred, const SingleBranchFn& true_fn, const SingleBranchFn& false_fn,
            std::string_view name = "cond");

// tf.case (exclusive=False): the results of the first branch whose predicate is true, else
// of `default_fn`, built as TF does: nested conds "case/cond", "case/cond/cond"...
std::vector<Output> Case(const std::vector<std::pair<Output, BranchFn>>& pred_fn_pairs,
                         const BranchFn& default_fn, std::string_view name = "case");
Output Case(const std::vector<std::pair<Output, SingleBranchFn>>& pred_fn_pairs,
            const SingleBranchFn& default_fn, std::string_view name = "case");

// A loop's condition (returns a scalar bool) and body (returns the next loop variables),
// both called with the current loop variables.
using LoopCondFn = std::function<Output(const std::vector<Output>&)>;
using LoopBodyFn = std::function<std::vector<Output>(const std::vector<Output>&)>;

struct WhileLoopOptions {
  // How many iterations may run at once (the Enters' parallel_iterations).
  int64_t parallel_iterations = 10;
  // Whether gradients may flow through the loop (TF keeps it on the WhileContext).
  bool back_prop = true;
  // A scalar int32/int64: the loop also stops after this many iterations (TF adds a
  // counter loop variable, "while/iteration_counter").
  std::optional<Output> maximum_iterations;
  // One shape per loop variable that its value may take across iterations (default: its
  // initial shape); each must be compatible with the initial shape.
  std::vector<PartialTensorShape> shape_invariants;
  std::string_view name = "while";
};

// tf.while_loop: runs `body` while `cond` holds, starting from `loop_vars`; returns the loop
// variables' final values (the Exits). The body must return as many tensors as `loop_vars`,
// of the same dtypes, each with a shape within its shape invariant.
std::vector<Output> WhileLoop(const LoopCondFn& cond, const LoopBodyFn& body,
                              const std::vector<Output>& loop_vars, const WhileLoopOptions& options = {});

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_CONTROL_FLOW_H_
