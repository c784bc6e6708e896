// `flowtrain inspect-checkpoint` on TF's checkpoints: runs the built command-line binary.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "flowtrain/io/tensor_slice.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using ::flowtrain::testing::CliResult;
using ::flowtrain::testing::RunFlowtrainCli;
using ::testing::HasSubstr;

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
  EXPECT_EQ(half.output, "tensor_name:  b\n2\n");
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
  EXPECT_THAT(all.output, HasSubstr("tensor_name:  w\n"));
  EXPECT_THAT(all.output, HasSubstr("1 2"));
  EXPECT_THAT(all.output, HasSubstr("5 6"));
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
