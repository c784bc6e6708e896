// Queue: the state behind TF's FIFOQueue, RandomShuffleQueue and PaddingFIFOQueue — a bounded
// buffer of tuples of tensors kept in a session's ResourceMgr, filled by enqueue ops (often
// from QueueRunner threads) and drained by dequeue ops.
//
//   Queue::Options options{.kind = Queue::Kind::kFifo, .name = "fifo_queue",
//                          .dtypes = {DT_FLOAT}, .shapes = {PartialTensorShape({2})},
//                          .capacity = 10};
//   auto queue = std::make_shared<Queue>(options);
//   queue->Enqueue({x}, wait);
//   std::vector<Tensor> batch = queue->DequeueMany(32, /*up_to=*/false, wait);
//
// Blocking calls wait for room or elements, and wake when the queue closes, when the run's
// cancellation manager fires (the session closes) or at the run's deadline, so a closing
// session is never held up by a queue. After Close(), enqueues fail with Cancelled and
// dequeues drain what is left, then fail with OutOfRange in TF's words ("FIFOQueue 'q' is
// closed and has insufficient elements (requested 1, current size 0)").
#ifndef FLOWTRAIN_FRAMEWORK_QUEUE_H_
#define FLOWTRAIN_FRAMEWORK_QUEUE_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/tensor.h"
#include "flowtrain/framework/cancellation.h"
#include "flowtrain/framework/resource_mgr.h"

namespace flowtrain {

class Queue : public ResourceBase {
 public:
  enum class Kind { kFifo, kRandomShuffle, kPaddingFifo };
  struct Options {
    Kind kind = Kind::kFifo;
    std::string name;
    std::vector<DataType> dtypes;
    // One per component, or empty for no constraint. PaddingFIFO pads unknown dims (-1).
    std::vector<PartialTensorShape> shapes;
    int64_t capacity = -1;          // -1: unbounded
    int64_t min_after_dequeue = 0;  // RandomShuffle only
    uint64_t seed = 0;              // RandomShuffle only; 0 picks a random one
  };
  // How long a blocking call may wait, and what cancels it.
  struct Wait {
    CancellationManager* cancellation = nullptr;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  };
  using Tuple = std::vector<Tensor>;

  explicit Queue(Options options);

  void Enqueue(Tuple tuple, const Wait& wait);
  // Splits every component along dimension 0 and enqueues the rows in order.
  void EnqueueMany(const Tuple& batch, const Wait& wait);
  Tuple Dequeue(const Wait& wait);
  // Dequeues `n` elements stacked along a new dimension 0. With `up_to`, a closed queue yields
  // what is left (at least one element) instead of failing.
  Tuple DequeueMany(int64_t n, bool up_to, const Wait& wait);
  // Further enqueues fail; pending ones still complete unless `cancel_pending_enqueues`.
  void Close(bool cancel_pending_enqueues);

  int64_t Size() const;
  bool IsClosed() const;
  const Options& options() const { return options_; }
  std::string DebugString() const override;

 private:
  // "FIFOQueue 'name'" as TF's messages name queues.
  std::string Describe() const;
  void CheckTuple(const Tuple& tuple, bool batched) const;
  // Waits on cv_ until `ready()` (called with mu_ held); Cancelled/DeadlineExceeded if the
  // run ends first. mu_ is released while waiting and while (de)registering the callback.
  template <typename Ready>
  void WaitUntil(const Wait& wait, std::string_view what, Ready ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes one element (the oldest, or a random one for RandomShuffle).
  Tuple TakeOneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // signalled on every change of elements_, closed_ or enqueues_cancelled_
  std::deque<Tuple> elements_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool enqueues_cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_FRAMEWORK_QUEUE_H_
