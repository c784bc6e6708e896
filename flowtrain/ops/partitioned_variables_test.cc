#include "flowtrain/ops/partitioned_variables.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using ::testing::ElementsAre;

std::vector<int> Partitions(const ops::Partitioner& p, const TensorShape& shape, DataType dtype = DT_FLOAT) {
  return p(shape, dtype);
}

TEST(PartitionedVariableTest, PartsAreNamedAndShapedAsTf) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::PartitionedVariable w = ops::GetVariable("w", {10, 4}, DT_FLOAT, ops::ZerosInitializer(),
                                                {.partitioner = ops::FixedSizePartitioner(3)});
  EXPECT_EQ(w.name(), "w");
  EXPECT_EQ(w.shape(), TensorShape({10, 4}));
  EXPECT_THAT(w.partitions(), ElementsAre(3, 1));
  ASSERT_EQ(w.parts().size(), 3u);
  const std::vector<std::string> specs = {"10 4 0,4:0,4", "10 4 4,3:0,4", "10 4 7,3:0,4"};
  for (int i = 0; i < 3; ++i) {
    const Variable& part = w.parts()[i];
    EXPECT_EQ(part.op().name(), "w/part_" + std::to_string(i));
    EXPECT_EQ(part.shape().DebugString(), i == 0 ? "[4,4]" : "[3,4]");
    const std::optional<ops::SaveSliceInfo> info = ops::GetSaveSliceInfo(part);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->full_name, "w");
    EXPECT_EQ(info->Spec(), specs[i]);
  }
  EXPECT_EQ(ops::TrainableVariables().size(), 3u);

  // Along axis 1, with fewer columns than shards asked for: one part per column (TF's clamp).
  ops::PartitionedVariable z = ops::GetVariable("z", {2, 3}, DT_FLOAT, ops::OnesInitializer(),
                                                {.partitioner = ops::FixedSizePartitioner(5, 1)});
  ASSERT_EQ(z.parts().size(), 3u);
  EXPECT_EQ(z.parts()[2].shape().DebugString(), "[2,1]");
  EXPECT_EQ(ops::GetSaveSliceInfo(z.parts()[2])->Spec(), "2 3 0,2:2,1");
}

TEST(PartitionedVariableTest, AsTensorConcatenatesThePartsAsTf) {
  Graph g;
  auto as_default = g.AsDefault();
  // Each part is filled with its number of rows: the initializer sees the part's shape.
  ops::Initializer rows = [](const TensorShape& shape, DataType) {
    return ops::Const(Tensor::FromVector(std::vector<float>(shape.num_elements(), shape.dim_size(0)), shape));
  };
  ops::PartitionedVariable w =
      ops::GetVariable("w", {5, 2}, DT_FLOAT, rows, {.partitioner = ops::FixedSizePartitioner(2)});
  Output full = w.AsTensor();
  EXPECT_EQ(full.name(), "w:0");
  EXPECT_EQ(full.node()->input(0).node->name(), "w/ConcatPartitions/concat");
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  const Tensor value = sess.Run({}, {full}, {})[0];
  EXPECT_EQ(value.shape(), TensorShape({5, 2}));
  EXPECT_THAT(testing::Values<float>(value), ElementsAre(3, 3, 3, 3, 3, 3, 2, 2, 2, 2));
}

TEST(PartitionedVariableTest, ScopesAndReuse) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::PartitionedVariable first;
  {
    ops::VariableScope scope("outer");
    first = ops::GetVariable("w", {4, 2}, DT_FLOAT, ops::ZerosInitializer(),
                             {.partitioner = ops::FixedSizePartitioner(2)});
  }
  EXPECT_EQ(first.name(), "outer/w");
  EXPECT_EQ(first.parts()[1].op().name(), "outer/w/part_1");
  EXPECT_EQ(ops::GetSaveSliceInfo(first.parts()[1])->full_name, "outer/w");
  ops::VariableScope scope("outer", {.reuse = ops::Reuse::kReuse});
  ops::PartitionedVariable again =
      ops::GetVariable("w", {4, 2}, DT_FLOAT, nullptr, {.partitioner = ops::FixedSizePartitioner(2)});
  EXPECT_TRUE(again.parts()[0] == first.parts()[0]);
  EXPECT_TRUE(again.parts()[1] == first.parts()[1]);
}

