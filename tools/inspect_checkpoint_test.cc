// `flowtrain inspect-checkpoint` on TF's checkpoints: runs the built command-line binary.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "flowtrain/io/tensor_slice.h"
#include "flowtrain/train/checkpoint_management.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using ::flowtrain::testing::CliResult;
using ::flowtrain::testing::RunFlowtrainCli;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class InspectCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!FileExists(testing::FlowtrainCliPath())) {
      GTEST_SKIP() << "tools/flowtrain is not built (FLOWTRAIN_BUILD_EXAMPLES=OFF)";
    }
    FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  }
  const std::string prefix_ = testing::FixturePath("tf1_estimator_model_dir/model.ckpt-2000");
};

TEST_F(InspectCheckpointTest, ListsNamesDtypesAndShapes) {
  CliResult r = RunFlowtrainCli("inspect-checkpoint " + prefix_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dense/kernel (DT_FLOAT) [2,4]\n"));
  EXPECT_THAT(r.output, HasSubstr("global_step (DT_INT64) []\n"));
  EXPECT_THAT(r.output, HasSubstr("dense_1/bias/Adam_1 (DT_FLOAT) [1]\n"));
}

TEST_F(InspectCheckpointTest, PrintsOneTensorOrAll) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_half_plus_two_cpu");
  CliResult one = RunFlowtrainCli("inspect-checkpoint " + prefix_ + " --tensor global_step");
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(one.output, "tensor_name:  global_step\n2000\n");
  CliResult all = RunFlowtrainCli("inspect-checkpoint " + prefix_ + " --all");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_THAT(all.output, HasSubstr("tensor_name:  beta1_power\n"));
  EXPECT_THAT(all.output, HasSubstr("tensor_name:  global_step\n2000\n"));
  CliResult half =
      RunFlowtrainCli("inspect-checkpoint " +
                      testing::FixturePath("tf1_half_plus_two_cpu/variables/variables") + " --tensor b");
  // A float scalar as numpy prints it (what TF's tool prints).
  EXPECT_EQ(half.output, "tensor_name:  b\n2.0\n");
}

TEST_F(InspectCheckpointTest, PartitionedVariableIsShownWhole) {
  const std::string prefix = testing::MakeTempDir("inspect") + "/ckpt";
  io::BundleWriter writer(prefix);
  writer.AddSlice("w", {3, 2}, io::ParseShapeAndSlice("3 2 0,2:0,2").slice,
                  Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
  writer.AddSlice("w", {3, 2}, io::ParseShapeAndSlice("3 2 2,1:0,2").slice,
                  Tensor::FromVector<float>({5, 6}, TensorShape({1, 2})));
  writer.Finish();
  CliResult listed = RunFlowtrainCli("inspect-checkpoint " + prefix);
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_EQ(listed.output, "w (DT_FLOAT) [3,2]\n");
  CliResult all = RunFlowtrainCli("inspect-checkpoint " + prefix + " --all");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_EQ(all.output, "tensor_name:  w\n[[1. 2.]\n [3. 4.]\n [5. 6.]]\n");
}

TEST_F(InspectCheckpointTest, TakesTfFlagNamesAndCheckpointFiles) {
  CliResult one =
      RunFlowtrainCli("inspect-checkpoint --file_name " + prefix_ + ".index --tensor_name global_step");
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(one.output, "tensor_name:  global_step\n2000\n");
  CliResult data =
      RunFlowtrainCli("inspect-checkpoint " + prefix_ + ".data-00000-of-00001 --tensor global_step");
  EXPECT_EQ(data.output, "tensor_name:  global_step\n2000\n");
  CliResult names = RunFlowtrainCli("inspect-checkpoint " + prefix_ + " --all_tensor_names");
  EXPECT_EQ(names.exit_code, 0) << names.output;
  EXPECT_THAT(names.output, HasSubstr("tensor_name:  dense/kernel\ntensor_name:  dense/kernel/Adam\n"));
  CliResult all = RunFlowtrainCli("inspect-checkpoint " + prefix_ + " --all_tensors");
  EXPECT_THAT(all.output, HasSubstr("tensor_name:  global_step\n2000\n"));
}

TEST_F(InspectCheckpointTest, ModelDirectoryMeansItsLatestCheckpoint) {
  const std::string dir = testing::MakeTempDir("inspect_dir");
  for (int step : {1, 2}) {
    io::BundleWriter writer(JoinPath(dir, "model.ckpt-" + std::to_string(step)));
    writer.Add("global_step", Tensor::Scalar<int64_t>(step));
    writer.Finish();
  }
  // Without a state file the directory is no checkpoint, whatever it holds.
  CliResult none = RunFlowtrainCli("inspect-checkpoint " + dir);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.output, HasSubstr("holds neither a `checkpoint` state file nor a saved_model.pb"));
  train::UpdateCheckpointStateInternal(dir, JoinPath(dir, "model.ckpt-2"),
                                       {JoinPath(dir, "model.ckpt-1"), JoinPath(dir, "model.ckpt-2")},
                                       "checkpoint",
                                       /*save_relative_paths=*/true);
  CliResult latest = RunFlowtrainCli("inspect-checkpoint " + dir + " --tensor_name global_step");
  EXPECT_EQ(latest.exit_code, 0) << latest.output;
  EXPECT_EQ(latest.output, "tensor_name:  global_step\n2\n");
  train::UpdateCheckpointStateInternal(dir, JoinPath(dir, "model.ckpt-9"), {}, "checkpoint", true);
  CliResult stale = RunFlowtrainCli("inspect-checkpoint " + dir);
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_THAT(stale.output, HasSubstr("names no checkpoint whose .index exists"));
}

