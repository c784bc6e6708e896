// TF 2.21's tf.io.parse_example graphs (their ParseExampleV2 node as TF writes it: sparse,
// dense with defaults, FixedLenSequenceFeature with padding, RaggedFeature with int32 and int64
// splits; a batch, a scalar and an empty input) imported and run by flowtrain to TF's outputs,
// and bad batches failing with TF's messages (interop/parse_example_v2.py).
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

// One line of cases.txt: a graph, its input and its ParseExampleV2 node.
struct Case {
  std::string name, input, node;
  int num_outputs = 0;
};

void ExpectEqualTensors(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape().DebugString(), want.shape().DebugString()) << what;
  switch (want.dtype()) {
    case DT_FLOAT:
      EXPECT_EQ(Values<float>(got), Values<float>(want)) << what;
      break;
    case DT_INT64:
      EXPECT_EQ(Values<int64_t>(got), Values<int64_t>(want)) << what;
      break;
    case DT_INT32:
      EXPECT_EQ(Values<int32_t>(got), Values<int32_t>(want)) << what;
      break;
    case DT_STRING:
      EXPECT_EQ(Values<std::string>(got), Values<std::string>(want)) << what;
      break;
    default:
      FAIL() << what << ": unexpected dtype " << DataTypeString(want.dtype());
  }
}

class ParseExampleV2Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("parse_example_v2"));
    python_ = new PythonRun(RunTfPython({TfScript("interop/parse_example_v2.py"), "--out", *dir_}));
  }

  static Graph* ImportCase(const Case& c) {
    tensorflow::GraphDef def;
    EXPECT_TRUE(def.ParseFromString(ReadFileToString(JoinPath(*dir_, c.name + ".pb")))) << c.name;
    auto* graph = new Graph;
    ImportGraphDef(def, graph);
    return graph;
  }

  static std::map<std::string, Case> Cases() {
    std::map<std::string, Case> cases;
    std::istringstream lines(ReadFileToString(JoinPath(*dir_, "cases.txt")));
    for (Case c; lines >> c.name >> c.input >> c.node >> c.num_outputs;) cases[c.name] = c;
    return cases;
  }

  static std::vector<std::string> Fetches(const Case& c) {
    std::vector<std::string> fetches;
    for (int i = 0; i < c.num_outputs; ++i) fetches.push_back(StrCat(c.node, ":", i));
    return fetches;
  }

  static std::string* dir_;
  static PythonRun* python_;
};

std::string* ParseExampleV2Test::dir_ = nullptr;
PythonRun* ParseExampleV2Test::python_ = nullptr;

TEST_F(ParseExampleV2Test, FlowtrainRunsTfsGraphsToTfsOutputs) {
  ASSERT_EQ(python_->exit_code, 0) << python_->output;
  const std::map<std::string, Case> cases = Cases();
  ASSERT_EQ(cases.size(), 3u);
  const io::CheckpointReader results(JoinPath(*dir_, "results"));
  for (const auto& [name, c] : cases) {
    std::unique_ptr<Graph> graph(ImportCase(c));
    ASSERT_EQ(graph->GetOperationByName(c.node).type(), "ParseExampleV2");
    ASSERT_EQ(c.num_outputs, 15) << "3 sparse, 4 dense, 2 ragged features";
    Session sess(*graph);
    const std::vector<Tensor> got =
        sess.Run({{c.input, results.GetTensor(name + "/in")}}, Fetches(c), std::vector<std::string>{});
    ASSERT_EQ(static_cast<int>(got.size()), c.num_outputs);
    for (int i = 0; i < c.num_outputs; ++i) {
      ExpectEqualTensors(got[i], results.GetTensor(StrCat(name, "/out/", i)), StrCat(name, " output ", i));
    }
  }
}

TEST_F(ParseExampleV2Test, BadBatchesFailWithTfsMessages) {
  ASSERT_EQ(python_->exit_code, 0) << python_->output;
  const std::map<std::string, Case> cases = Cases();
  const io::CheckpointReader results(JoinPath(*dir_, "results"));
  std::istringstream lines(ReadFileToString(JoinPath(*dir_, "errors.txt")));
  int checked = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    std::istringstream words(line);
    std::string case_name, key;
    words >> case_name >> key;
    std::string tf_message;
    std::getline(words, tf_message);
    tf_message = tf_message.substr(1);
    const Case& c = cases.at(case_name);
    std::unique_ptr<Graph> graph(ImportCase(c));
    Session sess(*graph);
    std::string message = "no error";
    try {
      sess.Run({{c.input, results.GetTensor(key)}}, Fetches(c), std::vector<std::string>{});
    } catch (const InvalidArgumentError& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(tf_message), std::string::npos)
        << "TF: " << tf_message << "\nflowtrain: " << message;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

}  // namespace
}  // namespace flowtrain::testing
