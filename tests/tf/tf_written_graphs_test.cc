// The graphs of the TF-written fixtures run by TensorFlow and by flowtrain from the same files
// with the same feeds must give the same values. TF runs them in
// tf_written_graphs/run_in_tf.py and saves what it got (and the feeds it used) into a
// checkpoint; flowtrain imports the same graphs, restores the same checkpoints and compares:
// the Estimator's meta graph from model.ckpt-2000 (prediction, loss, 5 Adam steps, every
// variable after them), the fahrenheit_converter event file's graph (3 gradient-descent steps)
// and the half_plus_two SavedModel. Skips when the fixtures are absent.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/meta_graph.h"
#include "flowtrain/train/saver.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain {
namespace {

using Feeds = std::vector<std::pair<std::string, Tensor>>;
using testing::FixturePath;

// What TF got, read once for every test of the suite.
class TfWrittenGraphs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::AbsentFixtures({"tf1_estimator_model_dir", "events_tf1_graph", "tf1_half_plus_two_cpu"})
             .empty()) {
      return;
    }
    const std::string prefix = testing::MakeTempDir("tf_written_graphs") + "/tf";
    const testing::PythonRun run =
        testing::RunTfPython({testing::TfScript("tf_written_graphs/run_in_tf.py"), "--fixtures",
                              testing::FixturesDir(), "--out", prefix});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    tf_ = new io::CheckpointReader(prefix);
  }
  static void TearDownTestSuite() {
    delete tf_;
    tf_ = nullptr;
  }
  void SetUp() override {
    FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir", "events_tf1_graph", "tf1_half_plus_two_cpu");
    ASSERT_NE(tf_, nullptr) << "TF did not run the fixtures' graphs";
  }

  static Tensor Tf(const std::string& name) { return tf_->GetTensor(name); }

  // Within `rtol` of TF's value relative to the largest magnitude in TF's tensor: float sums
  // that cancel (a prediction near 0 from terms near 1) round differently by that much.
  static void ExpectNearTf(const Tensor& ours, const std::string& name, double rtol) {
    const Tensor theirs = Tf(name);
    ASSERT_EQ(ours.shape(), theirs.shape()) << name;
    ASSERT_EQ(ours.dtype(), theirs.dtype()) << name;
    auto at = [](const Tensor& t, int64_t i) -> double {
      return t.dtype() == DT_INT64 ? static_cast<double>(t.flat<int64_t>()[i]) : t.flat<float>()[i];
    };
    double scale = 1e-6;
    for (int64_t i = 0; i < theirs.NumElements(); ++i) scale = std::max(scale, std::abs(at(theirs, i)));
    for (int64_t i = 0; i < ours.NumElements(); ++i) {
      EXPECT_NEAR(at(ours, i), at(theirs, i), rtol * scale) << name << "[" << i << "]";
    }
  }

  static io::CheckpointReader* tf_;
};
io::CheckpointReader* TfWrittenGraphs::tf_ = nullptr;

