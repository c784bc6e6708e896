// Embeddings trained with sparse updates against TF1 itself. write_embedding_training.py has
// TF build a model of a 1000 x 16 table in two partitions, looked up with
// tf.nn.embedding_lookup (ids with duplicates, mod and div strategies) into a dense layer, and
// train it 20 steps with each of Adagrad, Adam, Momentum and GradientDescent from fixed
// initial values. flowtrain builds the same graph from the same values (with reference
// variables as TF's, and again with resource variables) and must give the same 21 losses and
// final variables (1e-5); the sparse gradients reach each partition as IndexedSlices.
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/tensor.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/embedding_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/adagrad.h"
#include "flowtrain/train/adam.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/momentum.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain {
namespace {

using testing::MakeTempDir;
using testing::PythonRun;
using testing::RunTfPython;
using testing::TfScript;

// The numbers of a file write_embedding_training.py wrote, as a tensor of `shape`.
template <typename T>
Tensor ReadTensor(const std::string& path, const TensorShape& shape) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  Tensor t(DataTypeToEnum<T>::value, shape);
  int64_t n = 0;
  double v;
  while (n < shape.num_elements() && in >> v) t.flat<T>()[n++] = static_cast<T>(v);
  EXPECT_EQ(n, shape.num_elements()) << path;
  return t;
}

void ExpectClose(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  double worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < got.NumElements(); ++i) {
    const double a = got.flat<float>()[i], b = want.flat<float>()[i];
    const double err = std::abs(a - b) / std::max(1.0, std::abs(b));
    if (err > worst) worst = err, at = i;
  }
  EXPECT_LE(worst, tol) << what << ": element " << at << " is " << got.flat<float>()[at] << ", TF's "
                        << want.flat<float>()[at];
}

class EmbeddingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("tf_embeddings"));
    const PythonRun run = RunTfPython({TfScript("interop/write_embedding_training.py"), "--out", *dir_});
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::string* dir_;
};
std::string* EmbeddingTest::dir_ = nullptr;

const std::vector<std::pair<std::string, TensorShape>> kVariables = {{"emb_0", TensorShape({500, 16})},
                                                                     {"emb_1", TensorShape({500, 16})},
                                                                     {"kernel", TensorShape({16, 1})},
                                                                     {"bias", TensorShape({1})}};

TEST_F(EmbeddingTest, SparseTrainingMatchesTensorFlow) {
  const std::vector<std::pair<std::string, std::function<std::unique_ptr<train::Optimizer>()>>> optimizers = {
      {"adagrad", [] { return std::make_unique<train::AdagradOptimizer>(0.1); }},
      {"adam", [] { return std::make_unique<train::AdamOptimizer>(0.01); }},
      {"momentum", [] { return std::make_unique<train::MomentumOptimizer>(0.05, 0.9); }},
      {"sgd", [] { return std::make_unique<train::GradientDescentOptimizer>(0.5); }},
  };
  const Tensor ids = ReadTensor<int32_t>(*dir_ + "/data/ids.txt", TensorShape({32, 3}));
  const Tensor y = ReadTensor<float>(*dir_ + "/data/y.txt", TensorShape({32, 1}));
  for (const std::string strategy : {"mod", "div"}) {
    for (const auto& [opt_name, make] : optimizers) {
      for (const bool use_resource : {false, true}) {
        const std::string case_name = strategy + "_" + opt_name;
        SCOPED_TRACE(case_name + (use_resource ? " (resource variables)" : ""));
        Graph g;
        auto as_default = g.AsDefault();
        std::map<std::string, Variable> vars;
        for (const auto& [name, shape] : kVariables) {
          vars.emplace(name, Variable(ReadTensor<float>(*dir_ + "/init/" + name + ".txt", shape),
                                      {.name = name, .use_resource = use_resource}));
        }
        Output e = ops::EmbeddingLookup({vars["emb_0"], vars["emb_1"]}, ops::Const(ids),
                                        {.partition_strategy = strategy});
        Output pooled = ops::ReduceMean(e, {1});
        Output pred = ops::MatMul(pooled, vars["kernel"]) + vars["bias"];
        Output loss = ops::ReduceMean(ops::Square(pred - ops::Const(y)));
        std::unique_ptr<train::Optimizer> optimizer = make();
        std::vector<train::GradAndVar> grads = optimizer->ComputeGradients(loss);
        ASSERT_TRUE(grads[0].first.is_sparse());
        ASSERT_TRUE(grads[1].first.is_sparse());
        ASSERT_FALSE(grads[2].first.is_sparse());
        Operation train_op = optimizer->ApplyGradients(grads);
        Session sess(g);
        sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
        std::vector<float> losses;
        for (int step = 0; step < 20; ++step) {
          losses.push_back(sess.Run({}, {loss})[0].scalar<float>());
          sess.Run({}, {}, {train_op});
        }
        losses.push_back(sess.Run({}, {loss})[0].scalar<float>());
        const std::string expected = *dir_ + "/" + case_name;
        ExpectClose(Tensor::FromVector<float>(losses),
                    ReadTensor<float>(expected + "/losses.txt", TensorShape({21})), 1e-5, "losses");
        for (const auto& [name, shape] : kVariables) {
          ExpectClose(vars[name].value().Eval(sess), ReadTensor<float>(expected + "/" + name + ".txt", shape),
                      1e-5, name);
        }
      }
    }
  }
}

}  // namespace
}  // namespace flowtrain
