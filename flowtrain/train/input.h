// TF1's queue-based input helpers (tf.train.batch, tf.train.shuffle_batch,
// tf.train.string_input_producer): each builds a queue, the ops that fill it and a QueueRunner
// in GraphKeys::kQueueRunners, and returns the dequeue side. Start the runners with
// StartQueueRunners before running the returned tensors.
//
//   ops::FIFOQueue files = train::StringInputProducer({"train.tfrecord"}, {.num_epochs = 5});
//   auto [key, record] = ops::TFRecordReader().Read(files);
//   std::vector<Output> batch = train::ShuffleBatch({record}, 32, /*capacity=*/1000,
//                                                   /*min_after_dequeue=*/500);
//
// When the input runs out (num_epochs), the queues close in turn and the batch op raises
// OutOfRangeError once the last elements are consumed (a smaller final batch first with
// allow_smaller_final_batch), which ends a monitored session cleanly.
#ifndef FLOWTRAIN_TRAIN_INPUT_H_
#define FLOWTRAIN_TRAIN_INPUT_H_

#include <optional>
#include <string>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/data_flow_ops.h"

namespace flowtrain::train {

struct StringInputProducerOptions {
  // 0: produce forever. Otherwise, as TF's limit_epochs, the epochs are counted in the local
  // variable "<name>/limit_epochs/epochs": run ops::LocalVariablesInitializer() first
  // (MonitoredTrainingSession's local_init_op does).
  int64_t num_epochs = 0;
  bool shuffle = true;  // a new permutation every epoch
  std::optional<int64_t> seed;
  int64_t capacity = 32;
  std::string shared_name;
  std::string name = "input_producer";
};

// A FIFOQueue of the strings (file names), refilled one epoch at a time by a QueueRunner.
ops::FIFOQueue StringInputProducer(const std::vector<std::string>& strings,
                                   const StringInputProducerOptions& options = {});
ops::FIFOQueue StringInputProducer(Output strings, const StringInputProducerOptions& options = {});

struct BatchOptions {
  int num_threads = 1;
  int64_t capacity = 32;
  // The inputs are batches already (their first dimension is split into elements).
  bool enqueue_many = false;
  // Element shapes; default: the inputs' static shapes (without the first dim if enqueue_many).
  std::vector<PartialTensorShape> shapes;
  // Pad variable-size elements to the largest in the batch (tf.train.batch only).
  bool dynamic_pad = false;
  // At the end of the input, return a last batch smaller than batch_size.
  bool allow_smaller_final_batch = false;
  std::optional<int64_t> seed;  // ShuffleBatch only
  std::string shared_name;
  std::string name;  // default "batch" / "shuffle_batch"
};

// tf.train.batch: batches of `batch_size` in input order.
std::vector<Output> Batch(const std::vector<Output>& tensors, int32_t batch_size,
                          const BatchOptions& options = {});
// tf.train.shuffle_batch: batches drawn at random from a RandomShuffleQueue that keeps at
// least `min_after_dequeue` elements to mix with.
std::vector<Output> ShuffleBatch(const std::vector<Output>& tensors, int32_t batch_size, int64_t capacity,
                                 int64_t min_after_dequeue, const BatchOptions& options = {});

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_INPUT_H_
