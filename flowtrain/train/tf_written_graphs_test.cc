// Every graph in the TF-written fixtures, imported whole and run: the half_plus_two SavedModel's
// MetaGraph restored from its variables bundle, the graphs inside the TF 1.3 event files, and the
// Estimator's meta graph restored from model.ckpt-2000. The values expected are worked out by
// hand from the graphs and their checkpoints (tests/tf/tf_written_graphs_test.cc compares the
// Estimator's with TensorFlow's own). Each test skips when its fixture is absent.
//
// keras_tf_text_regression, tf2_half_plus_two_cpu and tf1_counter hold only variables/ (no
// graph to import); their bundles are read by io/checkpoint_reader_test.cc.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/proto/example.pb.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/proto/summary.pb.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/meta_graph.h"
#include "flowtrain/train/saver.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using Feeds = std::vector<std::pair<std::string, Tensor>>;
using ::flowtrain::testing::FixturePath;
using ::flowtrain::testing::Values;

std::vector<Tensor> RunNamed(Session& sess, const Feeds& feeds, const std::vector<std::string>& fetches,
                             const std::vector<std::string>& targets = {}) {
  return sess.Run(feeds, fetches, targets);
}

Tensor Column(const std::vector<float>& v) {
  Tensor t(DT_FLOAT, TensorShape({static_cast<int64_t>(v.size()), 1}));
  for (size_t i = 0; i < v.size(); ++i) t.flat<float>()[i] = v[i];
  return t;
}

// ---- tf1_half_plus_two_cpu: a SavedModel ----------------------------------------------------

class HalfPlusTwo : public ::testing::Test {
 protected:
  void SetUp() override {
    FLOWTRAIN_REQUIRE_FIXTURES("tf1_half_plus_two_cpu");
    tensorflow::SavedModel saved_model;
    ASSERT_TRUE(
        saved_model.ParseFromString(ReadFileToString(FixturePath("tf1_half_plus_two_cpu/saved_model.pb"))));
    ASSERT_EQ(saved_model.meta_graphs_size(), 1);
    meta_ = saved_model.meta_graphs(0);
    ASSERT_EQ(meta_.meta_info_def().tags(0), "serve");
    ImportGraphDef(meta_.graph_def(), &graph_);
    // Restored from the bundle with the MetaGraph's own SaverDef; no initializer runs, so every
    // value below comes from variables/variables.
    saver_ = std::make_unique<Saver>(graph_, meta_.saver_def());
    sess_ = std::make_unique<Session>(graph_);
    saver_->Restore(*sess_, FixturePath("tf1_half_plus_two_cpu/variables/variables"));
  }

  std::string Example(float x, std::optional<float> x2) {
    tensorflow::Example e;
    auto& features = *e.mutable_features()->mutable_feature();
    features["x"].mutable_float_list()->add_value(x);
    if (x2) features["x2"].mutable_float_list()->add_value(*x2);
    return e.SerializeAsString();
  }

  tensorflow::MetaGraphDef meta_;
  Graph graph_;
  std::unique_ptr<Saver> saver_;
  std::unique_ptr<Session> sess_;
};

TEST_F(HalfPlusTwo, ServingDefaultGivesHalfOfXPlusTwo) {
  const auto& signature = meta_.signature_def().at("serving_default");
  const std::string x = signature.inputs().at("x").name();
  const std::string y = signature.outputs().at("y").name();
  EXPECT_EQ(x, "x:0");
  EXPECT_EQ(y, "y:0");
  const std::vector<float> xs = {0.0f, 1.0f, 2.0f, -3.0f, 1e6f};
  const Tensor out = RunNamed(*sess_, {{x, Column(xs)}}, {y})[0];
  ASSERT_EQ(out.shape(), TensorShape({5, 1}));
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(out.flat<float>()[i], xs[i] / 2 + 2) << xs[i];
}

TEST_F(HalfPlusTwo, RegressSignaturesParseExamples) {
  // y = a*x + b, y2 = a*x + c, y3 = a2*x2 + c2, with a = a2 = 0.5, b = 2, c = c2 = 3 in the
  // bundle; x2 defaults to 0 when an Example lacks it.
  Tensor examples(DT_STRING, TensorShape({3}));
  examples.flat<std::string>()[0] = Example(4.0f, 10.0f);
  examples.flat<std::string>()[1] = Example(-2.0f, std::nullopt);
  examples.flat<std::string>()[2] = Example(0.5f, -1.0f);
  const std::vector<Tensor> out = RunNamed(*sess_, {{"tf_example:0", examples}}, {"y:0", "y2:0", "y3:0"});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{4.0f, 1.0f, 2.25f}));
  EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{5.0f, 2.0f, 3.25f}));
  EXPECT_EQ(Values<float>(out[2]), (std::vector<float>{8.0f, 3.0f, 2.5f}));
}

