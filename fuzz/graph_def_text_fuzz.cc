// Feeds the input to ImportGraphDef as a GraphDef in protobuf text format (a `.pbtxt`) and
// exports the imported graph again.
#include <cstdint>
#include <string>

#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "fuzz/fuzz_util.h"
#include "google/protobuf/text_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensorflow::GraphDef def;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(true);
  if (!parser.ParseFromString(std::string(reinterpret_cast<const char*>(data), size), &def)) return 0;
  flowtrain::fuzz::AcceptErrors([&] {
    flowtrain::Graph graph;
    flowtrain::ImportGraphDef(def, &graph);
    graph.ToGraphDef();
  });
  return 0;
}
