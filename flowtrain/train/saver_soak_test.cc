// Crash safety, long version (label `slow`): 300 SIGKILLs of a save loop, spread over its
// first 15 saves and over every quarter of a save;
// after each, the checkpoint the `checkpoint` state file names restores with values matching
// its step. Alternates plain and sharded savers, and each child resumes from the last one.
// Then the same for checkpoints written in the background (AsyncCheckpointSaver).
#include <random>

#include <gtest/gtest.h>

#include "flowtrain/train/saver_crash_test_util.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

TEST(SaverSoakTest, ThreeHundredKills) {
  crash_test::RunKillLoop(testing::MakeTempDir("soak"), /*kills=*/300, /*saves_spanned=*/15,
                          std::random_device{}());
}

TEST(SaverSoakTest, ThreeHundredKillsOfAsyncSaves) {
  crash_test::RunKillLoop(testing::MakeTempDir("soak_async"), /*kills=*/300, /*saves_spanned=*/15,
                          std::random_device{}(), /*async=*/true);
}

}  // namespace
}  // namespace flowtrain::train