TEST(PartitionedVariableTest, BadPartitionsAreInvalidArgumentAsTf) {
  Graph g;
  auto as_default = g.AsDefault();
  auto get = [](std::string_view name, const TensorShape& shape, ops::Partitioner p) {
    return ops::GetVariable(name, shape, DT_FLOAT, ops::ZerosInitializer(), {.partitioner = std::move(p)});
  };
  testing::ExpectInvalidArgument([&] { get("s", {}, ops::FixedSizePartitioner(2)); },
                                 {"A partitioned Variable must have rank at least 1", "s"});
  testing::ExpectInvalidArgument(
      [&] {
        get("a", {4, 4}, [](const TensorShape&, DataType) { return std::vector<int>{2, 2}; });
      },
      {"Can only slice a variable along one dimension", "[2, 2]"});
  testing::ExpectInvalidArgument(
      [&] {
        get("r", {4, 4}, [](const TensorShape&, DataType) { return std::vector<int>{2}; });
      },
      {"does not match the Variable's rank", "[2] vs. [4,4]"});
  testing::ExpectInvalidArgument(
      [&] { get("z", {4}, [](const TensorShape&, DataType) { return std::vector<int>{0}; }); },
      {"zero partitions"});
  testing::ExpectInvalidArgument([&] { get("x", {4}, ops::FixedSizePartitioner(2, 1)); },
                                 {"along axis 1", "[4]"});
  ops::GetVariable("plain", {4, 2});
  testing::ExpectInvalidArgument(
      [&] {
        get("plain", {4, 2}, ops::FixedSizePartitioner(2));
      },
      {"unpartitioned version of the variable was found: plain"});
  testing::ExpectInvalidArgument([] { ops::VariableAxisSizePartitioner(0); }, {"must be positive"});
  testing::ExpectInvalidArgument([] { ops::VariableAxisSizePartitioner(10, 0, 16, 0); },
                                 {"max_shards must be positive"});
}

// The values TF 2.21's partitioners return for the same arguments.
TEST(PartitionedVariableTest, PartitionerArithmeticMatchesTf) {
  EXPECT_THAT(Partitions(ops::MinMaxVariablePartitioner(4, 0, 64), {10, 4}), ElementsAre(3, 1));
  EXPECT_THAT(Partitions(ops::MinMaxVariablePartitioner(3, 1, 16), {10, 4}), ElementsAre(1, 3));
  EXPECT_THAT(Partitions(ops::MinMaxVariablePartitioner(100), {1000, 300}), ElementsAre(5, 1));
  EXPECT_THAT(Partitions(ops::MinMaxVariablePartitioner(100, 0, 1000, 8), {50, 3}, DT_STRING),
              ElementsAre(2, 1));
  EXPECT_THAT(Partitions(ops::MinMaxVariablePartitioner(), {1000, 300}), ElementsAre(1, 1));
  EXPECT_THAT(Partitions(ops::VariableAxisSizePartitioner(64), {10, 4}), ElementsAre(3, 1));
  EXPECT_THAT(Partitions(ops::VariableAxisSizePartitioner(100, 1, 16, 3), {10, 7}, DT_DOUBLE),
              ElementsAre(1, 3));
  EXPECT_THAT(Partitions(ops::VariableAxisSizePartitioner(1), {5, 2}, DT_STRING), ElementsAre(5, 1));
  EXPECT_THAT(Partitions(ops::FixedSizePartitioner(3), {10, 4}), ElementsAre(3, 1));
  EXPECT_THAT(Partitions(ops::FixedSizePartitioner(5, 1), {2, 3}), ElementsAre(1, 3));
}

}  // namespace
}  // namespace flowtrain
