// TensorArrays between flowtrain and TF, both ways: TF imports and runs a GraphDef flowtrain
// built with ops::TensorArray (and its gradients), and flowtrain imports and runs one TF built
// with tf.TensorArray and tf.gradients; values and gradients are compared with what the other
// side computed (interop/check_tensor_arrays.py holds TF's side of the model).
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/graph/graph_def.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/tensor_array_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

const std::vector<float> kX = {0.5f, -1.0f, 2.0f, 0.25f, -1.5f, 3.0f};

struct Model {
  Output x;
  std::vector<std::pair<std::string, Output>> outputs;  // key, tensor
};

// The model of check_tensor_arrays.py, built with flowtrain's TensorArray.
Model BuildModel() {
  Model m;
  m.x = ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 2}), "x");
  Output s1 = ops::TensorArray(DT_FLOAT, {.size = 3}).Unstack(m.x).Stack();
  Output g2 = ops::TensorArray(DT_FLOAT, {.size = 3})
                  .Scatter(ops::Const({2, 0, 1}), ops::Mul(m.x, ops::Const(2.0f)))
                  .Gather(ops::Const({1, 2}));
  Output c3 =
      ops::TensorArray(DT_FLOAT, {.size = 2, .infer_shape = false}).Split(m.x, ops::Const({1, 2})).Concat();
  Output row0 = ops::StridedSlice(m.x, {0}, {1}, {1}, {.shrink_axis_mask = 1});
  Output row1 = ops::StridedSlice(m.x, {1}, {2}, {1}, {.shrink_axis_mask = 1});
  ops::TensorArray ta4 = ops::TensorArray(DT_FLOAT, {.size = 2, .clear_after_read = false})
                             .Write(0, row0)
                             .Write(1, ops::Mul(row1, ops::Const(3.0f)));
  Output r4 = ops::Add(ops::Mul(ta4.Read(0), ta4.Read(1)), ta4.Read(0));
  // Concat's and Read's static shapes are unknown here (as in TF): flatten before summing.
  auto sum = [](Output t) { return ops::ReduceSum(ops::Reshape(t, std::vector<int64_t>{-1}), {0}); };
  Output y =
      ops::AddN({sum(ops::Square(s1)), sum(ops::Square(g2)), sum(ops::Mul(ops::Mul(c3, c3), c3)), sum(r4)});
  Output grad = ops::Gradients({y}, {m.x})[0];
  m.outputs = {{"y", y}, {"grad", grad}, {"stack", s1}, {"gather", g2}, {"concat", c3}, {"read", r4}};
  return m;
}

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> out;
  for (float v : Values<float>(t)) out.push_back(v);
  return out;
}

void ExpectNear(const std::string& what, const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << what << "[" << i << "]";
}

TEST(TensorArrayInterop, TfRunsFlowtrainsGraphDef) {
  Graph g;
  auto as_default = g.AsDefault();
  Model m = BuildModel();
  Session sess(g);
  std::vector<Output> fetches;
  for (const auto& [key, out] : m.outputs) fetches.push_back(out);
  const std::vector<Tensor> values =
      sess.Run({{m.x, Tensor::FromVector<float>(kX, TensorShape({3, 2}))}}, fetches, {});

  const std::string dir = MakeTempDir("tarray");
  {
    std::ofstream graph(dir + "/ft_graph.pb", std::ios::binary);
    ASSERT_TRUE(g.ToGraphDef().SerializeToOstream(&graph));
    std::ofstream text(dir + "/ft_values.txt");
    text.precision(9);
    text << "x " << m.x.name();
    for (float v : kX) text << " " << v;
    text << "\n";
    for (size_t i = 0; i < m.outputs.size(); ++i) {
      text << m.outputs[i].first << " " << m.outputs[i].second.name();
      for (double v : AsDoubles(values[i])) text << " " << v;
      text << "\n";
    }
  }
  PythonRun r = RunTfPython({TfScript("interop/check_tensor_arrays.py"), "--mode", "check", "--dir", dir});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(TensorArrayInterop, FlowtrainRunsTfsGraphDef) {
  const std::string dir = MakeTempDir("tarray");
  PythonRun r = RunTfPython({TfScript("interop/check_tensor_arrays.py"), "--mode", "write_tf", "--dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  tensorflow::GraphDef def;
  {
    std::ifstream in(dir + "/tf_graph.pb", std::ios::binary);
    ASSERT_TRUE(def.ParseFromIstream(&in));
  }
  std::map<std::string, std::pair<std::string, std::vector<double>>> tf_values;
  {
    std::ifstream in(dir + "/tf_values.txt");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string key, name;
      fields >> key >> name;
      std::vector<double> v;
      for (double d; fields >> d;) v.push_back(d);
      tf_values[key] = {name, v};
    }
  }
  ASSERT_EQ(tf_values.count("grad"), 1u) << r.output;

  Graph g;
  ImportGraphDef(def, &g);
  std::vector<std::string> keys;
  std::vector<std::string> names;
  for (const auto& [key, entry] : tf_values) {
    if (key == "x") continue;
    keys.push_back(key);
    names.push_back(entry.first);
  }
  Session sess(g);
  const std::vector<Tensor> got =
      sess.Run({{tf_values["x"].first, Tensor::FromVector<float>(kX, TensorShape({3, 2}))}}, names, {});
  for (size_t i = 0; i < keys.size(); ++i) {
    ExpectNear("TF's GraphDef run by flowtrain, " + keys[i], AsDoubles(got[i]), tf_values[keys[i]].second);
  }
}

}  // namespace
}  // namespace flowtrain::testing
