// AsyncCheckpointSaver writes checkpoints on a background thread while training goes on. Beyond
// TF: a TF 1.x save holds the training loop for the whole write; here training waits only for
// the model's copy into memory (Saver::TakeSnapshot), and the write goes through the same
// crash-safe path as Saver::Save (temporary names, fsync, rename, then the state file). One save
// is in flight at a time: Save waits for the previous one first.
//
//   AsyncCheckpointSaver async(saver);
//   async.Save(sess, "runs/x/model.ckpt", step);        // returns once the model is copied
//   ... train ...
//   if (auto done = async.TakeFinished()) FT_LOG(INFO) << "wrote " << done->path;
//   async.Wait();                                       // at the end; rethrows a failed write
//
// A write's error (a full disk, say) is rethrown by the TakeFinished or Wait that collects it.
// The destructor waits for the write in flight and logs its error. Used from one thread.
#ifndef FLOWTRAIN_TRAIN_ASYNC_CHECKPOINT_SAVER_H_
#define FLOWTRAIN_TRAIN_ASYNC_CHECKPOINT_SAVER_H_

#include <cstdint>
#include <future>
#include <optional>
#include <string>

#include "flowtrain/runtime/session.h"
#include "flowtrain/train/saver.h"

namespace flowtrain::train {

class AsyncCheckpointSaver {
 public:
  // A checkpoint written to completion.
  struct Written {
    std::string path;  // its prefix, as Saver::Save returns it
    int64_t global_step;
  };

  // `saver` must outlive this object.
  explicit AsyncCheckpointSaver(Saver& saver) : saver_(saver) {}
  ~AsyncCheckpointSaver();
  AsyncCheckpointSaver(const AsyncCheckpointSaver&) = delete;
  AsyncCheckpointSaver& operator=(const AsyncCheckpointSaver&) = delete;

  // Waits for the save in flight, copies the model out of `session` and starts writing it as
  // `<save_path>-<global_step>`, with the state file `checkpoint` and, if `write_meta_graph`,
  // the .meta file. Returns the save it waited for, if one was in flight (rethrowing its error).
  std::optional<Written> Save(SessionInterface& session, const std::string& save_path, int64_t global_step,
                              bool write_meta_graph = true);

  bool in_flight() const { return pending_.valid(); }

  // The save in flight if it has finished, else nullopt (one still being written stays in
  // flight). Rethrows the error of a save that failed.
  std::optional<Written> TakeFinished();

  // Waits for the save in flight to finish and returns it, or nullopt if there is none.
  // Rethrows the error of a save that failed.
  std::optional<Written> Wait();

 private:
  Saver& saver_;
  std::future<std::string> pending_;  // the path being written
  int64_t pending_step_ = 0;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_ASYNC_CHECKPOINT_SAVER_H_