TEST_F(InspectCheckpointTest, SavedModelDirectoryMeansItsVariables) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_half_plus_two_cpu");
  CliResult r = RunFlowtrainCli("inspect-checkpoint " + testing::FixturePath("tf1_half_plus_two_cpu"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("b (DT_FLOAT) []\n"));
}

TEST_F(InspectCheckpointTest, LargeTensorsAreCutAsNumpyCutsThem) {
  const std::string prefix = testing::MakeTempDir("inspect_big") + "/ckpt";
  std::vector<int64_t> values(2000);
  for (int64_t i = 0; i < 2000; ++i) values[i] = i;
  io::BundleWriter writer(prefix);
  writer.Add("big", Tensor::FromVector<int64_t>(values, TensorShape({2, 1000})));
  writer.Add("small", Tensor::FromVector<float>({0.25f, 1, -2}));
  writer.Finish();
  CliResult cut = RunFlowtrainCli("inspect-checkpoint " + prefix + " --tensor_name big");
  EXPECT_EQ(cut.exit_code, 0) << cut.output;
  EXPECT_EQ(
      cut.output,
      "tensor_name:  big\n[[   0    1    2 ...  997  998  999]\n [1000 1001 1002 ... 1997 1998 1999]]\n");
  CliResult small = RunFlowtrainCli("inspect-checkpoint " + prefix + " --tensor_name small");
  EXPECT_EQ(small.output, "tensor_name:  small\n[ 0.25  1.   -2.  ]\n");
  CliResult whole =
      RunFlowtrainCli("inspect-checkpoint " + prefix + " --tensor_name big --printoptions threshold=inf");
  EXPECT_EQ(whole.exit_code, 0) << whole.output;
  EXPECT_THAT(whole.output, AllOf(HasSubstr(" 500 "), Not(HasSubstr("..."))));
  CliResult edges = RunFlowtrainCli("inspect-checkpoint " + prefix +
                                    " --tensor_name big --printoptions threshold=10 edgeitems=1");
  EXPECT_EQ(edges.output, "tensor_name:  big\n[[   0 ...  999]\n [1000 ... 1999]]\n");
  CliResult bad = RunFlowtrainCli("inspect-checkpoint " + prefix + " --printoptions colour=red");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.output, HasSubstr("'colour' is not a printoption"));
}

TEST_F(InspectCheckpointTest, ErrorsAreReported) {
  CliResult missing = RunFlowtrainCli("inspect-checkpoint " + prefix_ + " --tensor nope");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("NotFound"));
  EXPECT_THAT(missing.output, HasSubstr("nope"));
  CliResult no_ckpt = RunFlowtrainCli("inspect-checkpoint /nonexistent/model.ckpt");
  EXPECT_EQ(no_ckpt.exit_code, 1);
}

}  // namespace
}  // namespace flowtrain
