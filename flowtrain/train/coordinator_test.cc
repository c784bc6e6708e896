#include "flowtrain/train/coordinator.h"

#include <atomic>
#include <chrono>

#include <gtest/gtest.h>

namespace flowtrain::train {
namespace {

using namespace std::chrono_literals;

std::exception_ptr MakeError(Code code, const std::string& message) {
  try {
    ThrowError(code, message);
  } catch (...) {
    return std::current_exception();
  }
}

TEST(Coordinator, StopRequestWakesWaiters) {
  Coordinator coord;
  EXPECT_FALSE(coord.ShouldStop());
  EXPECT_FALSE(coord.WaitForStop(10ms));
  auto stopper = std::make_shared<CoordinatedThread>("stopper", [&] {
    std::this_thread::sleep_for(20ms);
    coord.RequestStop();
  });
  stopper->Start();
  EXPECT_TRUE(coord.WaitForStop());
  EXPECT_TRUE(coord.ShouldStop());
  coord.Join({stopper});
  EXPECT_TRUE(coord.joined());
  EXPECT_FALSE(stopper->IsAlive());
}

TEST(Coordinator, JoinRethrowsTheFirstReportedException) {
  Coordinator coord;
  ThreadList threads;
  for (int i = 0; i < 3; ++i) {
    auto t = std::make_shared<CoordinatedThread>("t", [&coord, i] {
      if (i == 0) {
        coord.StopOnException([] { InvalidArgument("first failure"); });
      } else {
        coord.WaitForStop();
        coord.RequestStop(MakeError(Code::kInternal, "later failure"));
      }
    });
    coord.RegisterThread(t);
    threads.push_back(t);
  }
  for (auto& t : threads) t->Start();
  try {
    coord.Join();
    FAIL() << "Join should re-throw";
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "first failure");
  }
}

TEST(Coordinator, ExceptionAfterPlainStopIsIgnored) {
  Coordinator coord;
  coord.RequestStop();
  coord.RequestStop(MakeError(Code::kInternal, "too late"));
  EXPECT_NO_THROW(coord.Join());
}

TEST(Coordinator, OutOfRangeIsACleanStopByDefault) {
  Coordinator coord;
  coord.RequestStop(MakeError(Code::kOutOfRange, "End of sequence"));
  EXPECT_TRUE(coord.ShouldStop());
  EXPECT_NO_THROW(coord.Join());

  Coordinator strict(std::vector<Code>{});
  strict.RequestStop(MakeError(Code::kOutOfRange, "End of sequence"));
  EXPECT_THROW(strict.Join(), OutOfRangeError);
}

TEST(Coordinator, ReportAfterJoinRethrowsAtOnce) {
  Coordinator coord;
  coord.RequestStop();
  coord.Join();
  EXPECT_THROW(coord.RequestStop(MakeError(Code::kAborted, "late")), AbortedError);
  EXPECT_NO_THROW(coord.RequestStop());
}

TEST(Coordinator, ClearStopResetsEverything) {
  Coordinator coord;
  coord.RequestStop(MakeError(Code::kInternal, "boom"));
  EXPECT_THROW(coord.RaiseRequestedException(), InternalError);
  coord.ClearStop();
  EXPECT_FALSE(coord.ShouldStop());
  EXPECT_FALSE(coord.joined());
  EXPECT_NO_THROW(coord.RaiseRequestedException());
}

TEST(Coordinator, StragglersAfterGracePeriodAreAnError) {
  Coordinator coord;
  std::atomic<bool> release{false};
  auto stubborn = std::make_shared<CoordinatedThread>("stubborn", [&] {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  });
  stubborn->Start();
  coord.RegisterThread(stubborn);
  coord.RequestStop();
  const auto start = std::chrono::steady_clock::now();
  try {
    coord.Join({}, 50ms);
    FAIL();
  } catch (const FailedPreconditionError& e) {
    EXPECT_STREQ(e.what(), "Coordinator stopped with threads still running: stubborn");
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  // With ignore_live_threads the same situation is only logged.
  Coordinator lenient;
  lenient.RequestStop();
  EXPECT_NO_THROW(lenient.Join({stubborn}, 10ms, /*ignore_live_threads=*/true));
  release = true;
  stubborn->Join();
}

TEST(Coordinator, JoinWaitsForThreadsThatEndWithoutStop) {
  Coordinator coord;
  auto quick = std::make_shared<CoordinatedThread>("quick", [] { std::this_thread::sleep_for(5ms); });
  quick->Start();
  coord.Join({quick});
  EXPECT_FALSE(quick->IsAlive());
  EXPECT_FALSE(coord.ShouldStop());
}

TEST(LooperThread, RunsAtIntervalsUntilStopped) {
  Coordinator coord;
  std::atomic<int> calls{0};
  const auto start = std::chrono::steady_clock::now();
  auto looper = LooperThread::Loop(coord, 10ms, [&] { ++calls; });
  // Wait for 3 calls rather than a fixed time, so a loaded machine cannot starve the count.
  while (calls.load() < 3 && std::chrono::steady_clock::now() - start < 10s) std::this_thread::sleep_for(1ms);
  coord.RequestStop();
  coord.Join();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  // First call is immediate, then one per 10 ms: never more than elapsed / 10 ms + 1.
  EXPECT_GE(calls.load(), 3);
  EXPECT_LE(calls.load(), elapsed / 10ms + 1);
}

TEST(LooperThread, ExceptionInTargetStopsTheCoordinator) {
  Coordinator coord;
  int calls = 0;
  LooperThread::Loop(coord, std::nullopt, [&] {
    if (++calls == 3) DataLoss("bad record");
  });
  EXPECT_THROW(coord.Join(), DataLossError);
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace flowtrain::train
