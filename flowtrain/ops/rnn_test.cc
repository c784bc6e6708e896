// The recurrent cells and ops::DynamicRnn: TF's variable names and shapes, the
// sequence_length masking, gradients through the loop against central finite differences
// (float64), and bad input rejected with InvalidArgument. Values and gradients against TF
// itself: tests/tf/rnn_test.cc.
#include "flowtrain/ops/rnn.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;
using testing::Values;

std::vector<std::pair<std::string, std::string>> VariableNamesAndShapes() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Variable& v : ops::GlobalVariables()) out.emplace_back(v.op().name(), v.shape().DebugString());
  return out;
}

using Names = std::vector<std::pair<std::string, std::string>>;

Names NamesOf(std::shared_ptr<ops::RnnCell> cell) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 5, 4}), "x");
  ops::DynamicRnn(std::move(cell), x, {.sequence_length = ops::Const({5, 3, 0}), .dtype = DT_FLOAT});
  return VariableNamesAndShapes();
}

// The names and shapes TF 1.15 gives (printed by tf.compat.v1.nn.dynamic_rnn over [3, 5, 4]).
TEST(RnnCellTest, VariablesHaveTensorFlowsNamesAndShapes) {
  EXPECT_EQ(NamesOf(std::make_shared<ops::BasicRNNCell>(6)),
            (Names{{"rnn/basic_rnn_cell/kernel", "[10,6]"}, {"rnn/basic_rnn_cell/bias", "[6]"}}));
  EXPECT_EQ(NamesOf(std::make_shared<ops::GRUCell>(6)), (Names{{"rnn/gru_cell/gates/kernel", "[10,12]"},
                                                               {"rnn/gru_cell/gates/bias", "[12]"},
                                                               {"rnn/gru_cell/candidate/kernel", "[10,6]"},
                                                               {"rnn/gru_cell/candidate/bias", "[6]"}}));
  EXPECT_EQ(NamesOf(std::make_shared<ops::BasicLSTMCell>(6)),
            (Names{{"rnn/basic_lstm_cell/kernel", "[10,24]"}, {"rnn/basic_lstm_cell/bias", "[24]"}}));
  EXPECT_EQ(NamesOf(std::make_shared<ops::LSTMCell>(
                6, ops::LSTMCellOptions{.use_peepholes = true, .cell_clip = 1.0, .num_proj = 3})),
            (Names{{"rnn/lstm_cell/kernel", "[7,24]"},
                   {"rnn/lstm_cell/bias", "[24]"},
                   {"rnn/lstm_cell/w_f_diag", "[6]"},
                   {"rnn/lstm_cell/w_i_diag", "[6]"},
                   {"rnn/lstm_cell/w_o_diag", "[6]"},
                   {"rnn/lstm_cell/projection/kernel", "[6,3]"}}));
  EXPECT_EQ(NamesOf(std::make_shared<ops::MultiRNNCell>(std::vector<std::shared_ptr<ops::RnnCell>>{
                std::make_shared<ops::BasicLSTMCell>(6), std::make_shared<ops::GRUCell>(5)})),
            (Names{{"rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel", "[10,24]"},
                   {"rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias", "[24]"},
                   {"rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel", "[11,10]"},
                   {"rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias", "[10]"},
                   {"rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel", "[11,5]"},
                   {"rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias", "[5]"}}));
  EXPECT_EQ(NamesOf(std::make_shared<ops::DropoutWrapper>(
                std::make_shared<ops::BasicLSTMCell>(6), ops::DropoutWrapperOptions{.input_keep_prob = 0.5})),
            (Names{{"rnn/basic_lstm_cell/kernel", "[10,24]"}, {"rnn/basic_lstm_cell/bias", "[24]"}}));
}

