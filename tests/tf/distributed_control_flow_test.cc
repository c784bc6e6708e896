// TF-written GraphDefs with conds and loops placed across tasks
// (interop/write_distributed_control_flow.py), run by flowtrain's grpc:// session on a local
// cluster of one worker and two ps tasks: the cond gives both branches' values, the loop on a
// ps task runs, and the loop spanning tasks is refused naming its frame and tasks.
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/distributed/server.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/runtime/session_factory.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain {
namespace {

using ::testing::HasSubstr;
using testing::MakeTempDir;
using testing::PythonRun;
using testing::RunTfPython;
using testing::TfScript;

class DistributedControlFlowTfTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("tf_distributed_cf"));
    const PythonRun run =
        RunTfPython({TfScript("interop/write_distributed_control_flow.py"), "--dir", *dir_});
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }

  // TF's GraphDef DIR/NAME.pb imported into `graph`, and a session on the worker.
  std::unique_ptr<SessionInterface> Import(const std::string& name, Graph& graph) {
    tensorflow::GraphDef def;
    std::ifstream in(*dir_ + "/" + name + ".pb", std::ios::binary);
    EXPECT_TRUE(def.ParseFromIstream(&in)) << name;
    ImportGraphDef(def, &graph);
    return NewSession(graph, {.target = local_.workers[0]->target()});
  }
  static Output OutputOf(Graph& graph, const std::string& node, int index = 0) {
    Node* n = graph.FindNode(node);
    EXPECT_NE(n, nullptr) << node;
    return Output(n, index);
  }

  static inline std::string* dir_ = nullptr;
  distributed::LocalCluster local_ = distributed::CreateLocalCluster(1, 2);
};

TEST_F(DistributedControlFlowTfTest, CondAcrossTasksGivesBothBranches) {
  Graph g;
  auto sess = Import("cond", g);
  EXPECT_EQ(g.FindNode("cond/Mul")->requested_device(), "/job:ps/task:1");
  const Output x = OutputOf(g, "x"), r = OutputOf(g, "cond/Merge");
  for (float v : {2.0f, -3.0f, 0.5f, -0.25f}) {
    const float expected = v > 0 ? 3 * v * v : -v - 1;
    EXPECT_FLOAT_EQ(sess->Run({{x, Tensor::Scalar<float>(v)}}, {r}, {})[0].scalar<float>(), expected) << v;
  }
}

TEST_F(DistributedControlFlowTfTest, LoopOnAPsTaskRuns) {
  Graph g;
  auto sess = Import("while", g);
  sess->Run({}, {}, {Operation(g.FindNode("init"))});
  const Output n = OutputOf(g, "n"), i = OutputOf(g, "while/Exit"), s = OutputOf(g, "while/Exit_1");
  for (int limit : {3, 0, 8}) {
    std::vector<Tensor> out = sess->Run({{n, Tensor::Scalar<int32_t>(limit)}}, {i, s}, {});
    EXPECT_EQ(out[0].scalar<int32_t>(), limit);
    EXPECT_FLOAT_EQ(out[1].scalar<float>(), 1.5f * limit);
  }
}

TEST_F(DistributedControlFlowTfTest, LoopSpanningTasksIsRefused) {
  Graph g;
  auto sess = Import("spanning", g);
  try {
    sess->Run({}, {OutputOf(g, "while/Exit")}, {});
    FAIL() << "a loop spanning tasks ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("The while loop 'while/while_context' spans 2 tasks"));
    EXPECT_THAT(e.what(), HasSubstr("/job:ps/replica:0/task:0"));
    EXPECT_THAT(e.what(), HasSubstr("/job:worker/replica:0/task:0"));
  }
}

}  // namespace
}  // namespace flowtrain
