// WaitForNewCheckpoint and CheckpointsIterator against a directory another thread writes
// checkpoints into, as an evaluator job sees a trainer's directory.
#include "flowtrain/train/checkpoints_iterator.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/io/tensor_bundle_writer.h"
#include "flowtrain/train/checkpoint_management.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;

// Writes a one-tensor checkpoint `<dir>/model.ckpt-<step>` and makes it the latest.
std::string SaveCheckpoint(const std::string& dir, int step) {
  const std::string prefix = dir + "/model.ckpt-" + std::to_string(step);
  io::BundleWriter writer(prefix);
  writer.Add("global_step", Tensor::Scalar<int64_t>(step));
  writer.Finish();
  UpdateCheckpointStateInternal(dir, prefix);
  return prefix;
}

TEST(WaitForNewCheckpointTest, TimesOutOnAnEmptyDirectory) {
  const std::string dir = testing::MakeTempDir();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(WaitForNewCheckpoint(dir, std::nullopt, 10ms, 50ms), std::nullopt);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(WaitForNewCheckpointTest, ReturnsTheLatestUnlessItWasSeen) {
  const std::string dir = testing::MakeTempDir();
  const std::string first = SaveCheckpoint(dir, 100);
  EXPECT_EQ(WaitForNewCheckpoint(dir, std::nullopt, 10ms, 50ms), first);
  EXPECT_EQ(WaitForNewCheckpoint(dir, first, 10ms, 50ms), std::nullopt);
  const std::string second = SaveCheckpoint(dir, 200);
  EXPECT_EQ(WaitForNewCheckpoint(dir, first, 10ms, 50ms), second);
}

TEST(CheckpointsIteratorTest, YieldsEachCheckpointAWriterMakesLatestThenTimesOut) {
  const std::string dir = testing::MakeTempDir();
  std::thread trainer([&] {
    for (int step = 1; step <= 3; ++step) {
      std::this_thread::sleep_for(60ms);
      SaveCheckpoint(dir, step * 10);
    }
  });
  CheckpointsIterator checkpoints(dir, {.timeout = 1s, .poll_interval = 5ms});
  std::vector<std::string> seen;
  while (std::optional<std::string> path = checkpoints.Next()) seen.push_back(*path);
  trainer.join();
  EXPECT_THAT(seen, ElementsAre(dir + "/model.ckpt-10", dir + "/model.ckpt-20", dir + "/model.ckpt-30"));
}

TEST(CheckpointsIteratorTest, TimeoutFnDecidesWhetherToKeepWaiting) {
  const std::string dir = testing::MakeTempDir();
  int timeouts = 0;
  CheckpointsIterator checkpoints(dir, {.timeout = 20ms,
                                        .timeout_fn =
                                            [&] {
                                              if (++timeouts == 2) SaveCheckpoint(dir, 7);
                                              return timeouts >= 4;
                                            },
                                        .poll_interval = 5ms});
  EXPECT_EQ(checkpoints.Next(), dir + "/model.ckpt-7");
  EXPECT_EQ(timeouts, 2);
  EXPECT_EQ(checkpoints.Next(), std::nullopt);
  EXPECT_EQ(timeouts, 4);
}

TEST(CheckpointsIteratorTest, MinIntervalSpacesTheResults) {
  const std::string dir = testing::MakeTempDir();
  SaveCheckpoint(dir, 1);
  CheckpointsIterator checkpoints(dir, {.min_interval = 150ms, .timeout = 20ms, .poll_interval = 5ms});
  ASSERT_TRUE(checkpoints.Next());
  const auto first_returned = std::chrono::steady_clock::now();
  SaveCheckpoint(dir, 2);
  EXPECT_EQ(checkpoints.Next(), dir + "/model.ckpt-2");
  EXPECT_GE(std::chrono::steady_clock::now() - first_returned, 150ms);
}

}  // namespace
}  // namespace flowtrain::train
