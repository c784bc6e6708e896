#include "flowtrain/train/async_checkpoint_saver.h"

#include <chrono>
#include <exception>
#include <memory>

#include "flowtrain/core/logging.h"

namespace flowtrain::train {

AsyncCheckpointSaver::~AsyncCheckpointSaver() {
  try {
    Wait();
  } catch (const std::exception& e) {
    FT_LOG(ERROR) << "A checkpoint written in the background failed: " << e.what();
  }
}

std::optional<AsyncCheckpointSaver::Written> AsyncCheckpointSaver::Save(SessionInterface& session,
                                                                        const std::string& save_path,
                                                                        int64_t global_step,
                                                                        bool write_meta_graph) {
  std::optional<Written> previous = Wait();
  auto snapshot = std::make_shared<CheckpointSnapshot>(
      saver_.TakeSnapshot(session, save_path, global_step, "checkpoint", write_meta_graph));
  pending_step_ = global_step;
  pending_ = std::async(std::launch::async, [&saver = saver_, snapshot = std::move(snapshot)] {
    return saver.WriteSnapshot(*snapshot);
  });
  return previous;
}

std::optional<AsyncCheckpointSaver::Written> AsyncCheckpointSaver::TakeFinished() {
  if (pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    return Wait();
  }
  return std::nullopt;
}

std::optional<AsyncCheckpointSaver::Written> AsyncCheckpointSaver::Wait() {
  if (!pending_.valid()) return std::nullopt;
  std::future<std::string> pending = std::move(pending_);
  return Written{pending.get(), pending_step_};  // get() rethrows the write's error
}

}  // namespace flowtrain::train
