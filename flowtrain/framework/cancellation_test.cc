// CancellationManager: callbacks run once on cancel, children follow their parent, and a
// deregistration during a cancellation waits for the callbacks, so what they touch may go.
#include "flowtrain/framework/cancellation.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

namespace flowtrain {
namespace {

TEST(CancellationManagerTest, RunsEachCallbackOnceAndRefusesLaterOnes) {
  CancellationManager cm;
  int runs = 0;
  auto token = cm.RegisterCallback([&] { ++runs; });
  ASSERT_TRUE(token);
  auto removed = cm.RegisterCallback([&] { runs += 100; });
  EXPECT_TRUE(cm.DeregisterCallback(*removed));
  cm.StartCancel();
  cm.StartCancel();
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(cm.IsCancelled());
  EXPECT_FALSE(cm.RegisterCallback([] {}));
  EXPECT_FALSE(cm.DeregisterCallback(*token));
}

TEST(CancellationManagerTest, ChildFollowsItsParent) {
  CancellationManager parent;
  auto child = std::make_unique<CancellationManager>(&parent);
  bool woke = false;
  ASSERT_TRUE(child->RegisterCallback([&] { woke = true; }));
  parent.StartCancel();
  EXPECT_TRUE(child->IsCancelled());
  EXPECT_TRUE(woke);
  CancellationManager late(&parent);  // born cancelled
  EXPECT_TRUE(late.IsCancelled());
}

// The race a finishing run has with Session::Close: the run deregisters its callback (and
// then destroys what it captured) while the cancelling thread is inside that callback.
TEST(CancellationManagerTest, DeregisterWaitsForACallbackRunningOnAnotherThread) {
  CancellationManager cm;
  std::atomic<bool> started{false}, finished{false};
  auto token = cm.RegisterCallback([&] {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    finished = true;
  });
  std::thread canceller([&] { cm.StartCancel(); });
  while (!started) std::this_thread::yield();
  EXPECT_FALSE(cm.DeregisterCallback(*token));
  EXPECT_TRUE(finished);  // not returned while the callback still ran
  canceller.join();
}

TEST(CancellationManagerTest, ACallbackMayDeregisterAnotherWithoutWaitingForItself) {
  CancellationManager cm;
  std::optional<CancellationManager::Token> other;
  bool deregistered_result = true;
  auto first = cm.RegisterCallback([&] { deregistered_result = cm.DeregisterCallback(*other); });
  other = cm.RegisterCallback([] {});
  ASSERT_TRUE(first && other);
  cm.StartCancel();  // would hang if the callback waited for the cancellation it is part of
  EXPECT_FALSE(deregistered_result);
}

TEST(CancellationManagerTest, DestroyingAChildDuringItsParentsCancelIsSafe) {
  for (int round = 0; round < 200; ++round) {
    CancellationManager parent;
    auto child = std::make_unique<CancellationManager>(&parent);
    std::atomic<int> woken{0};
    auto token = child->RegisterCallback([&] { ++woken; });
    std::thread canceller([&] { parent.StartCancel(); });
    child->DeregisterCallback(*token);
    child.reset();  // under ASan, a callback still running on a freed child is caught here
    canceller.join();
    EXPECT_LE(woken.load(), 1);
  }
}

}  // namespace
}  // namespace flowtrain
