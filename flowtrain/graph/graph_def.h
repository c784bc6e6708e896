// GraphDef import: rebuilds nodes of a TF GraphDef (ours or TensorFlow's) into a Graph, as
// `tf.import_graph_def` does. Export is Graph::ToGraphDef().
//
//   tensorflow::GraphDef def = g.ToGraphDef();
//   Graph copy;
//   ImportGraphDef(def, &copy);              // same names; with a prefix: "import/..."
//
// Nodes may appear in any order; every op type must be registered (NotFound otherwise, naming
// the op type and node).
#ifndef FLOWTRAIN_GRAPH_GRAPH_DEF_H_
#define FLOWTRAIN_GRAPH_GRAPH_DEF_H_

#include <string_view>

#include "flowtrain/graph/graph.h"
#include "flowtrain/proto/graph.pb.h"

namespace flowtrain {

// TF's GraphDef version of the graphs we write (TF 1.14's, as in the fixtures).
inline constexpr int kGraphDefProducer = 38;
inline constexpr int kGraphDefMinConsumer = 12;

// Adds the nodes of `graph_def` to `graph`, each name prefixed with `prefix` + "/" when the
// prefix is not empty.
void ImportGraphDef(const tensorflow::GraphDef& graph_def, Graph* graph,
                    std::string_view prefix = {});

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_GRAPH_DEF_H_