TEST_F(HalfPlusTwo, ItsSaverSavesWhatItRestored) {
  const std::string dir = testing::MakeTempDir("half_plus_two");
  const Tensor prefix = Tensor::Scalar<std::string>(dir + "/variables");
  RunNamed(*sess_, {{meta_.saver_def().filename_tensor_name(), prefix}},
           {meta_.saver_def().save_tensor_name()});
  io::CheckpointReader saved(dir + "/variables");
  io::CheckpointReader theirs(FixturePath("tf1_half_plus_two_cpu/variables/variables"));
  for (const char* name : {"a", "a2", "b", "c", "c2"}) {
    EXPECT_EQ(saved.GetTensor(name).scalar<float>(), theirs.GetTensor(name).scalar<float>()) << name;
  }
}

// ---- events_tf1_graph: the graphs TF 1.3 wrote into event files -----------------------------

tensorflow::GraphDef GraphOfEventFile(const std::string& run) {
  const std::vector<std::string> files = io::ListEventFiles(FixturePath("events_tf1_graph/" + run));
  if (files.size() != 1) InvalidArgument(run, " has ", files.size(), " event files, expected 1");
  for (const tensorflow::Event& event : io::ReadEventFile(files[0])) {
    if (event.what_case() != tensorflow::Event::kGraphDef) continue;
    tensorflow::GraphDef def;
    if (!def.ParseFromString(event.graph_def())) InvalidArgument(run, ": the graph_def event does not parse");
    return def;
  }
  InvalidArgument(run, " has no graph_def event");
}

std::map<std::string, tensorflow::Summary::Value> SummaryValues(const Tensor& serialized) {
  tensorflow::Summary summary;
  EXPECT_TRUE(summary.ParseFromString(serialized.scalar<std::string>()));
  std::map<std::string, tensorflow::Summary::Value> by_tag;
  for (const auto& value : summary.value()) by_tag[value.tag()] = value;
  return by_tag;
}

void ExpectHistogramOf(const tensorflow::Summary::Value& value, const std::vector<double>& xs) {
  ASSERT_TRUE(value.has_histo()) << value.tag();
  double sum = 0, squares = 0;
  for (double x : xs) sum += x, squares += x * x;
  EXPECT_EQ(value.histo().num(), static_cast<double>(xs.size()));
  EXPECT_EQ(value.histo().min(), *std::min_element(xs.begin(), xs.end()));
  EXPECT_EQ(value.histo().max(), *std::max_element(xs.begin(), xs.end()));
  EXPECT_EQ(value.histo().sum(), sum);
  EXPECT_EQ(value.histo().sum_squares(), squares);
}

TEST(EventFileGraphs, ExAddsConstantsAndSummarizesThem) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf1_graph");
  Graph g;
  ImportGraphDef(GraphOfEventFile("ex"), &g);
  Session sess(g);
  const std::vector<Tensor> out = RunNamed(sess, {}, {"Add:0", "Merge/MergeSummary:0"});
  EXPECT_EQ(out[0].scalar<float>(), 7.0f);
  auto values = SummaryValues(out[1]);
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values.at("const1_1").simple_value(), 3.0f);
  EXPECT_EQ(values.at("const2_1").simple_value(), 4.0f);
  ExpectHistogramOf(values.at("add"), {7.0});
}

