// TF1's whole graph language between TF and flowtrain: graphs TF writes with a function
// library (tf.function calls, control flow v2) import into flowtrain with their functions,
// and flowtrain's re-export runs in TF with TF's own result.
#include <string>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
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
  for (const char* op : {"PartitionedCall", "StatelessIf", "StatelessWhile"}) {
    bool found = false;
    for (const Operation& node : g.operations()) found = found || node.type() == op;
    EXPECT_TRUE(found) << "no " << op << " node imported";
  }
  const Operation call = g.GetOperationByName("while");
  EXPECT_EQ(call.num_outputs(), 5);  // loop counter, maximum iterations, i, acc and the captured z

  WriteFileAtomically(dir + "/flowtrain.pb", g.ToGraphDef().SerializeAsString());
  PythonRun ran =
      RunTfPython({script, "run", "--graph", dir + "/flowtrain.pb", "--expected", dir + "/expected.txt"});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
}

}  // namespace
}  // namespace flowtrain::testing