TEST(RnnCellTest, BuildsTheWhileLoopAndStatesTensorFlowBuilds) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 5, 4}), "x");
  ops::RnnOutputs rnn = ops::DynamicRnn(std::make_shared<ops::BasicLSTMCell>(6), x,
                                        {.dtype = DT_FLOAT, .parallel_iterations = 7});
  EXPECT_EQ(rnn.outputs.shape().DebugString(), "[3,5,6]");
  ASSERT_EQ(rnn.state.kind(), ops::RnnState::Kind::kLstmTuple);
  EXPECT_EQ(rnn.state.c().shape().DebugString(), "[3,6]");
  EXPECT_EQ(rnn.state.h().op().type(), "Exit");
  EXPECT_NE(g.FindNode("rnn/while/LoopCond"), nullptr);
  EXPECT_NE(g.FindNode("rnn/while/basic_lstm_cell/MatMul"), nullptr);
  EXPECT_NE(g.FindNode("rnn/BasicLSTMCellZeroState/zeros"), nullptr);
  EXPECT_EQ(g.FindNode("rnn/while/Enter")->GetAttr<int64_t>("parallel_iterations"), 7);
}

// A batch size known only at run time: read from the inputs' shape; time-major inputs too.
TEST(RnnCellTest, RunsOverBatchesOfAnySizeAndTimeMajorInputs) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({-1, 5, 4}), "x");
  auto cell = std::make_shared<ops::BasicRNNCell>(3);
  ops::RnnOutputs rnn = ops::DynamicRnn(cell, x, {.dtype = DT_DOUBLE});
  EXPECT_EQ(rnn.outputs.shape().DebugString(), "[?,5,3]");
  ops::RnnOutputs time_major = ops::DynamicRnn(cell, ops::Transpose(x, {1, 0, 2}),
                                               {.dtype = DT_DOUBLE, .time_major = true, .scope = "tm"});
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  std::vector<Tensor> r = s.Run({{x, RandomDoubles({2, 5, 4}, 4)}},
                                {rnn.outputs, ops::Transpose(time_major.outputs, {1, 0, 2})}, {});
  EXPECT_EQ(r[0].shape().DebugString(), "[2,5,3]");
  EXPECT_EQ(Values<double>(r[0]), Values<double>(r[1]));
}

// Without a sequence_length the backward cell runs over the whole reversed time dimension: the
// same as full lengths. Variables in bidirectional_rnn/fw/ and bidirectional_rnn/bw/.
TEST(RnnCellTest, BidirectionalWithoutLengthsReversesTheWholeSequence) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Const(RandomDoubles({2, 4, 3}, 8));
  auto fw = std::make_shared<ops::GRUCell>(2);
  auto bw = std::make_shared<ops::GRUCell>(2);
  ops::BidirectionalRnnOutputs all = ops::BidirectionalDynamicRnn(fw, bw, x, {.dtype = DT_DOUBLE});
  ops::BidirectionalRnnOutputs full = ops::BidirectionalDynamicRnn(
      fw, bw, x, {.sequence_length = ops::Const<int64_t>({4, 4}), .dtype = DT_DOUBLE, .scope = "full"});
  EXPECT_EQ(VariableNamesAndShapes()[0].first, "bidirectional_rnn/fw/gru_cell/gates/kernel");
  EXPECT_EQ(VariableNamesAndShapes()[4].first, "bidirectional_rnn/bw/gru_cell/gates/kernel");
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  std::vector<Tensor> r =
      s.Run({}, {all.output_bw, full.output_bw, all.state_bw.tensor(), full.state_bw.tensor()}, {});
  EXPECT_EQ(Values<double>(r[0]), Values<double>(r[1]));
  EXPECT_EQ(Values<double>(r[2]), Values<double>(r[3]));
  // The backward state has seen the first step last: it is the output at time 0.
  EXPECT_DOUBLE_EQ(r[2].flat<double>()[0], r[0].flat<double>()[0]);
}

// A length past the time dimension is the ReverseSequence kernel's InvalidArgument, as in TF.
TEST(RnnCellTest, BidirectionalLengthPastTheInputsIsInvalidArgument) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Const(RandomDoubles({2, 4, 3}, 8));
  Output lengths = ops::Placeholder(DT_INT32, PartialTensorShape({2}), "lengths");
  ops::BidirectionalRnnOutputs bi = ops::BidirectionalDynamicRnn(
      std::make_shared<ops::BasicRNNCell>(2), std::make_shared<ops::BasicRNNCell>(2), x,
      {.sequence_length = lengths, .dtype = DT_DOUBLE});
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(s.Run({{lengths, Tensor::FromVector<int32_t>({4, 1})}}, {bi.output_bw}, {})[0].NumElements(), 16);
  ExpectInvalidArgument(
      [&] {
        s.Run({{lengths, Tensor::FromVector<int32_t>({5, 1})}}, {bi.output_bw}, {});
      },
      "seq_lens(0) > input.dims(1) (5 vs. 4)");
}

