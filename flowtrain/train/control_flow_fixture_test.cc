// TF-written graphs holding TF1 control flow, imported and run: the cond through which
// TF's global_step is read (tf.train.get_or_create_global_step, as Estimator's
// MonitoredTrainingSession wrote it), imported alone: only the nodes the cond needs, so that the
// cond's behaviour is checked apart from the rest (tf_written_graphs_test.cc imports and runs the
// whole graphs). Skips when the fixtures are absent.
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "flowtrain/graph/graph_def.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

// The nodes of `def` that `roots` need (data and control inputs), in their order.
tensorflow::GraphDef Needed(const tensorflow::GraphDef& def, const std::vector<std::string>& roots) {
  std::map<std::string, const tensorflow::NodeDef*> by_name;
  for (const auto& n : def.node()) by_name[n.name()] = &n;
  std::set<std::string> needed;
  std::vector<std::string> stack = roots;
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (!needed.insert(name).second) continue;
    for (std::string in : by_name.at(name)->input()) {
      if (in[0] == '^') in = in.substr(1);
      stack.push_back(in.substr(0, in.find(':')));
    }
  }
  tensorflow::GraphDef out;
  *out.mutable_versions() = def.versions();
  for (const auto& n : def.node()) {
    if (needed.count(n.name())) *out.add_node() = n;
  }
  return out;
}

using Step = std::pair<int64_t, int32_t>;

// The cond's value and which branch gave it (0: false, the initializer's; 1: true, the read).
Step GlobalStepThroughItsCond(Session& sess) {
  std::vector<Tensor> out = sess.Run(std::vector<std::pair<std::string, Tensor>>{},
                                     {"global_step/cond/Merge:0", "global_step/cond/Merge:1"}, {});
  return {out[0].scalar<int64_t>(), out[1].scalar<int32_t>()};
}

void ExpectTheCondRunsAsInTensorFlow(const tensorflow::GraphDef& def) {
  Graph g;
  ImportGraphDef(Needed(def, {"global_step/cond/Merge", "global_step/Assign"}), &g);
  ASSERT_EQ(g.FindNode("global_step/cond/read/Switch")->type(), "RefSwitch");
  Session sess(g);
  // Uninitialized, the cond's false branch gives the initializer's zeros.
  EXPECT_EQ(GlobalStepThroughItsCond(sess), Step(0, 0));
  // Initialized, its true branch reads the variable through the RefSwitch.
  sess.Run(std::vector<std::pair<std::string, Tensor>>{}, {}, {"global_step/Assign"});
  EXPECT_EQ(GlobalStepThroughItsCond(sess), Step(0, 1));
}

TEST(ControlFlowFixtures, EstimatorMetaGraphsGlobalStepCond) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  std::ifstream in(testing::FixturePath("tf1_estimator_model_dir/model.ckpt-2000.meta"), std::ios::binary);
  tensorflow::MetaGraphDef meta;
  ASSERT_TRUE(meta.ParseFromIstream(&in));
  ExpectTheCondRunsAsInTensorFlow(meta.graph_def());
}

TEST(ControlFlowFixtures, EstimatorTextGraphsGlobalStepCond) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  std::ifstream in(testing::FixturePath("tf1_estimator_model_dir/graph.pbtxt"));
  std::stringstream text;
  text << in.rdbuf();
  tensorflow::GraphDef def;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowUnknownField(true);  // its function library, which flowtrain's GraphDef lacks
  ASSERT_TRUE(parser.ParseFromString(text.str(), &def));
  ExpectTheCondRunsAsInTensorFlow(def);
}

}  // namespace
}  // namespace flowtrain
