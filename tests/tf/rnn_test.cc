// The recurrent cells and ops::DynamicRnn against TF 1.15's tf.nn.rnn_cell and
// tf.nn.dynamic_rnn (interop/write_rnn.py, run by the ctest fixture tf_rnn): TF sets each model's variables
// to random values and writes them to a checkpoint, which flowtrain restores by TF's variable names (so the
// names, shapes and kernel layouts must be TF's); over inputs [3, 5, 4] with sequence_length
// [5, 3, 0] the outputs, the final states and the gradients of a loss w.r.t. every variable
// must match TF's within 1e-5. An LSTM + dense model trained 10 SGD steps from TF's start
// must have TF's losses and final variables.
#include "flowtrain/ops/rnn.h"

#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/layers.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/saver.h"

namespace flowtrain {
namespace {

using Cells = std::shared_ptr<ops::RnnCell>;
using io::CheckpointReader;

constexpr double kTolerance = 1e-5;

// Where the ctest fixture tf_rnn (interop/write_rnn.py) wrote this run's models.
class RnnTfTest : public ::testing::Test {
 protected:
  static std::string Path(const std::string& model, const std::string& file) {
    return std::string(FLOWTRAIN_TF_RNN_DIR) + "/" + model + "/" + file;
  }
};

// The largest |a - b| over the elements (the shapes must agree).
double MaxDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape().DebugString(), b.shape().DebugString());
  if (a.shape() != b.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(a.flat<float>()[i] - b.flat<float>()[i])));
  }
  return worst;
}

// A model over x [3, 5, 4] with sequence_length [5, 3, 0]: its outputs and final state.
using Model = std::function<ops::RnnOutputs(Output x, Output sequence_length)>;

Model OneCell(Cells cell) {
  return [cell](Output x, Output lengths) {
    return ops::DynamicRnn(cell, x, {.sequence_length = lengths, .dtype = DT_FLOAT});
  };
}

// Builds `model` over TF's inputs, restores TF's weights by name and checks the outputs, the
// final state and the gradients of TF's loss against TF's.
void CheckModel(const std::string& model, const std::string& prefix, const Model& build) {
  SCOPED_TRACE(model);
  CheckpointReader expected(prefix + "/expected.ckpt");
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 5, 4}), "x");
  ops::RnnOutputs rnn = build(x, ops::Const({5, 3, 0}));
  std::vector<Output> flat_state = rnn.state.Flatten();
  Output loss = ops::ReduceSum(ops::Square(rnn.outputs));
  for (size_t i = 0; i < flat_state.size(); ++i) {
    loss = ops::AddV2(loss, ops::Mul(ops::Const(static_cast<float>(i + 1)), ops::ReduceSum(flat_state[i])));
  }
  std::vector<Variable> variables = ops::GlobalVariables();
  std::vector<Output> xs(variables.begin(), variables.end());
  std::vector<Output> grads = ops::Gradients({loss}, xs);
  train::Saver saver;
  Session session(g);
  saver.Restore(session, prefix + "/model.ckpt");  // by TF's names: every variable must be there

  std::vector<Output> fetches = {rnn.outputs};
  fetches.insert(fetches.end(), flat_state.begin(), flat_state.end());
  fetches.insert(fetches.end(), grads.begin(), grads.end());
  std::vector<Tensor> got = session.Run({{x, expected.GetTensor("x")}}, fetches, {});
  double worst = MaxDiff(got[0], expected.GetTensor("outputs"));
  EXPECT_LT(worst, kTolerance) << "outputs";
  for (size_t i = 0; i < flat_state.size(); ++i) {
    const double d = MaxDiff(got[1 + i], expected.GetTensor("state_" + std::to_string(i)));
    EXPECT_LT(d, kTolerance) << "state_" << i;
    worst = std::max(worst, d);
  }
  for (size_t i = 0; i < variables.size(); ++i) {
    const std::string name = variables[i].op().name();
    const double d = MaxDiff(got[1 + flat_state.size() + i], expected.GetTensor("grad/" + name));
    EXPECT_LT(d, kTolerance) << "gradient of " << name;
    worst = std::max(worst, d);
  }
  EXPECT_EQ(expected.GetVariableToShapeMap().size(), 1 + 1 + flat_state.size() + variables.size());
  std::cout << model << ": " << variables.size() << " variables, outputs, " << flat_state.size()
            << " state tensors and gradients within " << worst << " of TF\n";
}

TEST_F(RnnTfTest, BasicRnnCellMatchesTensorFlow) {
  CheckModel("basic_rnn", Path("basic_rnn", ""), OneCell(std::make_shared<ops::BasicRNNCell>(6)));
}

