// `flowtrain inspect-checkpoint` on TF's checkpoints: runs the built command-line binary.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using ::testing::HasSubstr;

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr
};

CommandResult RunFlowtrain(const std::string& args) {
  const std::string binary = testing::BinaryDir() + "/tools/flowtrain";
  FILE* pipe = popen((binary + " " + args + " 2>&1").c_str(), "r");
  CommandResult result{-1, ""};
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

class InspectCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!FileExists(testing::BinaryDir() + "/tools/flowtrain")) {
      GTEST_SKIP() << "tools/flowtrain is not built (FLOWTRAIN_BUILD_EXAMPLES=OFF)";
    }
    FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  }
  const std::string prefix_ = testing::FixturePath("tf1_estimator_model_dir/model.ckpt-2000");
};

TEST_F(InspectCheckpointTest, ListsNamesDtypesAndShapes) {
  CommandResult r = RunFlowtrain("inspect-checkpoint " + prefix_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dense/kernel (DT_FLOAT) [2,4]\n"));
  EXPECT_THAT(r.output, HasSubstr("global_step (DT_INT64) []\n"));
  EXPECT_THAT(r.output, HasSubstr("dense_1/bias/Adam_1 (DT_FLOAT) [1]\n"));
}

TEST_F(InspectCheckpointTest, PrintsOneTensorOrAll) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_half_plus_two_cpu");
  CommandResult one = RunFlowtrain("inspect-checkpoint " + prefix_ + " --tensor global_step");
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(one.output, "tensor_name:  global_step\n2000\n");
  CommandResult all = RunFlowtrain("inspect-checkpoint " + prefix_ + " --all");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_THAT(all.output, HasSubstr("tensor_name:  beta1_power\n"));
  EXPECT_THAT(all.output, HasSubstr("tensor_name:  global_step\n2000\n"));
  CommandResult half = RunFlowtrain("inspect-checkpoint " +
                                    testing::FixturePath("tf1_half_plus_two_cpu/variables/variables") +
                                    " --tensor b");
  EXPECT_EQ(half.output, "tensor_name:  b\n2\n");
}

TEST_F(InspectCheckpointTest, ErrorsAreReported) {
  CommandResult missing = RunFlowtrain("inspect-checkpoint " + prefix_ + " --tensor nope");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("NotFound"));
  EXPECT_THAT(missing.output, HasSubstr("nope"));
  CommandResult no_ckpt = RunFlowtrain("inspect-checkpoint /nonexistent/model.ckpt");
  EXPECT_EQ(no_ckpt.exit_code, 1);
}

}  // namespace
}  // namespace flowtrain
