// CaptureExternalInputs: makes a graph a function body that captures the tensors of other
// graphs, as TF's FuncGraph does. While the guard lives, an op built on this thread with `body`
// as the default graph and an input from another graph gets `capture(input)` instead (an
// Output of `body`, typically a placeholder standing for the outer tensor), so that a lambda
// building a function may use the tensors of the graph around it; the caller then passes the
// outer tensors to the function's call (a MapDataset's `other_arguments`).
//
//   Graph body;
//   auto as_default = body.AsDefault();
//   std::vector<Output> outer_tensors;
//   auto capturing = CaptureExternalInputs(body, [&](const Output& outer) {
//     outer_tensors.push_back(outer);
//     return ops::Placeholder(outer.dtype(), outer.shape(), "captured");
//   });
//   Output y = ops::Mul(x, scale_of_outer_graph);   // built in `body`, on the placeholder
//
// The innermost guard of the thread applies (nested function bodies each capture from the
// graph around them); guards must exit in reverse order. Only inputs are captured: a control
// input from another graph stays an error of NodeBuilder. Thread safety: the guard is the
// calling thread's; `capture` runs on it.
#ifndef FLOWTRAIN_GRAPH_FUNCTION_CAPTURE_H_
#define FLOWTRAIN_GRAPH_FUNCTION_CAPTURE_H_

#include <functional>

#include "flowtrain/graph/graph.h"

namespace flowtrain {

using CaptureFunction = std::function<Output(const Output&)>;

ScopeGuard CaptureExternalInputs(Graph& body, CaptureFunction capture);

// The capture function of the innermost guard of this thread if it is for `graph`, else
// an empty function. Used by NodeBuilder.
CaptureFunction CaptureFunctionFor(const Graph& graph);

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_FUNCTION_CAPTURE_H_