TEST_F(RnnTfTest, GruCellMatchesTensorFlow) {
  CheckModel("gru", Path("gru", ""), OneCell(std::make_shared<ops::GRUCell>(6)));
}

TEST_F(RnnTfTest, BasicLstmCellMatchesTensorFlow) {
  CheckModel("basic_lstm", Path("basic_lstm", ""),
             OneCell(std::make_shared<ops::BasicLSTMCell>(6, ops::BasicLSTMCellOptions{.forget_bias = 0.7})));
}

TEST_F(RnnTfTest, LstmCellWithPeepholesProjectionAndClippingMatchesTensorFlow) {
  CheckModel("lstm", Path("lstm", ""),
             OneCell(std::make_shared<ops::LSTMCell>(
                 6, ops::LSTMCellOptions{
                        .use_peepholes = true, .cell_clip = 0.9, .num_proj = 3, .forget_bias = 1.0})));
}

TEST_F(RnnTfTest, MultiRnnCellMatchesTensorFlow) {
  CheckModel("multi", Path("multi", ""),
             OneCell(std::make_shared<ops::MultiRNNCell>(std::vector<Cells>{
                 std::make_shared<ops::BasicLSTMCell>(6), std::make_shared<ops::GRUCell>(5)})));
}

TEST_F(RnnTfTest, DropoutWrapperKeepingEverythingMatchesTensorFlow) {
  CheckModel("dropout", Path("dropout", ""),
             OneCell(std::make_shared<ops::DropoutWrapper>(std::make_shared<ops::BasicLSTMCell>(6),
                                                           ops::DropoutWrapperOptions{})));
}

// Two BasicLSTMCells: variables "bidirectional_rnn/fw/basic_lstm_cell/kernel" and ".../bw/...";
// outputs fw and bw concatenated, state (fw c, fw h, bw c, bw h).
TEST_F(RnnTfTest, BidirectionalDynamicRnnMatchesTensorFlow) {
  CheckModel("bidirectional", Path("bidirectional", ""), [](Output x, Output lengths) {
    ops::BidirectionalRnnOutputs bi = ops::BidirectionalDynamicRnn(
        std::make_shared<ops::BasicLSTMCell>(5), std::make_shared<ops::BasicLSTMCell>(5), x,
        {.sequence_length = lengths, .dtype = DT_FLOAT});
    return ops::RnnOutputs{ops::Concat({bi.output_fw, bi.output_bw}, 2),
                           ops::RnnState::Tuple({bi.state_fw, bi.state_bw})};
  });
}

TEST_F(RnnTfTest, LstmAndDenseTrainedTenStepsBySgdMatchTensorFlow) {
  CheckpointReader expected(Path("train", "expected.ckpt"));
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 5, 4}), "x");
  Output y = ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 2}), "y");
  ops::RnnOutputs rnn = ops::DynamicRnn(std::make_shared<ops::BasicLSTMCell>(6), x,
                                        {.sequence_length = ops::Const({5, 3, 0}), .dtype = DT_FLOAT});
  Output logits = layers::Dense(rnn.state.h(), 2);
  Output loss = ops::ReduceMean(ops::Square(ops::Sub(logits, y)));
  train::GradientDescentOptimizer sgd(0.1);
  Operation step = sgd.Minimize(loss);
  train::Saver saver;
  Session session(g);
  saver.Restore(session, Path("train", "model.ckpt"));
  const FeedList feeds = {{x, expected.GetTensor("x")}, {y, expected.GetTensor("y")}};
  const Tensor tf_losses = expected.GetTensor("loss");
  double worst = 0;
  for (int i = 0; i < 10; ++i) {
    const float got = session.Run(feeds, {loss}, {step})[0].scalar<float>();
    const double d = std::abs(got - tf_losses.flat<float>()[i]);
    EXPECT_LT(d, kTolerance) << "loss at step " << i;
    worst = std::max(worst, d);
  }
  const std::vector<Variable> variables = ops::GlobalVariables();
  ASSERT_EQ(variables.size(), 4u);
  for (const Variable& v : variables) {
    const double d =
        MaxDiff(session.Run({}, {v.value()}, {})[0], expected.GetTensor("final/" + v.op().name()));
    EXPECT_LT(d, kTolerance) << v.op().name();
    worst = std::max(worst, d);
  }
  std::cout << "LSTM + dense, 10 SGD steps: losses " << tf_losses.flat<float>()[0] << " -> "
            << tf_losses.flat<float>()[9] << ", losses and variables within " << worst << " of TF\n";
}

}  // namespace
}  // namespace flowtrain
