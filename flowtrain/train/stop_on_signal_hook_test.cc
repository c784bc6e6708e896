// StopOnSignalHook: a signal ends the training loop after the step in flight and the session's
// close writes the final checkpoint; a second delivery still kills; handlers are restored.
#include "flowtrain/train/stop_on_signal_hook.h"

#include <csignal>

#include <gtest/gtest.h>

#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/hooks_test_model.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

struct sigaction CurrentAction(int signal) {
  struct sigaction action = {};
  sigaction(signal, nullptr, &action);
  return action;
}

TEST(StopOnSignalHookTest, StopsAfterTheStepAndTheCloseSavesTheFinalCheckpoint) {
  const std::string dir = testing::MakeTempDir("stop_on_signal");
  HooksTestModel m;
  auto stop = std::make_shared<StopOnSignalHook>(
      StopOnSignalHook::Options{.signals = {SIGUSR1}, .check_interval = std::chrono::milliseconds(0)});
  auto saver = std::make_shared<CheckpointSaverHook>(dir, CheckpointSaverHookOptions{.every_n_steps = 1000});
  {
    auto sess = m.Session({saver, stop});
    EXPECT_EQ(m.RunUntilStop(*sess, 5), 5);
    EXPECT_FALSE(stop->signal());
    std::raise(SIGUSR1);  // the process lives on: the hook caught it
    EXPECT_EQ(stop->signal(), SIGUSR1);
    EXPECT_EQ(m.RunUntilStop(*sess), 1);  // the step in flight, then ShouldStop()
  }
  // Saved at creation (step 0) and at the close (step 6), nothing between.
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-6");
}

TEST(StopOnSignalHookTest, IsCalledOnlyAtItsCheckInterval) {
  HooksTestModel m;
  auto stop = std::make_shared<StopOnSignalHook>(
      StopOnSignalHook::Options{.signals = {SIGUSR2}, .check_interval = std::chrono::hours(1)});
  auto sess = m.Session({stop});
  m.RunUntilStop(*sess, 2);  // the first check is an hour away
  std::raise(SIGUSR2);
  EXPECT_EQ(m.RunUntilStop(*sess, 50), 50);  // not due yet: the runs go on
}

TEST(StopOnSignalHookTest, RestoresThePreviousHandlers) {
  const auto before = CurrentAction(SIGUSR1).sa_handler;
  {
    StopOnSignalHook stop({.signals = {SIGUSR1}});
    EXPECT_NE(CurrentAction(SIGUSR1).sa_handler, before);
    // One hook per signal: a second would leave the first's handler unowned.
    testing::ExpectInvalidArgument([] { StopOnSignalHook other({.signals = {SIGUSR1}}); }, "already handled");
    EXPECT_NE(CurrentAction(SIGUSR1).sa_handler, before);
  }
  EXPECT_EQ(CurrentAction(SIGUSR1).sa_handler, before);
  StopOnSignalHook again({.signals = {SIGUSR1}});  // free again
}

TEST(StopOnSignalHookTest, RejectsSignalsThatCannotBeCaught) {
  testing::ExpectInvalidArgument([] { StopOnSignalHook stop({.signals = {SIGKILL}}); }, "cannot be caught");
  testing::ExpectInvalidArgument([] { StopOnSignalHook stop({.signals = {0}}); }, "cannot be caught");
}

TEST(StopOnSignalHookDeathTest, ASecondSignalKillsAsBefore) {
  EXPECT_EXIT(
      {
        StopOnSignalHook stop({.signals = {SIGTERM}});
        std::raise(SIGTERM);
        std::raise(SIGTERM);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

}  // namespace
}  // namespace flowtrain::train