// Entry 1 ends after 2 steps, entry 2 has none: their outputs after that are zeros and their
// final states are the states at their last steps (zeros for entry 2).
TEST(RnnCellTest, SequenceLengthZeroesOutputsAndCopiesStatesThrough) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Const(RandomDoubles({3, 4, 2}, 7));
  auto cell = std::make_shared<ops::GRUCell>(3);
  ops::RnnOutputs masked =
      ops::DynamicRnn(cell, x, {.sequence_length = ops::Const({4, 2, 0}), .dtype = DT_DOUBLE});
  // The same weights over the first two steps only.
  Output first_two = ops::Slice(x, {0, 0, 0}, {3, 2, 2});
  ops::RnnOutputs short_run = ops::DynamicRnn(cell, first_two, {.dtype = DT_DOUBLE, .scope = "short"});
  // Every entry shorter than the inputs: the loop stops after 2 steps, the rest reads as zeros.
  ops::RnnOutputs all_short = ops::DynamicRnn(
      cell, x, {.sequence_length = ops::Const({2, 1, 0}), .dtype = DT_DOUBLE, .scope = "all_short"});
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  std::vector<Tensor> r =
      s.Run({}, {masked.outputs, masked.state.tensor(), short_run.state.tensor(), all_short.outputs}, {});
  auto all_short_out = r[3].flat<double>();
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < 4; ++t) {
      for (int k = 0; k < 3; ++k) {
        const double v = all_short_out[(b * 4 + t) * 3 + k];
        if (t >= 2 - b) {
          EXPECT_EQ(v, 0.0) << b << " " << t;
        } else if (b == 0) {
          EXPECT_DOUBLE_EQ(v, r[0].flat<double>()[t * 3 + k]);
        }
      }
    }
  }
  auto out = r[0].flat<double>();  // [3, 4, 3]
  auto state = r[1].flat<double>();
  auto short_state = r[2].flat<double>();
  for (int t = 0; t < 4; ++t) {
    for (int k = 0; k < 3; ++k) {
      if (t >= 2) {
        EXPECT_EQ(out[(1 * 4 + t) * 3 + k], 0.0) << t;
      }
      EXPECT_EQ(out[(2 * 4 + t) * 3 + k], 0.0) << t;
      EXPECT_NE(out[(0 * 4 + t) * 3 + k], 0.0) << t;
    }
  }
  for (int k = 0; k < 3; ++k) {
    EXPECT_DOUBLE_EQ(state[1 * 3 + k], short_state[1 * 3 + k]);
    EXPECT_DOUBLE_EQ(state[1 * 3 + k], out[(1 * 4 + 1) * 3 + k]);
    EXPECT_EQ(state[2 * 3 + k], 0.0);
  }
  // One variable set: the second run reused the cell's weights.
  EXPECT_EQ(ops::GlobalVariables().size(), 4u);
}

// An LSTMCell with every option, over a masked batch: d(loss)/d(inputs, weights) against
// central finite differences.
TEST(RnnCellTest, LstmGradientsThroughTheLoopMatchFiniteDifferences) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({3, 5, 4}), "x");
  auto cell = std::make_shared<ops::LSTMCell>(
      4, ops::LSTMCellOptions{.use_peepholes = true, .cell_clip = 0.8, .num_proj = 3, .forget_bias = 0.5});
  ops::RnnOutputs rnn =
      ops::DynamicRnn(cell, x, {.sequence_length = ops::Const({5, 3, 0}), .dtype = DT_DOUBLE});
  Output loss = ops::AddV2(ops::ReduceSum(ops::Square(rnn.outputs)), ops::ReduceSum(rnn.state.c()));
  std::vector<Output> xs = {x};
  std::vector<Tensor> values = {RandomDoubles({3, 5, 4}, 3)};
  uint64_t seed = 10;
  for (const Variable& v : ops::GlobalVariables()) {
    xs.push_back(v.value());
    values.push_back(RandomDoubles(v.shape().AsTensorShape(), seed++, -0.6, 0.6));
  }
  ASSERT_EQ(xs.size(), 7u);
  EXPECT_LT(ComputeGradientError(xs, values, loss), 1e-6);
}

