// Queues as graph ops, as TF1's tf.FIFOQueue, tf.RandomShuffleQueue and tf.PaddingFIFOQueue
// (the V2 ops TF 1.15 builds: FIFOQueueV2 outputs a DT_RESOURCE handle, QueueEnqueueV2,
// QueueDequeueManyV2, QueueCloseV2... take it). The queue itself lives in the session.
//
//   ops::FIFOQueue queue(/*capacity=*/100, {DT_FLOAT, DT_INT64},
//                        {.shapes = {PartialTensorShape({784}), PartialTensorShape({})}});
//   Operation enqueue = queue.Enqueue({image, label});
//   std::vector<Output> batch = queue.DequeueMany(32);     // [32,784] float, [32] int64
//   Operation close = queue.Close();
//
// Dequeuing from a closed queue that has too few elements raises OutOfRangeError; enqueuing
// into a closed queue raises CancelledError.
#ifndef FLOWTRAIN_OPS_DATA_FLOW_OPS_H_
#define FLOWTRAIN_OPS_DATA_FLOW_OPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

struct QueueOptions {
  // One per component, or empty. FIFO and RandomShuffle queues need fully defined shapes for
  // DequeueMany; a PaddingFIFOQueue needs them all, with -1 for dimensions to pad.
  std::vector<PartialTensorShape> shapes;
  // Queues with the same shared_name share state across sessions of one resource manager.
  std::string shared_name;
  std::string container;
  std::string name;  // default: "fifo_queue", "random_shuffle_queue", "padding_fifo_queue"
  // RandomShuffleQueue only: the op seed (TF's get_seed rules with the graph seed).
  std::optional<int64_t> seed;
};

// What the three queue kinds share: TF's QueueBase.
class QueueBase {
 public:
  // An empty handle (no queue).
  QueueBase() = default;
  // The queue's DT_RESOURCE handle.
  Output handle() const { return handle_; }
  // The queue op's name, e.g. "fifo_queue".
  const std::string& name() const { return handle_.node()->name(); }
  const std::vector<DataType>& dtypes() const { return dtypes_; }
  const std::vector<PartialTensorShape>& shapes() const { return shapes_; }

  // Names default to TF's: "<queue>_enqueue", "<queue>_EnqueueMany", "<queue>_Dequeue" ...
  Operation Enqueue(const std::vector<Output>& values, std::string_view name = {}) const;
  Operation EnqueueMany(const std::vector<Output>& values, std::string_view name = {}) const;
  std::vector<Output> Dequeue(std::string_view name = {}) const;
  std::vector<Output> DequeueMany(Output n, std::string_view name = {}) const;
  std::vector<Output> DequeueMany(int32_t n, std::string_view name = {}) const;
  std::vector<Output> DequeueUpTo(Output n, std::string_view name = {}) const;
  std::vector<Output> DequeueUpTo(int32_t n, std::string_view name = {}) const;
  Operation Close(bool cancel_pending_enqueues = false, std::string_view name = {}) const;
  Output Size(std::string_view name = {}) const;

  // A handle on an existing queue op (e.g. one found by name in an imported graph).
  static QueueBase FromHandle(Output handle);

 protected:
  QueueBase(Output handle, std::vector<DataType> dtypes, std::vector<PartialTensorShape> shapes);

 private:
  std::vector<Output> DequeueN(std::string_view op, Output n, std::string_view name,
                               std::string_view default_suffix, bool exact_name = false) const;

  Output handle_;
  std::vector<DataType> dtypes_;
  std::vector<PartialTensorShape> shapes_;
};

// First in, first out. `capacity` -1 means unbounded.
class FIFOQueue : public QueueBase {
 public:
  FIFOQueue(int64_t capacity, std::vector<DataType> dtypes, const QueueOptions& options = {});
};

// Dequeues elements in random order, keeping at least `min_after_dequeue` elements to mix
// with until the queue is closed.
class RandomShuffleQueue : public QueueBase {
 public:
  RandomShuffleQueue(int64_t capacity, int64_t min_after_dequeue, std::vector<DataType> dtypes,
                     const QueueOptions& options = {});
};

// A FIFO queue whose DequeueMany pads variable-size components to the largest in the batch.
class PaddingFIFOQueue : public QueueBase {
 public:
  PaddingFIFOQueue(int64_t capacity, std::vector<DataType> dtypes, const QueueOptions& options);
};

// TF's random seed rules (tf.get_seed): the (seed, seed2) attrs for an op given its optional
// op seed and the graph's seed.
std::pair<int64_t, int64_t> GetSeeds(Graph& graph, std::optional<int64_t> op_seed);

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_DATA_FLOW_OPS_H_
