// tf.data pipelines TensorFlow serialised run unchanged in flowtrain (issue #20): TF 2.21 builds
// them in graph mode (TFRecord files -> map(parse_single_example) -> map(arithmetic with a
// captured tensor) -> filter -> shuffle(seed) -> padded_batch -> prefetch; flat_map; interleave;
// parallel interleave; parallel map), writes the GraphDef, whose map, filter, flat_map and
// interleave functions are FunctionDefs of its library, and the elements it yields
// (interop/tf_data_functions.py); flowtrain imports the GraphDef and must yield the same.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

// One component of an element, as text both sides write the same way.
struct Component {
  std::string dims;                 // "2,3", "-" for a scalar
  std::vector<std::string> values;  // floats as Python's repr of a double, ints in decimal
  bool operator==(const Component&) const = default;
  bool operator<(const Component& o) const { return std::tie(dims, values) < std::tie(o.dims, o.values); }
};
using Element = std::vector<Component>;

struct Pipeline {
  std::string name, initializer, get_next;
  int components = 0;
  std::vector<Element> elements;
};

// Python's repr of a float32 value widened to double: the shortest text that reads back as
// that double. Both sides print the double the float32 widens to, so %.17g read back is exact.
std::string FloatText(float v) {
  std::ostringstream s;
  s.precision(17);
  s << static_cast<double>(v);
  return s.str();
}

Component ToComponent(const Tensor& t) {
  Component c;
  for (int d = 0; d < t.dims(); ++d) c.dims += (d == 0 ? "" : ",") + std::to_string(t.dim_size(d));
  if (c.dims.empty()) c.dims = "-";
  if (t.dtype() == DT_FLOAT) {
    for (float v : Values<float>(t)) c.values.push_back(FloatText(v));
  } else {
    for (int64_t v : Values<int64_t>(t)) c.values.push_back(std::to_string(v));
  }
  return c;
}

// Normalises Python's float text ("3.0", "0.1") to the same form as FloatText.
std::string NormalFloat(const std::string& text) { return FloatText(static_cast<float>(std::stod(text))); }

std::vector<Pipeline> ReadExpected(const std::string& path) {
  std::ifstream in(path);
  std::vector<Pipeline> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string kind;
    s >> kind;
    if (kind == "pipeline") {
      Pipeline& p = out.emplace_back();
      s >> p.name >> p.initializer >> p.get_next >> p.components;
      continue;
    }
    size_t index = 0, component = 0;
    std::string dtype;
    Component c;
    s >> index >> component >> dtype >> c.dims;
    for (std::string v; s >> v;) c.values.push_back(dtype == "float32" ? NormalFloat(v) : v);
    std::vector<Element>& elements = out.back().elements;
    if (elements.size() <= index) elements.resize(index + 1);
    elements[index].push_back(c);
  }
  return out;
}

class DataFunctions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("tf_data_functions"));
    PythonRun r = RunTfPython({TfScript("interop/tf_data_functions.py"), "--out", *dir_});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  void SetUp() override {
    tensorflow::GraphDef graph_def;
    ASSERT_TRUE(graph_def.ParseFromString(ReadFileToString(*dir_ + "/pipelines.pb")));
    // As TF wrote it: flowtrain's dataset ops have every attr TF 2.21 writes, inside the
    // library's functions too.
    ImportGraphDef(graph_def, &graph_);
    session_ = std::make_unique<Session>(graph_);
    pipelines_ = ReadExpected(*dir_ + "/expected.txt");
  }

  const Pipeline& Find(const std::string& name) {
    for (const Pipeline& p : pipelines_)
      if (p.name == name) return p;
    ADD_FAILURE() << "no pipeline " << name;
    return pipelines_.front();
  }

  std::vector<Element> Run(const Pipeline& p) {
    const std::vector<std::pair<std::string, Tensor>> no_feeds;
    session_->Run(no_feeds, {}, std::vector<std::string>{p.initializer});
    std::vector<std::string> fetches;
    for (int i = 0; i < p.components; ++i) fetches.push_back(p.get_next + ":" + std::to_string(i));
    std::vector<Element> out;
    try {
      for (;;) {
        Element e;
        for (const Tensor& t : session_->Run(no_feeds, fetches, {})) e.push_back(ToComponent(t));
        out.push_back(e);
      }
    } catch (const OutOfRangeError&) {
    }
    return out;
  }

  static std::string* dir_;
  Graph graph_;
  std::unique_ptr<Session> session_;
  std::vector<Pipeline> pipelines_;
};
std::string* DataFunctions::dir_ = nullptr;

TEST_F(DataFunctions, TheGraphCarriesTheFunctionsAsFunctionDefs) {
  for (const char* op : {"MapDataset", "FilterDataset", "FlatMapDataset", "InterleaveDataset",
                         "ParallelInterleaveDatasetV4", "ParallelMapDatasetV2"}) {
    bool found = false;
    for (int i = 0; i < graph_.num_nodes(); ++i) {
      const Node* n = graph_.node(i);
      if (n->type() != op) continue;
      found = true;
      const std::string f = n->GetAttrValue(n->type() == "FilterDataset" ? "predicate" : "f").func().name();
      EXPECT_NE(graph_.library().Find(f), nullptr) << op << " calls " << f;
    }
    EXPECT_TRUE(found) << op;
  }
}

TEST_F(DataFunctions, ParseMapFilterShufflePaddedBatchPrefetchYieldTensorFlowsElements) {
  const Pipeline& p = Find("main");
  const std::vector<Element> ours = Run(p);
  ASSERT_FALSE(p.elements.empty());
  // flowtrain's ShuffleDataset draws as TF's does: the same seeds give the same batches, in order.
  EXPECT_EQ(ours, p.elements);
  // Each batch is padded to its longest row, with padding_values' -1.
  for (const Element& e : ours) {
    ASSERT_EQ(e.size(), 2u);
    const size_t batch = e[1].values.size();
    EXPECT_TRUE(e[0].dims.starts_with(std::to_string(batch) + ",")) << e[0].dims;
  }
}

TEST_F(DataFunctions, FlatMapAndInterleaveYieldTensorFlowsOrder) {
  for (const char* name : {"flat_map", "interleave", "parallel_interleave", "parallel_map"}) {
    const Pipeline& p = Find(name);
    EXPECT_FALSE(p.elements.empty()) << name;
    EXPECT_EQ(Run(p), p.elements) << name;
  }
}

TEST_F(DataFunctions, ShufflesInsideFunctionsYieldTensorFlowsOrder) {
  // TF wrote them as ShuffleDatasetV3 over DummySeedGenerator.
  int v3 = 0;
  for (const std::string& f : graph_.library().ListFunctions()) {
    for (const auto& node : graph_.library().Find(f)->node_def()) v3 += node.op() == "ShuffleDatasetV3";
  }
  EXPECT_EQ(v3, 2);
  for (const char* name : {"shuffle_in_flat_map", "fixed_shuffle_in_flat_map"}) {
    const Pipeline& p = Find(name);
    EXPECT_FALSE(p.elements.empty()) << name;
    EXPECT_EQ(Run(p), p.elements) << name;
  }
}

}  // namespace
}  // namespace flowtrain::testing
