// GraphToFunctionDef: a TensorFlow FunctionDef made from a Graph holding a function's body,
// as TF's graph_to_function_def does. The placeholders given as arguments become the
// signature's input_args, the outputs given as results its output_args (with their `ret`
// entries), and every other node of the graph a node_def of the body, its inputs rewritten to
// the "node:output_arg:index" form FunctionDef bodies use ("arg" for an argument, "^node" for
// a control input). How the dataset builders (ops/dataset_ops.h) turn a C++ function that
// builds ops into the `f` of a MapDataset or FlatMapDataset.
//
//   Graph body;
//   auto as_default = body.AsDefault();
//   Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
//   Output y = ops::Add(x, ops::Const(1.f));
//   tensorflow::FunctionDef f = GraphToFunctionDef(body, "add_one", {x}, {y});
//   outer.library().AddFunction(f);
//
// The FunctionDef has no attrs (every dtype is fixed) and no control results. Argument names
// are the placeholders' node names made valid argument names ([a-z][a-z0-9_]*, unique);
// results are named `output_names` when given, else "output_0", "output_1"... The graph's own
// library is not copied (a caller adding the function to another graph adds it too).
// Throws InvalidArgument: an argument that is not a Placeholder output of `body` (or is given
// twice), a result not of `body`, another Placeholder in the body (a function cannot be fed),
// an invalid function name, output_names of the wrong size.
#ifndef FLOWTRAIN_GRAPH_GRAPH_TO_FUNCTION_DEF_H_
#define FLOWTRAIN_GRAPH_GRAPH_TO_FUNCTION_DEF_H_

#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/proto/function.pb.h"

namespace flowtrain {

tensorflow::FunctionDef GraphToFunctionDef(const Graph& body, std::string_view name,
                                           const std::vector<Output>& arguments,
                                           const std::vector<Output>& results,
                                           const std::vector<std::string>& output_names = {});

// The name of output `index` of `node` inside a FunctionDef body: "<node>:<output_arg>:<i>",
// where output_arg is the op's output argument holding that output and i its position in it.
std::string FunctionBodyOutputName(const Node& node, int index);

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_GRAPH_TO_FUNCTION_DEF_H_
