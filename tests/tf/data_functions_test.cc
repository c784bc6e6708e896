// tf.data pipelines TensorFlow serialised run unchanged in flowtrain (issue #20): TF 2.21 builds
// them in graph mode (TFRecord files -> map(parse_single_example) -> map(arithmetic with a
// captured tensor) -> filter -> shuffle(seed) -> padded_batch -> prefetch; flat_map; interleave;
// parallel interleave; parallel map), writes the GraphDef, whose map, filter, flat_map and
// interleave functions are FunctionDefs of its library, and the elements it yields
// (interop/tf_data_functions.py); flowtrain imports the GraphDef and must yield the same.
// The other way round, flowtrain builds pipelines with its builders over functions that build
// ops (MapGraph with DecodeCSV and captured tensors, FilterGraph, FlatMap over TextLine files,
// Interleave, ParallelInterleave, Window + FlatMap, MakeOneShotIterator); TF imports the
// GraphDef (interop/run_flowtrain_pipelines.py) and must yield flowtrain's elements.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/parsing_ops.h"
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

// Pipelines flowtrain builds with the builders over op-building functions, as TF imports and
// runs them: the same elements, in the same order.
TEST(FlowtrainBuiltPipelines, TensorFlowYieldsFlowtrainsElements) {
  using data::Dataset;
  const std::string dir = MakeTempDir("flowtrain_data_functions");
  WriteFileAtomically(dir + "/a.csv", "1,10\n2,20\n");
  WriteFileAtomically(dir + "/b.csv", "3,30\n4,40\n5,50\n");
  Graph g;
  auto as_default = g.AsDefault();
  Output scale = ops::Const(2.5f, "scale");
  Output offset = ops::Const(int64_t{100}, "offset");
  Output tens = ops::Const({int64_t{10}, int64_t{20}}, "tens");
  auto decode = [&](const std::vector<Output>& e) {
    std::vector<Output> cols = ops::DecodeCSV(e[0], {ops::Const(int64_t{0}), ops::Const(0.f)});
    return std::vector<Output>{ops::Add(cols[0], offset), ops::Mul(cols[1], scale)};
  };
  auto plus_tens = [&](const std::vector<Output>& e) {
    return Dataset::FromTensorSlices(std::vector<Output>{ops::Add(tens, e[0])});
  };
  auto batches = [](const std::vector<Output>& w) {
    return Dataset::FromVariant(w[0], {DT_INT64}, {PartialTensorShape({})}).Batch(3);
  };
  std::vector<std::pair<std::string, Dataset>> pipelines = {
      {"graph_map", Dataset::FromTensorSlices({Tensor::FromVector<std::string>({"1,0.5", "7,-2", "3,4.25"})})
                        .MapGraph(decode)},
      {"text_flat_map",
       Dataset::FromTensorSlices({Tensor::FromVector<std::string>({dir + "/a.csv", dir + "/b.csv"})})
           .FlatMap([&](const std::vector<Output>& f) { return Dataset::TextLine(f[0]).MapGraph(decode); })},
      {"graph_filter", Dataset::Range(0, 10).FilterGraph([](const std::vector<Output>& e) {
         return ops::Equal(ops::FloorMod(e[0], ops::Const(int64_t{3})), ops::Const(int64_t{0}));
       })},
      {"flat_map", Dataset::Range(1, 4).FlatMap(plus_tens)},
      {"interleave", Dataset::Range(1, 5).Interleave(plus_tens, 3, 1)},
      {"parallel_interleave", Dataset::Range(1, 5).ParallelInterleave(plus_tens, 2, 2, 2)},
      {"window", Dataset::Range(0, 8).Window(3, 2).FlatMap(batches)},
      {"window_stride", Dataset::Range(0, 9).Window(2, 3, 2, /*drop_remainder=*/true).FlatMap(batches)},
  };
  struct Built {
    std::string name, initializer, get_next;
    int components;
  };
  std::vector<Built> built;
  for (auto& [name, ds] : pipelines) {
    data::Iterator it = ds.MakeInitializableIterator();
    std::vector<Output> next = it.GetNext("next_" + name);
    built.push_back({name, it.initializer().name(), next[0].op().name(), static_cast<int>(next.size())});
  }
  {
    data::Iterator it = Dataset::Range(0, 5)
                            .MapGraph([&](const std::vector<Output>& e) {
                              return std::vector<Output>{ops::Mul(e[0], ops::Const(int64_t{2}))};
                            })
                            .MakeOneShotIterator();
    built.push_back({"one_shot", "-", it.GetNext("next_one_shot")[0].op().name(), 1});
  }
  WriteFileAtomically(dir + "/pipelines.pb", g.ToGraphDef().SerializeAsString());
  std::string list;
  for (const Built& b : built) {
    list += b.name + " " + b.initializer + " " + b.get_next + " " + std::to_string(b.components) + "\n";
  }
  WriteFileAtomically(dir + "/pipelines.txt", list);
  PythonRun r = RunTfPython({TfScript("interop/run_flowtrain_pipelines.py"), "--graph", dir + "/pipelines.pb",
                             "--pipelines", dir + "/pipelines.txt", "--out", dir + "/tf_elements.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Pipeline> theirs = ReadExpected(dir + "/tf_elements.txt");
  ASSERT_EQ(theirs.size(), built.size());

  Session session(g);
  const std::vector<std::pair<std::string, Tensor>> no_feeds;
  for (size_t i = 0; i < built.size(); ++i) {
    const Built& b = built[i];
    if (b.initializer != "-") session.Run(no_feeds, {}, std::vector<std::string>{b.initializer});
    std::vector<std::string> fetches;
    for (int c = 0; c < b.components; ++c) fetches.push_back(b.get_next + ":" + std::to_string(c));
    std::vector<Element> ours;
    try {
      for (;;) {
        Element e;
        for (const Tensor& t : session.Run(no_feeds, fetches, {})) e.push_back(ToComponent(t));
        ours.push_back(e);
      }
    } catch (const OutOfRangeError&) {
    }
    EXPECT_EQ(theirs[i].name, b.name);
    EXPECT_FALSE(ours.empty()) << b.name;
    EXPECT_EQ(ours, theirs[i].elements) << b.name;
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
