// Waiting for checkpoints that another process writes, as TF's tf.train.wait_for_new_checkpoint
// and tf.train.checkpoints_iterator: the loop of an evaluator job that evaluates each new
// checkpoint of a training run.
//
//   train::CheckpointsIterator checkpoints("runs/mnist", {.timeout = std::chrono::minutes(10)});
//   while (std::optional<std::string> path = checkpoints.Next()) {
//     Evaluate(*path);                 // "runs/mnist/model.ckpt-1500"
//   }                                  // no new checkpoint for 10 minutes: done
//
// A checkpoint is "new" when the directory's `checkpoint` state file names another latest
// checkpoint than the one returned before; checkpoints written in between are skipped, as in TF.
#ifndef FLOWTRAIN_TRAIN_CHECKPOINTS_ITERATOR_H_
#define FLOWTRAIN_TRAIN_CHECKPOINTS_ITERATOR_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace flowtrain::train {

// Polls `checkpoint_dir` every `seconds_to_sleep` until its latest checkpoint differs from
// `last_checkpoint`, and returns it; nullopt when `timeout` passes first (no timeout: waits
// for ever).
std::optional<std::string> WaitForNewCheckpoint(
    const std::string& checkpoint_dir, const std::optional<std::string>& last_checkpoint = std::nullopt,
    std::chrono::milliseconds seconds_to_sleep = std::chrono::seconds(1),
    std::optional<std::chrono::milliseconds> timeout = std::nullopt);

struct CheckpointsIteratorOptions {
  // Next() returns at most once per this interval (measured from the previous return).
  std::chrono::milliseconds min_interval{0};
  // How long to wait for a new checkpoint before giving up; nullopt waits for ever.
  std::optional<std::chrono::milliseconds> timeout;
  // Called on each timeout: true ends the iteration, false goes on waiting. Unset: a timeout
  // ends it. (TF's timeout_fn; an evaluator passes "has the trainer finished?".)
  std::function<bool()> timeout_fn;
  // How often the state file is polled.
  std::chrono::milliseconds poll_interval = std::chrono::seconds(1);
};

// Yields each new checkpoint of a directory, in the order they become the latest.
class CheckpointsIterator {
 public:
  explicit CheckpointsIterator(std::string checkpoint_dir, CheckpointsIteratorOptions options = {});

  // The next new checkpoint's path, or nullopt when the iteration has ended (see timeout).
  std::optional<std::string> Next();

 private:
  std::string checkpoint_dir_;
  CheckpointsIteratorOptions options_;
  std::optional<std::string> last_checkpoint_;
  std::optional<std::chrono::steady_clock::time_point> last_return_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_CHECKPOINTS_ITERATOR_H_