TEST(EventFileGraphs, MultipleAndPowerRunOnTheirPlaceholders) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf1_graph");
  const Tensor a = Tensor::FromVector<float>({1.0f, 2.0f, 3.0f});
  const Tensor b = Tensor::FromVector<float>({2.0f, -2.0f, 0.5f});
  {
    Graph g;
    ImportGraphDef(GraphOfEventFile("multiple"), &g);
    Session sess(g);
    const std::vector<Tensor> out =
        RunNamed(sess, {{"Placeholder:0", a}, {"Placeholder_1:0", b}}, {"Mul:0", "Merge/MergeSummary:0"});
    EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{2.0f, -4.0f, 1.5f}));
    ExpectHistogramOf(SummaryValues(out[1]).at("multiple"), {2.0, -4.0, 1.5});
  }
  {
    Graph g;
    ImportGraphDef(GraphOfEventFile("power"), &g);
    Session sess(g);
    const std::vector<Tensor> out = RunNamed(
        sess,
        {{"Placeholder:0", a}, {"Placeholder_1:0", b}, {"Placeholder_2:0", Tensor::Scalar<float>(2.0f)}},
        {"Pow:0", "Merge/MergeSummary:0"});
    EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{4.0f, 16.0f, 2.25f}));
    auto values = SummaryValues(out[1]);
    ExpectHistogramOf(values.at("multiple"), {2.0, -4.0, 1.5});
    ExpectHistogramOf(values.at("power"), {4.0, 16.0, 2.25});
  }
}

// Each file also holds the MetaGraph TF 1.3's FileWriter wrote beside the graph: it imports
// with its collections, holding the same nodes.
TEST(EventFileGraphs, TheirMetaGraphEventsImportWhole) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf1_graph");
  for (const char* run : {"ex", "multiple", "power", "fahrenheit_converter"}) {
    SCOPED_TRACE(run);
    const std::vector<std::string> files = io::ListEventFiles(FixturePath(StrCat("events_tf1_graph/", run)));
    ASSERT_EQ(files.size(), 1u);
    int metas = 0;
    for (const tensorflow::Event& event : io::ReadEventFile(files[0])) {
      if (event.what_case() != tensorflow::Event::kMetaGraphDef) continue;
      tensorflow::MetaGraphDef meta;
      ASSERT_TRUE(meta.ParseFromString(event.meta_graph_def()));
      Graph g;
      EXPECT_EQ(ImportMetaGraph(meta, &g), nullptr);  // FileWriter's meta graphs have no SaverDef
      EXPECT_EQ(g.num_nodes(), GraphOfEventFile(run).node_size());
      ++metas;
    }
    EXPECT_EQ(metas, 1);
  }
}

// y = x*w + b fitted by gradient descent (learning rate 0.01) on the mean squared error.
TEST(EventFileGraphs, FahrenheitConverterTrainsByGradientDescent) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf1_graph");
  Graph g;
  ImportGraphDef(GraphOfEventFile("fahrenheit_converter"), &g);
  Session sess(g);
  // The initializers draw from random_normal; fed, they start the variables where we say.
  float w = 1.5f, b = 0.25f;
  RunNamed(sess,
           {{"random_normal:0", Tensor::FromVector<float>({w}).Reshaped(TensorShape({1, 1}))},
            {"random_normal_1:0", Tensor::FromVector<float>({b})}},
           {}, {"init"});
  const std::vector<float> celsius = {-40.0f, 0.0f, 37.0f, 100.0f};
  std::vector<float> fahrenheit;
  for (float c : celsius) fahrenheit.push_back(c * 1.8f + 32.0f);
  const Feeds feeds = {{"Placeholder:0", Column(celsius)}, {"Placeholder_1:0", Column(fahrenheit)}};
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    double loss = 0, dw = 0, db = 0;
    for (size_t i = 0; i < celsius.size(); ++i) {
      const double error = static_cast<double>(celsius[i]) * w + b - fahrenheit[i];
      loss += error * error / celsius.size();
      dw += 2 * error * celsius[i] / celsius.size();
      db += 2 * error / celsius.size();
    }
    EXPECT_NEAR(RunNamed(sess, feeds, {"Mean:0"})[0].scalar<float>(), loss, 1e-5 * loss);
    RunNamed(sess, feeds, {}, {"GradientDescent"});
    w = static_cast<float>(w - 0.01 * dw);
    b = static_cast<float>(b - 0.01 * db);
    const std::vector<Tensor> vars = RunNamed(sess, {}, {"weight:0", "bias:0"});
    EXPECT_NEAR(vars[0].flat<float>()[0], w, 1e-5 * std::abs(w));
    EXPECT_NEAR(vars[1].flat<float>()[0], b, 1e-5 * std::abs(b));
  }
}

// ---- tf1_estimator_model_dir: the Estimator's meta graph ------------------------------------

class EstimatorMetaGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
    prefix_ = FixturePath("tf1_estimator_model_dir/model.ckpt-2000");
    saver_ = ImportMetaGraph(prefix_ + ".meta", &graph_);
    ASSERT_NE(saver_, nullptr);
    sess_ = std::make_unique<Session>(graph_);
    saver_->Restore(*sess_, prefix_);
  }

  // A batch for the input pipeline's IteratorGetNext, which from_generator's Python callback
  // filled in TF's run: features [n, 2], labels [n, 1].
  Feeds Batch() const {
    Tensor features(DT_FLOAT, TensorShape({3, 2}));
    const float f[] = {0.5f, -1.0f, 2.0f, 0.25f, -3.0f, 1.5f};
    for (int i = 0; i < 6; ++i) features.flat<float>()[i] = f[i];
    return {{"IteratorGetNext:0", features}, {"IteratorGetNext:1", Column({1.0f, -2.0f, 0.5f})}};
  }

  std::string prefix_;
  Graph graph_;
  std::shared_ptr<Saver> saver_;
  std::unique_ptr<Session> sess_;
};

// The Estimator's model by hand: two dense layers without activation, features [n, 2] ->
// [n, 4] -> [n, 1], and the L2 loss sum((prediction - label)^2) / 2.
struct Forward {
  std::vector<double> predictions;
  double loss = 0;
};
Forward ByHand(const io::CheckpointReader& reader, const Feeds& batch) {
  const Tensor k0 = reader.GetTensor("dense/kernel"), b0 = reader.GetTensor("dense/bias");
  const Tensor k1 = reader.GetTensor("dense_1/kernel"), b1 = reader.GetTensor("dense_1/bias");
  EXPECT_EQ(k0.shape(), TensorShape({2, 4}));
  EXPECT_EQ(k1.shape(), TensorShape({4, 1}));
  const Tensor& x = batch[0].second;
  const Tensor& y = batch[1].second;
  Forward forward;
  for (int64_t n = 0; n < x.dim_size(0); ++n) {
    double p = b1.flat<float>()[0];
    for (int j = 0; j < 4; ++j) {
      double h = b0.flat<float>()[j];
      for (int i = 0; i < 2; ++i)
        h += static_cast<double>(x.flat<float>()[n * 2 + i]) * k0.flat<float>()[i * 4 + j];
      p += h * k1.flat<float>()[j];
    }
    forward.predictions.push_back(p);
    forward.loss += (p - y.flat<float>()[n]) * (p - y.flat<float>()[n]) / 2;
  }
  return forward;
}

void ExpectForward(Session& sess, const Feeds& feeds, const Forward& expected) {
  const std::vector<Tensor> out = RunNamed(sess, feeds, {"dense_1/BiasAdd:0", "L2Loss:0"});
  ASSERT_EQ(out[0].NumElements(), static_cast<int64_t>(expected.predictions.size()));
  for (size_t n = 0; n < expected.predictions.size(); ++n) {
    EXPECT_NEAR(out[0].flat<float>()[n], expected.predictions[n], 1e-5) << n;
  }
  EXPECT_NEAR(out[1].scalar<float>(), expected.loss, 1e-5 * expected.loss);
}

TEST_F(EstimatorMetaGraph, ForwardAndLossAreTheCheckpointsDenseLayers) {
  const Feeds batch = Batch();
  const Forward expected = ByHand(io::CheckpointReader(prefix_), batch);
  ExpectForward(*sess_, batch, expected);
  const Tensor loss = RunNamed(*sess_, batch, {"L2Loss:0"})[0];
  tensorflow::Summary summary;
  ASSERT_TRUE(summary.ParseFromString(RunNamed(*sess_, batch, {"loss:0"})[0].scalar<std::string>()));
  EXPECT_EQ(summary.value(0).tag(), "loss");
  EXPECT_EQ(summary.value(0).simple_value(), loss.scalar<float>());
}

