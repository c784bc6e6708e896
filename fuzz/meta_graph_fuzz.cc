// Feeds the input to train::ImportMetaGraph as a `.meta` file (binary MetaGraphDef): the graph,
// its collections and its SaverDef are rebuilt into an empty graph.
#include <cstdint>
#include <string>

#include "flowtrain/graph/graph.h"
#include "flowtrain/train/meta_graph.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = flowtrain::fuzz::WriteScratchFile("model.ckpt-1.meta", data, size);
  flowtrain::fuzz::AcceptErrors([&] {
    flowtrain::Graph graph;
    flowtrain::train::ImportMetaGraph(path, &graph);
  });
  return 0;
}
