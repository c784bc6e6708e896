// Crash safety, short version (the default run): a save loop killed with SIGKILL at 10 random
// moments always leaves a `checkpoint` state file naming a checkpoint that restores correctly.
// saver_soak_test.cc runs the same with many more kills.
#include <gtest/gtest.h>

#include "flowtrain/train/saver_crash_test_util.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

TEST(SaverCrashTest, KilledSaveLoopLeavesRestorableLatestCheckpoint) {
  crash_test::RunKillLoop(testing::MakeTempDir("crash"), /*kills=*/10, /*max_delay_ms=*/1000,
                          /*seed=*/20240601);
}

}  // namespace
}  // namespace flowtrain::train