// graph.pbtxt and the graphs of both event files (the 154-node graph MonitoredTrainingSession
// wrote before its Scaffold finalized, and the finalized 293-node one, each as a graph_def and
// a meta_graph_def event) import whole and compute the same forward pass. They have no saver
// of their own to restore through, so the variables' reads are fed the checkpoint's values.
TEST_F(EstimatorMetaGraph, ItsTextGraphAndEventFileGraphsComputeTheSameForward) {
  std::vector<std::pair<std::string, tensorflow::GraphDef>> graphs;
  tensorflow::GraphDef text;
  google::protobuf::TextFormat::Parser parser;
  ASSERT_TRUE(
      parser.ParseFromString(ReadFileToString(FixturePath("tf1_estimator_model_dir/graph.pbtxt")), &text));
  graphs.emplace_back("graph.pbtxt", text);
  for (const std::string& file : io::ListEventFiles(FixturePath("tf1_estimator_model_dir"))) {
    const std::vector<tensorflow::Event> events = io::ReadEventFile(file);
    for (size_t i = 0; i < events.size(); ++i) {
      const std::string where = StrCat(file.substr(file.rfind('/') + 1), " event ", i);
      if (events[i].what_case() == tensorflow::Event::kGraphDef) {
        ASSERT_TRUE(
            graphs.emplace_back(where, tensorflow::GraphDef()).second.ParseFromString(events[i].graph_def()));
      } else if (events[i].what_case() == tensorflow::Event::kMetaGraphDef) {
        tensorflow::MetaGraphDef meta;
        ASSERT_TRUE(meta.ParseFromString(events[i].meta_graph_def()));
        graphs.emplace_back(where + " (meta)", meta.graph_def());
      }
    }
  }
  ASSERT_EQ(graphs.size(), 9u);
  io::CheckpointReader reader(prefix_);
  Feeds feeds = Batch();
  const Forward expected = ByHand(reader, feeds);
  for (const char* variable : {"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"}) {
    feeds.emplace_back(StrCat(variable, "/read:0"), reader.GetTensor(variable));
  }
  for (const auto& [where, def] : graphs) {
    SCOPED_TRACE(where);
    Graph g;
    ImportGraphDef(def, &g);
    EXPECT_EQ(g.num_nodes(), def.node_size());
    Session sess(g);
    ExpectForward(sess, feeds, expected);
  }
}

TEST_F(EstimatorMetaGraph, TrainOpStepsAdamAndTheGlobalStepThroughItsCond) {
  const std::vector<Operation> train_ops = graph_.GetCollection<Operation>(GraphKeys::kTrainOp);
  ASSERT_EQ(train_ops.size(), 1u);
  EXPECT_EQ(RunNamed(*sess_, {}, {"global_step/cond/Merge:0"})[0].scalar<int64_t>(), 2000);
  const Feeds batch = Batch();
  const float before = RunNamed(*sess_, batch, {"L2Loss:0"})[0].scalar<float>();
  for (int i = 0; i < 5; ++i) sess_->Run(batch, {}, {train_ops[0].name()});
  EXPECT_EQ(RunNamed(*sess_, {}, {"global_step/cond/Merge:0"})[0].scalar<int64_t>(), 2005);
  // Adam's slots moved from the checkpoint's, and the loss on the batch it trained on fell.
  io::CheckpointReader reader(prefix_);
  EXPECT_NE(RunNamed(*sess_, {}, {"dense/kernel/Adam:0"})[0].flat<float>()[0],
            reader.GetTensor("dense/kernel/Adam").flat<float>()[0]);
  EXPECT_LT(RunNamed(*sess_, batch, {"L2Loss:0"})[0].scalar<float>(), before);
  // The ready op reports nothing uninitialized after the restore.
  const Tensor ready = RunNamed(*sess_, {}, {"report_uninitialized_variables/boolean_mask/GatherV2:0"})[0];
  EXPECT_EQ(ready.NumElements(), 0);
}

// The pipeline is Dataset.from_generator: FlatMapDataset over a function whose
// GeneratorDataset calls back into the Python process that wrote the graph (PyFunc). Neither
// flowtrain nor TF can run it in another process; flowtrain runs FlatMapDataset's function
// and says which op of it it cannot run.
TEST_F(EstimatorMetaGraph, ItsGeneratorPipelineIsAClearError) {
  const Node* flat_map = graph_.FindNode("FlatMapDataset");
  ASSERT_NE(flat_map, nullptr);
  const std::string function = flat_map->GetAttrValue("f").func().name();
  ASSERT_NE(graph_.library().Find(function), nullptr);
  try {
    RunNamed(*sess_, {}, {}, {"MakeIterator"});
    ADD_FAILURE() << "the generator pipeline ran";
  } catch (const InvalidArgumentError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("Cannot instantiate function " + function + ": "), std::string::npos) << message;
    EXPECT_NE(message.find("body node 'GeneratorDataset' has unknown op 'GeneratorDataset'"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace flowtrain::train
