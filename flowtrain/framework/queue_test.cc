#include "flowtrain/framework/queue.h"

#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/framework/internal/batch_util.h"

namespace flowtrain {
namespace {

using namespace std::chrono_literals;

Queue::Options FloatQueue(Queue::Kind kind, int64_t capacity) {
  return {.kind = kind,
          .name = "q",
          .dtypes = {DT_FLOAT},
          .shapes = {PartialTensorShape({})},
          .capacity = capacity};
}

Queue::Tuple Scalar(float v) { return {Tensor::Scalar<float>(v)}; }

TEST(Queue, FifoOrderAndBatches) {
  Queue q(FloatQueue(Queue::Kind::kFifo, -1));
  Queue::Wait wait;
  for (int i = 0; i < 5; ++i) q.Enqueue(Scalar(i), wait);
  q.EnqueueMany({Tensor::FromVector<float>({5, 6, 7})}, wait);
  EXPECT_EQ(q.Size(), 8);
  EXPECT_EQ(q.Dequeue(wait)[0].scalar<float>(), 0.0f);
  Tensor batch = q.DequeueMany(3, false, wait)[0];
  EXPECT_EQ(batch.shape(), TensorShape({3}));
  EXPECT_EQ(batch.flat<float>()[2], 3.0f);
  q.Close(false);
  EXPECT_THROW(q.Enqueue(Scalar(9), wait), CancelledError);
  // Up-to drains what is left; DequeueMany then fails with TF's message.
  EXPECT_EQ(q.DequeueMany(10, true, wait)[0].NumElements(), 4);
  try {
    q.Dequeue(wait);
    FAIL();
  } catch (const OutOfRangeError& e) {
    EXPECT_STREQ(e.what(),
                 "FIFOQueue 'q' is closed and has insufficient elements (requested 1, current size 0)");
  }
}

TEST(Queue, RejectsWrongTypesAndShapes) {
  Queue q(FloatQueue(Queue::Kind::kFifo, -1));
  EXPECT_THROW(q.Enqueue({Tensor::Scalar<int32_t>(1)}, {}), InvalidArgumentError);
  EXPECT_THROW(q.Enqueue({Tensor::FromVector<float>({1, 2})}, {}), InvalidArgumentError);
  EXPECT_THROW(q.Enqueue({}, {}), InvalidArgumentError);
}

TEST(Queue, FullQueueBlocksUntilDequeue) {
  Queue q(FloatQueue(Queue::Kind::kFifo, 2));
  Queue::Wait wait;
  q.Enqueue(Scalar(1), wait);
  q.Enqueue(Scalar(2), wait);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    q.Enqueue(Scalar(3), wait);
    done = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(done.load());
  EXPECT_EQ(q.Dequeue(wait)[0].scalar<float>(), 1.0f);
  producer.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(q.Size(), 2);
}

TEST(Queue, CloseWakesBlockedDequeuesAndCancelsPendingEnqueues) {
  Queue::Wait wait;
  Queue empty(FloatQueue(Queue::Kind::kFifo, 2));
  std::exception_ptr consumer_error;
  std::thread consumer([&] {
    try {
      empty.Dequeue(wait);
    } catch (...) {
      consumer_error = std::current_exception();
    }
  });
  Queue full(FloatQueue(Queue::Kind::kFifo, 1));
  full.Enqueue(Scalar(1), wait);
  std::exception_ptr producer_error;
  std::thread producer([&] {
    try {
      full.Enqueue(Scalar(2), wait);  // blocks: capacity 1
    } catch (...) {
      producer_error = std::current_exception();
    }
  });
  std::this_thread::sleep_for(20ms);
  empty.Close(false);
  full.Close(/*cancel_pending_enqueues=*/true);
  consumer.join();
  producer.join();
  EXPECT_THROW(std::rethrow_exception(consumer_error), OutOfRangeError);
  EXPECT_THROW(std::rethrow_exception(producer_error), CancelledError);
  EXPECT_EQ(full.Size(), 1);
}

TEST(Queue, CancellationAndDeadlineEndBlockingCalls) {
  Queue q(FloatQueue(Queue::Kind::kFifo, -1));
  CancellationManager cm;
  std::thread canceller([&] {
    std::this_thread::sleep_for(20ms);
    cm.StartCancel();
  });
  EXPECT_THROW(q.Dequeue({.cancellation = &cm}), CancelledError);
  canceller.join();
  EXPECT_THROW(q.Dequeue({.cancellation = &cm}), CancelledError);  // already cancelled
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(q.Dequeue({.deadline = start + 30ms}), DeadlineExceededError);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
}

TEST(Queue, RandomShuffleKeepsMinAfterDequeueAndMixes) {
  Queue::Options options = FloatQueue(Queue::Kind::kRandomShuffle, 100);
  options.min_after_dequeue = 10;
  options.seed = 42;
  Queue q(options);
  Queue::Wait wait{.deadline = std::chrono::steady_clock::now() + 10ms};
  for (int i = 0; i < 10; ++i) q.Enqueue(Scalar(i), {});
  // Only min_after_dequeue elements: a dequeue waits (here until the deadline).
  EXPECT_THROW(q.Dequeue(wait), DeadlineExceededError);
  for (int i = 10; i < 50; ++i) q.Enqueue(Scalar(i), {});
  Tensor batch = q.DequeueMany(40, false, {})[0];
  std::set<float> seen(batch.flat<float>().begin(), batch.flat<float>().end());
  EXPECT_EQ(seen.size(), 40u);
  bool in_order = true;
  for (int i = 0; i < 40; ++i) in_order = in_order && batch.flat<float>()[i] == i;
  EXPECT_FALSE(in_order);
  q.Close(false);
  // Once closed, the remaining elements come out too.
  EXPECT_EQ(q.DequeueMany(10, false, {})[0].NumElements(), 10);
}

TEST(Queue, PaddingFifoPadsToTheLargestElement) {
  Queue q({.kind = Queue::Kind::kPaddingFifo,
           .name = "p",
           .dtypes = {DT_INT32},
           .shapes = {PartialTensorShape({-1})}});
  q.Enqueue({Tensor::FromVector<int32_t>({1})}, {});
  q.Enqueue({Tensor::FromVector<int32_t>({2, 3, 4})}, {});
  Tensor batch = q.DequeueMany(2, false, {})[0];
  EXPECT_EQ(batch.shape(), TensorShape({2, 3}));
  const std::vector<int32_t> expected = {1, 0, 0, 2, 3, 4};
  EXPECT_EQ(std::vector<int32_t>(batch.flat<int32_t>().begin(), batch.flat<int32_t>().end()), expected);
}

TEST(BatchUtil, StackStringsAndRejectMismatchedShapes) {
  Tensor s = batch_util::Stack({Tensor::Scalar<std::string>("a"), Tensor::Scalar<std::string>("b")}, "t");
  EXPECT_EQ(s.flat<std::string>()[1], "b");
  EXPECT_THROW(batch_util::Stack({Tensor::FromVector<float>({1}), Tensor::FromVector<float>({1, 2})}, "t"),
               InvalidArgumentError);
  EXPECT_EQ(batch_util::Stack({}, "t", DT_FLOAT, TensorShape({4})).shape(), TensorShape({0, 4}));
}

}  // namespace
}  // namespace flowtrain
