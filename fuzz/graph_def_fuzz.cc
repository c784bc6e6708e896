// Feeds the input to ImportGraphDef as a binary GraphDef and exports the imported graph again.
#include <cstdint>

#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensorflow::GraphDef def;
  if (!def.ParseFromArray(data, static_cast<int>(size)))
    return 0;  // protobuf's own parser is not ours to fuzz
  flowtrain::fuzz::AcceptErrors([&] {
    flowtrain::Graph graph;
    flowtrain::ImportGraphDef(def, &graph, "import");
    graph.ToGraphDef();
  });
  return 0;
}
