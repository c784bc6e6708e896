// The function lowering a Session applies before it compiles a plan for a graph that calls
// functions of its library: every call is inlined and every functional control-flow op
// becomes TF1's primitives, as TF's own lowering passes do, so a call costs no more than the
// nodes it holds and the executor needs no kernel for calls.
//
//  - PartitionedCall, StatefulPartitionedCall and a node whose op is a library function: the
//    body's nodes under "<call>/", its arguments through Identity nodes "<call>/input/_<i>",
//    its results through "<call>/output/_<i>"; the call's control inputs gate the inputs
//    and the body's input-less nodes (a NoOp "<call>/input_control_node").
//  - If, StatelessIf: a Switch of every input on the predicate (ToBool first when it is not a
//    bool), the branches inlined behind pivots "<if>/pivot_t" and "<if>/pivot_f", a Merge
//    "<if>/output_<i>" of each result.
//  - While, StatelessWhile: per loop variable Enter (frame named after the While, its
//    parallel_iterations) -> Merge -> Switch on LoopCond(cond) -> body -> NextIteration, and
//    an Exit.
//  - Case, StatelessCase: a chain of the If lowering, branch k taken when the index is k, the
//    last branch otherwise (TF lowers to one _SwitchN; the chain needs no new primitive).
// A lowered node leaves an IdentityN (a NoOp without outputs) of its name standing for it, so
// fetching "call:0", feeding it and control dependencies on the call still work; it waits for
// the function's control_ret nodes. Function attrs ("$T" placeholders in the body) take the
// call's values. Nested calls are lowered in turn.
//
//   if (CallsFunctions(graph)) std::unique_ptr<Graph> lowered = LowerFunctionCalls(graph);
//
// Errors (InvalidArgument, naming the node and the function): a function missing from the
// library, a function that calls itself (directly or through others), inputs or outputs whose
// number or dtypes differ from the function's signature, a missing attr, calls nested more
// than 100 deep. ResourceExhausted: calls that would inline more than 2^20 body nodes. Both
// bounds are checked before anything is built, so a small hostile library can neither
// overflow the stack nor fill the memory.
#ifndef FLOWTRAIN_RUNTIME_INTERNAL_FUNCTION_LOWERING_H_
#define FLOWTRAIN_RUNTIME_INTERNAL_FUNCTION_LOWERING_H_

#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/types.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/proto/function.pb.h"
#include "flowtrain/proto/graph.pb.h"

namespace flowtrain {

// True when a node of `graph` calls a function: a call or functional control-flow op, or an
// op named after a function of the graph's library.
bool CallsFunctions(const Graph& graph);

// `graph_def` with every function call lowered (its library kept). The input is unchanged.
tensorflow::GraphDef LowerFunctionCalls(const tensorflow::GraphDef& graph_def);

// A new graph holding `graph` with every function call lowered: the nodes of `graph` keep
// their names, so its endpoints map to the new graph's by name.
std::unique_ptr<Graph> LowerFunctionCalls(const Graph& graph);

// The flattened dtypes of `function`'s arguments and results with `attrs` bound (its
// signature's attr defaults filling in the others), as a call of it must have them.
// InvalidArgument naming the function when an attr they need has no value.
void FunctionSignatureTypes(const tensorflow::FunctionDef& function,
                            const google::protobuf::Map<std::string, tensorflow::AttrValue>& attrs,
                            std::vector<DataType>* inputs, std::vector<DataType>* outputs);

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_INTERNAL_FUNCTION_LOWERING_H_
