// ParseExampleV2 (TF 2.x's tf.io.parse_example) in a session: sparse, dense with defaults,
// variable-length dense with padding, ragged with int32 and int64 splits, a scalar input, and
// TF's errors. tests/tf/parse_example_v2_test.cc compares the same op with TF's.
#include <gtest/gtest.h>

#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/proto/example.pb.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain::ops {
namespace {

using testing::Values;

// {"a": 2 floats, "r": int64s, "s": strings, "v": floats} minus the features not given.
std::string MakeExample(std::vector<float> a, std::vector<int64_t> r, std::vector<std::string> s,
                        std::vector<float> v) {
  tensorflow::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  if (!a.empty()) features["a"].mutable_float_list()->mutable_value()->Add(a.begin(), a.end());
  if (!r.empty()) features["r"].mutable_int64_list()->mutable_value()->Add(r.begin(), r.end());
  for (const std::string& x : s) features["s"].mutable_bytes_list()->add_value(x);
  if (!v.empty()) features["v"].mutable_float_list()->mutable_value()->Add(v.begin(), v.end());
  return example.SerializeAsString();
}

// ParseExampleV2 with sparse "s" (string), dense "a" ([2] float, required) and "v" ([?,2]
// float, padded with -1), ragged "r" (int64 values, `splits` row splits).
Operation BuildParse(Output serialized, DataType splits = DT_INT32,
                     Tensor a_default = Tensor(DT_FLOAT, TensorShape({0}))) {
  return NodeBuilder("ParseExampleV2", "parse")
      .Input(serialized)
      .Input(Const(Tensor(DT_STRING, TensorShape({0}))))
      .Input(Const(Tensor::FromVector<std::string>({"s"})))
      .Input(Const(Tensor::FromVector<std::string>({"a", "v"})))
      .Input(Const(Tensor::FromVector<std::string>({"r"})))
      .Input(std::vector<Output>{Const(a_default), Const(-1.0f)})
      .Attr("num_sparse", int64_t{1})
      .Attr("sparse_types", std::vector<DataType>{DT_STRING})
      .Attr("Tdense", std::vector<DataType>{DT_FLOAT, DT_FLOAT})
      .Attr("ragged_value_types", std::vector<DataType>{DT_INT64})
      .Attr("ragged_split_types", std::vector<DataType>{splits})
      .Attr("dense_shapes",
            std::vector<PartialTensorShape>{PartialTensorShape({2}), PartialTensorShape({-1, 2})})
      .Finalize();
}

std::vector<Output> AllOutputs(const Operation& op) {
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

TEST(ParseExampleV2, ParsesABatch) {
  Graph g;
  auto as_default = g.AsDefault();
  Output serialized = Placeholder(DT_STRING, PartialTensorShape({-1}));
  Operation op = BuildParse(serialized);
  ASSERT_EQ(op.num_outputs(), 7);
  EXPECT_EQ(op.output(0).shape().DebugString(), "[?,2]");
  EXPECT_EQ(op.output(3).shape().DebugString(), "[?,2]");
  EXPECT_EQ(op.output(4).shape().DebugString(), "[?,?,2]");
  EXPECT_EQ(op.output(6).shape().DebugString(), "[?]");
  Session sess(g);
  const Tensor batch = Tensor::FromVector<std::string>(
      {MakeExample({1, 2}, {1, 2, 3}, {"x", "y"}, {1, 2, 3, 4}), MakeExample({3, 4}, {5}, {}, {})});
  std::vector<Tensor> out = sess.Run({{serialized, batch}}, AllOutputs(op));
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(Values<std::string>(out[1]), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(Values<int64_t>(out[2]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out[3].shape(), TensorShape({2, 2}));
  EXPECT_EQ(Values<float>(out[3]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(out[4].shape(), TensorShape({2, 2, 2}));
  EXPECT_EQ(Values<float>(out[4]), (std::vector<float>{1, 2, 3, 4, -1, -1, -1, -1}));
  EXPECT_EQ(Values<int64_t>(out[5]), (std::vector<int64_t>{1, 2, 3, 5}));
  ASSERT_EQ(out[6].dtype(), DT_INT32);
  EXPECT_EQ(Values<int32_t>(out[6]), (std::vector<int32_t>{0, 3, 4}));
}

TEST(ParseExampleV2, DefaultsAndAnEmptyBatch) {
  Graph g;
  auto as_default = g.AsDefault();
  Output serialized = Placeholder(DT_STRING, PartialTensorShape({-1}));
  Operation op = BuildParse(serialized, DT_INT64, Tensor::FromVector<float>({7, 8}));
  Session sess(g);
  std::vector<Tensor> out = sess.Run(
      {{serialized, Tensor::FromVector<std::string>({MakeExample({}, {}, {}, {})})}}, AllOutputs(op));
  EXPECT_EQ(Values<float>(out[3]), (std::vector<float>{7, 8}));
  EXPECT_EQ(out[4].shape(), TensorShape({1, 0, 2}));
  EXPECT_EQ(out[5].NumElements(), 0);
  EXPECT_EQ(Values<int64_t>(out[6]), (std::vector<int64_t>{0, 0}));
  out = sess.Run({{serialized, Tensor(DT_STRING, TensorShape({0}))}}, AllOutputs(op));
  EXPECT_EQ(out[3].shape(), TensorShape({0, 2}));
  EXPECT_EQ(out[4].shape(), TensorShape({0, 0, 2}));
  EXPECT_EQ(Values<int64_t>(out[6]), (std::vector<int64_t>{0}));
}

// A scalar input parses one example: no batch dimension, and (as TF) empty row splits.
TEST(ParseExampleV2, ScalarInputIsOneExample) {
  Graph g;
  auto as_default = g.AsDefault();
  Output serialized = Placeholder(DT_STRING, PartialTensorShape({}));
  Operation op = BuildParse(serialized, DT_INT64);
  EXPECT_EQ(op.output(0).shape().DebugString(), "[?,1]");
  EXPECT_EQ(op.output(3).shape().DebugString(), "[2]");
  EXPECT_EQ(op.output(4).shape().DebugString(), "[?,2]");
  Session sess(g);
  std::vector<Tensor> out = sess.Run(
      {{serialized, Tensor::Scalar<std::string>(MakeExample({1, 2}, {1, 2, 3}, {"x", "y"}, {1, 2, 3, 4}))}},
      AllOutputs(op));
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Values<int64_t>(out[2]), (std::vector<int64_t>{2}));
  EXPECT_EQ(out[3].shape(), TensorShape({2}));
  EXPECT_EQ(out[4].shape(), TensorShape({2, 2}));
  EXPECT_EQ(Values<int64_t>(out[5]), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(out[6].shape(), TensorShape({0}));
}

TEST(ParseExampleV2, ErrorsAsTfWordsThem) {
  Graph g;
  auto as_default = g.AsDefault();
  Output serialized = Placeholder(DT_STRING);
  Operation op = BuildParse(serialized);
  Session sess(g);
  auto message = [&](const Tensor& in) -> std::string {
    try {
      sess.Run({{serialized, in}}, AllOutputs(op));
    } catch (const InvalidArgumentError& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string good = MakeExample({1, 2}, {1}, {"x"}, {1, 2});
  auto batch = [](std::vector<std::string> records) { return Tensor::FromVector<std::string>(records); };
  EXPECT_NE(message(batch({good, MakeExample({}, {1}, {}, {})}))
                .find("Feature: a (data type: float) is required but could not be found"),
            std::string::npos);
  EXPECT_NE(
      message(batch({good, MakeExample({1, 2}, {}, {}, {1, 2, 3})}))
          .find("Name: <unknown>, Key: v, Index: 1.  Number of float values is not a multiple of stride "
                "length. Saw 3 values but output shape is: [?,2]"),
      std::string::npos);
  EXPECT_NE(
      message(batch({MakeExample({1, 2, 3}, {}, {}, {})}))
          .find(
              "Key: a, Index: 0.  Number of float values != expected.  Values size: 3 but output shape: [2]"),
      std::string::npos);
  tensorflow::Example wrong;
  (*wrong.mutable_features()->mutable_feature())["a"].mutable_float_list()->add_value(1);
  (*wrong.mutable_features()->mutable_feature())["a"].mutable_float_list()->add_value(1);
  (*wrong.mutable_features()->mutable_feature())["r"].mutable_float_list()->add_value(1);
  EXPECT_NE(message(batch({wrong.SerializeAsString()}))
                .find("Key: r, Index: 0.  Data types don't match. Expected type: int64, Actual type: float"),
            std::string::npos);
  EXPECT_NE(message(Tensor(DT_STRING, TensorShape({1, 1})))
                .find("Expected serialized to be a scalar or vector, got shape: [1,1]"),
            std::string::npos);
  EXPECT_NE(message(batch({"garbage"})).find("Could not parse example input"), std::string::npos);
}

TEST(ParseExampleV2, BadDefaultsAndNames) {
  Graph g;
  auto as_default = g.AsDefault();
  Output serialized = Const(Tensor::FromVector<std::string>({MakeExample({1, 2}, {}, {}, {})}));
  Operation wrong_default = BuildParse(serialized, DT_INT32, Tensor::FromVector<float>({1, 2, 3}));
  Operation wrong_names = NodeBuilder("ParseExampleV2", "names")
                              .Input(serialized)
                              .Input(Const(Tensor::FromVector<std::string>({"n0", "n1"})))
                              .Input(Const(Tensor(DT_STRING, TensorShape({0}))))
                              .Input(Const(Tensor(DT_STRING, TensorShape({0}))))
                              .Input(Const(Tensor(DT_STRING, TensorShape({0}))))
                              .Input(std::vector<Output>{})
                              .Attr("num_sparse", int64_t{0})
                              .Attr("sparse_types", std::vector<DataType>{})
                              .Attr("Tdense", std::vector<DataType>{})
                              .Attr("ragged_value_types", std::vector<DataType>{})
                              .Attr("ragged_split_types", std::vector<DataType>{})
                              .Attr("dense_shapes", std::vector<PartialTensorShape>{})
                              .Finalize();
  Session sess(g);
  auto message = [&](const Operation& op) -> std::string {
    try {
      sess.Run({}, AllOutputs(op), {op});  // as a target too: wrong_names has no outputs
    } catch (const InvalidArgumentError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message(wrong_default)
                .find("def_value[0].shape() == [3] is not compatible with dense_shapes_[0] == [2]"),
            std::string::npos)
      << message(wrong_default);
  EXPECT_NE(
      message(wrong_names)
          .find("Expected names have the same shape as serialized: name.shape=[2], serialized.shape=[1]"),
      std::string::npos)
      << message(wrong_names);
}

}  // namespace
}  // namespace flowtrain::ops
