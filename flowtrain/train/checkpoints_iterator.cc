#include "flowtrain/train/checkpoints_iterator.h"

#include <thread>

#include "flowtrain/core/logging.h"
#include "flowtrain/train/checkpoint_management.h"

namespace flowtrain::train {

std::optional<std::string> WaitForNewCheckpoint(const std::string& checkpoint_dir,
                                                const std::optional<std::string>& last_checkpoint,
                                                std::chrono::milliseconds seconds_to_sleep,
                                                std::optional<std::chrono::milliseconds> timeout) {
  using Clock = std::chrono::steady_clock;
  FT_LOG(INFO) << "Waiting for new checkpoint at " << checkpoint_dir;
  const std::optional<Clock::time_point> stop_time =
      timeout ? std::optional(Clock::now() + *timeout) : std::nullopt;
  while (true) {
    std::optional<std::string> latest = LatestCheckpoint(checkpoint_dir);
    if (latest && latest != last_checkpoint) {
      FT_LOG(INFO) << "Found new checkpoint at " << *latest;
      return latest;
    }
    // As TF: give up when the next poll would come after the deadline.
    if (stop_time && Clock::now() + seconds_to_sleep > *stop_time) return std::nullopt;
    std::this_thread::sleep_for(seconds_to_sleep);
  }
}

CheckpointsIterator::CheckpointsIterator(std::string checkpoint_dir, CheckpointsIteratorOptions options)
    : checkpoint_dir_(std::move(checkpoint_dir)), options_(std::move(options)) {}

std::optional<std::string> CheckpointsIterator::Next() {
  if (last_return_) {
    const auto next_allowed = *last_return_ + options_.min_interval;
    std::this_thread::sleep_until(next_allowed);
  }
  while (true) {
    std::optional<std::string> path =
        WaitForNewCheckpoint(checkpoint_dir_, last_checkpoint_, options_.poll_interval, options_.timeout);
    if (path) {
      last_checkpoint_ = path;
      last_return_ = std::chrono::steady_clock::now();
      return path;
    }
    if (!options_.timeout_fn) {
      FT_LOG(INFO) << "Timed-out waiting for a checkpoint.";
      return std::nullopt;
    }
    if (options_.timeout_fn()) return std::nullopt;
  }
}

}  // namespace flowtrain::train