TEST(RnnCellTest, DropoutWrapperDropsInputsOutputsAndOnlyTheHOfTheState) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Const(RandomDoubles({50, 1, 4}, 5, 0.5, 1.0));
  auto lstm = std::make_shared<ops::BasicLSTMCell>(8);
  auto cell = std::make_shared<ops::DropoutWrapper>(
      lstm, ops::DropoutWrapperOptions{.output_keep_prob = 0.5, .state_keep_prob = 0.5, .seed = 3});
  ops::RnnOutputs rnn = ops::DynamicRnn(cell, x, {.dtype = DT_DOUBLE});
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  std::vector<Tensor> r = s.Run({}, {rnn.outputs, rnn.state.c(), rnn.state.h()}, {});
  int zero_outputs = 0, zero_c = 0, zero_h = 0;
  for (int i = 0; i < 400; ++i) {
    zero_outputs += r[0].flat<double>()[i] == 0.0;
    zero_c += r[1].flat<double>()[i] == 0.0;
    zero_h += r[2].flat<double>()[i] == 0.0;
  }
  EXPECT_GT(zero_outputs, 120);
  EXPECT_LT(zero_outputs, 280);
  EXPECT_GT(zero_h, 120);
  EXPECT_EQ(zero_c, 0);
  // A keep probability of 1 builds no dropout.
  int input_dropouts = 0, output_dropouts = 0;
  const auto graph_def = g.ToGraphDef();
  for (const auto& node : graph_def.node()) {
    input_dropouts += node.name().find("input_dropout") != std::string::npos;
    output_dropouts += node.name().find("output_dropout") != std::string::npos;
  }
  EXPECT_EQ(input_dropouts, 0);
  EXPECT_GT(output_dropouts, 0);
}

TEST(RnnCellTest, BadInputIsInvalidArgument) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 5, 4}), "x");
  auto cell = std::make_shared<ops::BasicLSTMCell>(6);
  ExpectInvalidArgument([&] { ops::DynamicRnn(cell, x); }, "you must give a dtype");
  ExpectInvalidArgument(
      [&] {
        ops::DynamicRnn(cell, ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 4})));
      },
      "dynamic_rnn: inputs must have rank 3");
  ExpectInvalidArgument(
      [&] {
        ops::DynamicRnn(cell, ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 5, -1})));
      },
      "known depth");
  ExpectInvalidArgument(
      [&] {
        ops::DynamicRnn(cell, x,
                        {.sequence_length = ops::Const(std::vector<int32_t>{1, 2}, TensorShape({1, 2})),
                         .dtype = DT_FLOAT});
      },
      "sequence_length must be a vector");
  ExpectInvalidArgument(
      [&] {
        ops::DynamicRnn(cell, x, {.sequence_length = ops::Const({1, 2}), .dtype = DT_FLOAT});
      },
      "sequence_length has 2 entries for a batch of 3");
  ExpectInvalidArgument(
      [&] {
        ops::DynamicRnn(
            cell, x,
            {.initial_state = ops::RnnState(ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 6})))});
      },
      "does not have the BasicLSTMCell's structure");
  ExpectInvalidArgument([] { ops::GRUCell(0); }, "GRUCell: num_units must be positive");
  ExpectInvalidArgument([] { ops::LSTMCell(4, {.num_proj = 0}); }, "num_proj must be positive");
  ExpectInvalidArgument([&] { ops::DropoutWrapper(cell, {.state_keep_prob = 0.0}); },
                        "state_keep_prob must be in (0, 1]");
  ExpectInvalidArgument([] { ops::MultiRNNCell({}); }, "at least one cell");
  ops::RnnState state = cell->ZeroState(ops::Const(3), DT_FLOAT);
  ExpectInvalidArgument(
      [&] {
        (*cell)(ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 4, 1})), state);
      },
      "BasicLSTMCell: inputs must have rank 2");
  ExpectInvalidArgument(
      [&] {
        (*cell)(ops::Placeholder(DT_DOUBLE, PartialTensorShape({3, 4})), state);
      },
      "is float but the inputs are double");
}

}  // namespace
}  // namespace flowtrain
