// Crash safety, short version (the default run): a save loop killed with SIGKILL at 16 moments
// spread over its first four saves and over every quarter of a save always leaves a
// `checkpoint` state file naming a checkpoint that restores correctly (a few seconds).
// saver_soak_test.cc runs the same with many more kills. Both for Saver::Save and for
// AsyncCheckpointSaver.
#include <gtest/gtest.h>

#include "flowtrain/train/saver_crash_test_util.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

TEST(SaverCrashTest, KilledSaveLoopLeavesRestorableLatestCheckpoint) {
  crash_test::RunKillLoop(testing::MakeTempDir("crash"), /*kills=*/16, /*saves_spanned=*/4,
                          /*seed=*/20240601);
}

// The same with checkpoints written in the background while the variables change in place.
TEST(SaverCrashTest, KilledAsyncSaveLoopLeavesRestorableLatestCheckpoint) {
  crash_test::RunKillLoop(testing::MakeTempDir("crash_async"), /*kills=*/16, /*saves_spanned=*/4,
                          /*seed=*/20261130, /*async=*/true);
}

}  // namespace
}  // namespace flowtrain::train
