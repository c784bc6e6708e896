// Partitioned variables through the Saver: saved as TF saves them (one key per full variable,
// its slices in the bundle) and restored into any partition count or none; their optimizer
// slots and MetaGraph entries.
#include <numeric>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/partitioned_variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/adam.h"
#include "flowtrain/train/meta_graph.h"
#include "flowtrain/train/saver.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// 0, 1, ..., 39 as a [10, 4] float tensor.
Tensor Iota() {
  std::vector<float> values(40);
  std::iota(values.begin(), values.end(), 0.0f);
  return Tensor::FromVector(values, TensorShape({10, 4}));
}

// Fills each part with its rows of Iota(), parts being made in order from row *next_row.
ops::Initializer IotaRows(int64_t* next_row) {
  return [next_row](const TensorShape& shape, DataType) {
    std::vector<float> values(static_cast<size_t>(shape.num_elements()));
    std::iota(values.begin(), values.end(), static_cast<float>(*next_row * 4));
    *next_row += shape.dim_size(0);
    return ops::Const(Tensor::FromVector(values, shape));
  };
}

// A graph with "w" [10, 4] in `parts` parts (0: unpartitioned) initialized to Iota() when
// `iota`, else zeros; the value of the whole variable.
Output BuildW(Graph& g, int parts, bool iota, int64_t* next_row) {
  auto as_default = g.AsDefault();
  ops::Initializer init = iota ? IotaRows(next_row) : ops::ZerosInitializer();
  if (parts == 0) return ops::GetVariable("w", {10, 4}, DT_FLOAT, init);
  return ops::GetVariable("w", {10, 4}, DT_FLOAT, init, {.partitioner = ops::FixedSizePartitioner(parts)});
}

std::string SaveW(int parts) {
  Graph g;
  int64_t next_row = 0;
  BuildW(g, parts, /*iota=*/true, &next_row);
  Saver saver({.graph = &g});
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
  return saver.Save(sess, testing::MakeTempDir("partitioned") + "/model.ckpt");
}

TEST(PartitionedSaverTest, SavesOneKeyPerFullVariableWithItsSlices) {
  const std::string path = SaveW(3);
  io::CheckpointReader reader(path);
  EXPECT_THAT(reader.GetVariableToShapeMap(), ElementsAre(Pair("w", TensorShape({10, 4}))));
  EXPECT_EQ(reader.bundle().GetBundleEntryProto("w").slices_size(), 3);
  EXPECT_EQ(testing::Values<float>(reader.GetTensor("w")), testing::Values<float>(Iota()));
}

TEST(PartitionedSaverTest, RestoresIntoAnyPartitionCount) {
  for (int saved : {0, 1, 2, 3}) {
    const std::string path = SaveW(saved);
    for (int restored : {0, 1, 2, 3, 4}) {
      SCOPED_TRACE(::testing::Message() << saved << " parts saved, " << restored << " restored");
      Graph g;
      Output w = BuildW(g, restored, /*iota=*/false, nullptr);
      Saver saver({.graph = &g});
      Session sess(g);
      saver.Restore(sess, path);
      EXPECT_EQ(testing::Values<float>(sess.Run({}, {w}, {})[0]), testing::Values<float>(Iota()));
    }
  }
}

TEST(PartitionedSaverTest, MismatchedFullShapeIsInvalidArgumentNamingTheVariable) {
  const std::string path = SaveW(3);
  Graph g;
  {
    auto as_default = g.AsDefault();
    ops::GetVariable("w", {12, 4}, DT_FLOAT, ops::ZerosInitializer(),
                     {.partitioner = ops::FixedSizePartitioner(2)});
  }
  Saver saver({.graph = &g});
  Session sess(g);
  testing::ExpectInvalidArgument([&] { saver.Restore(sess, path); },
                                 {"variable 'w/part_", "key 'w'", "[12,4]", "[10,4]"});
}

TEST(PartitionedSaverTest, EachPartGetsItsOwnSlotsSavedAsSlicesOfTheFullSlot) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::PartitionedVariable w = ops::GetVariable("w", {10, 4}, DT_FLOAT, ops::OnesInitializer(),
                                                {.partitioner = ops::FixedSizePartitioner(3)});
  Operation train = AdamOptimizer(0.1).Minimize(ops::ReduceSum(ops::Square(w.AsTensor())));
  Saver saver;
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  sess.Run({}, {}, {train});
  EXPECT_EQ(ops::GetSaveSliceInfo(Variable::FromGraph(g, "w/part_2/Adam_1"))->Spec(), "10 4 7,3:0,4");
  const std::string path = saver.Save(sess, testing::MakeTempDir("partitioned") + "/model.ckpt");
  io::CheckpointReader reader(path);
  EXPECT_THAT(reader.GetVariableToShapeMap(),
              ElementsAre(Pair("beta1_power", TensorShape({})), Pair("beta2_power", TensorShape({})),
                          Pair("w", TensorShape({10, 4})), Pair("w/Adam", TensorShape({10, 4})),
                          Pair("w/Adam_1", TensorShape({10, 4}))));
  // One Adam step from 1 with gradient 2: every element moved by the learning rate.
  for (float v : testing::Values<float>(reader.GetTensor("w"))) EXPECT_NEAR(v, 0.9f, 1e-6);
}

TEST(PartitionedSaverTest, MetaGraphKeepsTheSliceInfo) {
  Graph g;
  {
    auto as_default = g.AsDefault();
    ops::GetVariable("w", {10, 4}, DT_FLOAT, ops::ZerosInitializer(),
                     {.partitioner = ops::FixedSizePartitioner(3)});
  }
  const tensorflow::MetaGraphDef meta = ExportMetaGraph(g);
  tensorflow::VariableDef def;
  ASSERT_TRUE(def.ParseFromString(meta.collection_def().at("variables").bytes_list().value(1)));
  EXPECT_EQ(def.variable_name(), "w/part_1:0");
  EXPECT_EQ(def.save_slice_info_def().full_name(), "w");
  EXPECT_THAT(def.save_slice_info_def().var_offset(), ElementsAre(4, 0));
  EXPECT_THAT(def.save_slice_info_def().var_shape(), ElementsAre(3, 4));

  Graph imported;
  ImportMetaGraph(meta, &imported);
  EXPECT_EQ(ops::GetSaveSliceInfo(Variable::FromGraph(imported, "w/part_1"))->Spec(), "10 4 4,3:0,4");
}

}  // namespace
}  // namespace flowtrain::train
