// GraphDef import: rebuilds nodes of a TF GraphDef (ours or TensorFlow's) into a Graph, as
// `tf.import_graph_def` does. Export is Graph::ToGraphDef().
//
//   tensorflow::GraphDef def = g.ToGraphDef();
//   Graph copy;
//   ImportGraphDef(def, &copy);              // same names; with a prefix: "import/..."
//
// Nodes may appear in any order; every op type must be registered (NotFound otherwise, naming
// the op type and node). The GraphDef's function library joins the graph's (a function
// already there must be identical; InvalidArgument otherwise).
#ifndef FLOWTRAIN_GRAPH_GRAPH_DEF_H_
#define FLOWTRAIN_GRAPH_GRAPH_DEF_H_

#include <string_view>

#include "flowtrain/graph/graph.h"
#include "flowtrain/proto/graph.pb.h"
#include "flowtrain/proto/op_def.pb.h"

namespace flowtrain {

// TF's GraphDef version of the graphs we write (TF 1.14's, as in the fixtures).
inline constexpr int kGraphDefProducer = 38;
inline constexpr int kGraphDefMinConsumer = 12;

// Adds the nodes of `graph_def` to `graph`, each name prefixed with `prefix` + "/" when the
// prefix is not empty.
void ImportGraphDef(const tensorflow::GraphDef& graph_def, Graph* graph, std::string_view prefix = {});

// Removes from `graph_def` every attr that flowtrain's op lacks but the producer's OpDef (in
// `producer_ops`, such as a MetaGraphDef's stripped_op_list) declares with a default equal to
// the node's value: attrs a newer TensorFlow added that leave the op's meaning unchanged at
// their defaults (MatMul's grad_a and grad_b since TF 2.12). TF's import_graph_def does the
// same with its producer_op_list. Attrs with other values stay, so the import still rejects
// them. The node_defs of the library's functions are cleaned too. Returns how many attrs it removed.
int RemoveNewDefaultAttrs(const tensorflow::OpList& producer_ops, tensorflow::GraphDef* graph_def);

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_GRAPH_DEF_H_
