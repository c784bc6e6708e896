// TF1's whole graph language between TF and flowtrain: graphs TF writes with a function
// library (tf.function calls reading resource variables, control flow v2) import into
// flowtrain with their functions, flowtrain runs them to TF's result (its Session lowers the
// calls), and flowtrain's re-export runs in TF with TF's own result.
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

TEST(FunctionLibrary, TfGraphsWithFunctionsPassThroughFlowtrain) {
  const std::string dir = MakeTempDir("ft_functions");
  const std::string script = TfScript("graph_language/functions.py");
  PythonRun wrote = RunTfPython({script, "write", "--out", dir});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.output;

  tensorflow::GraphDef tf_graph;
  ASSERT_TRUE(tf_graph.ParseFromString(ReadFileToString(dir + "/graph.pb")));
  Graph g;
  ImportGraphDef(tf_graph, &g);
  EXPECT_EQ(g.library().ListFunctions().size(), 5u);  // scale, cond's two branches, loop cond and body
  for (const char* op : {"StatefulPartitionedCall", "StatelessIf", "StatelessWhile"}) {
    bool found = false;
    for (const Operation& node : g.operations()) found = found || node.type() == op;
    EXPECT_TRUE(found) << "no " << op << " node imported";
  }
  const Operation call = g.GetOperationByName("while");
  EXPECT_EQ(call.num_outputs(), 5);  // loop counter, maximum iterations, i, acc and the captured z

  // flowtrain runs TF's graph to TF's value of out:0.
  std::istringstream expected(ReadFileToString(dir + "/expected.txt"));
  std::vector<float> feed(3), want(3);
  for (float& v : feed) expected >> v;
  for (float& v : want) expected >> v;
  ASSERT_TRUE(expected) << "expected.txt holds the input and TF's output, 3 values each";
  {
    Session s(g);
    s.Run(std::vector<std::pair<std::string, Tensor>>{}, {}, {"init"});
    const Tensor got = s.Run({{"x:0", Tensor::FromVector(feed)}}, {"out:0"}, {})[0];
    ASSERT_EQ(got.NumElements(), 3);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(got.flat<float>()[i], want[i], 1e-5 * std::abs(want[i])) << i;
  }
  EXPECT_EQ(g.GetOperationByName("while").type(), "StatelessWhile");  // the user's graph is not lowered

  WriteFileAtomically(dir + "/flowtrain.pb", g.ToGraphDef().SerializeAsString());
  PythonRun ran =
      RunTfPython({script, "run", "--graph", dir + "/flowtrain.pb", "--expected", dir + "/expected.txt"});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
}

}  // namespace
}  // namespace flowtrain::testing