TEST_F(TfWrittenGraphs, EstimatorMetaGraphTrainsAsInTensorFlow) {
  const std::string prefix = FixturePath("tf1_estimator_model_dir/model.ckpt-2000");
  Graph g;
  std::shared_ptr<train::Saver> saver = train::ImportMetaGraph(prefix + ".meta", &g);
  ASSERT_NE(saver, nullptr);
  Session sess(g);
  saver->Restore(sess, prefix);
  const Feeds feeds = {{"IteratorGetNext:0", Tf("feed/estimator/features")},
                       {"IteratorGetNext:1", Tf("feed/estimator/labels")}};
  const std::vector<Tensor> forward = sess.Run(feeds, {"dense_1/BiasAdd:0", "L2Loss:0"}, {});
  ExpectNearTf(forward[0], "estimator/pred", 1e-5);
  ExpectNearTf(forward[1], "estimator/loss", 1e-5);
  const std::vector<Operation> train_ops = g.GetCollection<Operation>(GraphKeys::kTrainOp);
  ASSERT_EQ(train_ops.size(), 1u);
  std::vector<float> losses;
  for (int i = 0; i < 5; ++i) {
    losses.push_back(sess.Run(feeds, {"L2Loss:0"}, {})[0].scalar<float>());
    sess.Run(feeds, {}, {train_ops[0].name()});
  }
  losses.push_back(sess.Run(feeds, {"L2Loss:0"}, {})[0].scalar<float>());
  ExpectNearTf(Tensor::FromVector<float>(losses), "estimator/losses", 1e-4);
  int compared = 0;
  for (const auto& [name, dtype] : tf_->GetVariableToDataTypeMap()) {
    if (!name.starts_with("estimator/final/")) continue;
    const std::string variable = name.substr(std::string("estimator/final/").size());
    ExpectNearTf(sess.Run(Feeds{}, {variable + ":0"}, {})[0], name, 1e-4);
    ++compared;
  }
  EXPECT_EQ(compared, 15);  // the two dense layers, their Adam slots, the beta powers, global_step
}

TEST_F(TfWrittenGraphs, FahrenheitConverterTrainsAsInTensorFlow) {
  const std::vector<std::string> files =
      io::ListEventFiles(FixturePath("events_tf1_graph/fahrenheit_converter"));
  ASSERT_EQ(files.size(), 1u);
  tensorflow::GraphDef def;
  for (const tensorflow::Event& event : io::ReadEventFile(files[0])) {
    if (event.what_case() == tensorflow::Event::kGraphDef) {
      ASSERT_TRUE(def.ParseFromString(event.graph_def()));
    }
  }
  Graph g;
  ImportGraphDef(def, &g);
  Session sess(g);
  sess.Run({{"random_normal:0", Tensor::FromVector<float>({1.5f}).Reshaped(TensorShape({1, 1}))},
            {"random_normal_1:0", Tensor::FromVector<float>({0.25f})}},
           {}, {"init"});
  const Feeds feeds = {{"Placeholder:0", Tf("feed/fahrenheit/celsius")},
                       {"Placeholder_1:0", Tf("feed/fahrenheit/fahrenheit")}};
  std::vector<float> losses;
  for (int i = 0; i < 3; ++i) {
    losses.push_back(sess.Run(feeds, {"Mean:0"}, {})[0].scalar<float>());
    sess.Run(feeds, {}, {"GradientDescent"});
  }
  ExpectNearTf(Tensor::FromVector<float>(losses), "fahrenheit/losses", 1e-5);
  const std::vector<Tensor> vars = sess.Run(Feeds{}, {"weight:0", "bias:0"}, {});
  ExpectNearTf(vars[0], "fahrenheit/weight", 1e-5);
  ExpectNearTf(vars[1], "fahrenheit/bias", 1e-5);
}

TEST_F(TfWrittenGraphs, HalfPlusTwoServesAsInTensorFlow) {
  tensorflow::SavedModel saved_model;
  ASSERT_TRUE(
      saved_model.ParseFromString(ReadFileToString(FixturePath("tf1_half_plus_two_cpu/saved_model.pb"))));
  const tensorflow::MetaGraphDef& meta = saved_model.meta_graphs(0);
  Graph g;
  ImportGraphDef(meta.graph_def(), &g);
  train::Saver saver(g, meta.saver_def());
  Session sess(g);
  saver.Restore(sess, FixturePath("tf1_half_plus_two_cpu/variables/variables"));
  const Tensor y = sess.Run({{"x:0", Tf("feed/half_plus_two/x")}}, {"y:0"}, {})[0];
  const Tensor theirs = Tf("half_plus_two/y");
  ASSERT_EQ(y.shape(), theirs.shape());
  for (int64_t i = 0; i < y.NumElements(); ++i) EXPECT_EQ(y.flat<float>()[i], theirs.flat<float>()[i]) << i;
}

}  // namespace
}  // namespace flowtrain
