// CheckpointReader on TF-written checkpoints, with no graph.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(CheckpointReader, ListsVariablesOfAnEstimatorCheckpoint) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  CheckpointReader reader(testing::FixturePath("tf1_estimator_model_dir/model.ckpt-1000"));
  const auto shapes = reader.GetVariableToShapeMap();
  EXPECT_EQ(shapes.size(), 15u);
  EXPECT_EQ(shapes.at("dense/kernel"), TensorShape({2, 4}));
  EXPECT_EQ(shapes.at("dense/kernel/Adam_1"), TensorShape({2, 4}));
  EXPECT_EQ(shapes.at("dense_1/bias"), TensorShape({1}));
  EXPECT_EQ(shapes.at("global_step"), TensorShape({}));
  const auto dtypes = reader.GetVariableToDataTypeMap();
  EXPECT_EQ(dtypes.at("global_step"), DT_INT64);
  EXPECT_EQ(dtypes.at("beta1_power"), DT_FLOAT);
  EXPECT_TRUE(reader.HasTensor("dense_1/kernel/Adam"));
  EXPECT_FALSE(reader.HasTensor("dense_2/kernel"));
  EXPECT_EQ(reader.GetTensor("global_step").scalar<int64_t>(), 1000);
  EXPECT_THROW(reader.GetTensor("dense_2/kernel"), NotFoundError);
}

TEST(CheckpointReader, DebugStringIsInspectCheckpointOutput) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf2_half_plus_two_cpu");
  CheckpointReader reader(testing::FixturePath("tf2_half_plus_two_cpu/variables/variables"));
  EXPECT_EQ(reader.DebugString(),
            "_CHECKPOINTABLE_OBJECT_GRAPH (DT_STRING) []\n"
            "a/.ATTRIBUTES/VARIABLE_VALUE (DT_FLOAT) []\n"
            "b/.ATTRIBUTES/VARIABLE_VALUE (DT_FLOAT) []\n"
            "c/.ATTRIBUTES/VARIABLE_VALUE (DT_FLOAT) []\n");
  EXPECT_THAT(reader.GetVariableToDataTypeMap(), ElementsAre(Pair("_CHECKPOINTABLE_OBJECT_GRAPH", DT_STRING),
                                                             Pair("a/.ATTRIBUTES/VARIABLE_VALUE", DT_FLOAT),
                                                             Pair("b/.ATTRIBUTES/VARIABLE_VALUE", DT_FLOAT),
                                                             Pair("c/.ATTRIBUTES/VARIABLE_VALUE", DT_FLOAT)));
}

TEST(CheckpointReader, ReadsSavedModelVariables) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_half_plus_two_cpu");
  CheckpointReader reader(testing::FixturePath("tf1_half_plus_two_cpu/variables/variables"));
  EXPECT_THAT(reader.GetVariableToShapeMap(),
              ElementsAre(Pair("a", TensorShape({})), Pair("a2", TensorShape({})), Pair("b", TensorShape({})),
                          Pair("c", TensorShape({})), Pair("c2", TensorShape({}))));
  EXPECT_FLOAT_EQ(reader.GetTensor("b").scalar<float>(), 2.0f);
}

TEST(CheckpointReader, LeavesOutSliceEntriesOfPartitionedVariables) {
  // A slice key as TF's EncodeTensorNameSlice makes it starts with OrderedCode's 0 byte.
  const std::string prefix = testing::MakeTempDir("ckpt_reader") + "/ckpt";
  BundleWriter writer(prefix);
  writer.Add(std::string("\0\1part", 6), Tensor::Scalar<float>(1));
  writer.Add("w", Tensor::Scalar<float>(2));
  writer.Finish();
  CheckpointReader reader(prefix);
  EXPECT_THAT(reader.GetVariableToShapeMap(), ElementsAre(Pair("w", TensorShape({}))));
  EXPECT_FALSE(reader.HasTensor(std::string("\0\1part", 6)));
}

TEST(CheckpointReader, MissingCheckpointIsNotFound) {
  EXPECT_THROW(CheckpointReader(testing::MakeTempDir("ckpt_reader") + "/none"), NotFoundError);
}

}  // namespace
}  // namespace flowtrain::io
