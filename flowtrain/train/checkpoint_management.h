// Checkpoint bookkeeping that needs no session: the `checkpoint` state file that lists a
// directory's checkpoints, finding the latest one, and deleting old ones. The functions are
// TF's tf.train.* checkpoint_management functions with the same rules for relative paths, and
// the state file is byte-identical to what TF's Python writes, so TF and flowtrain can share a
// model directory.
//
//   train::UpdateCheckpointStateInternal("runs/x", "runs/x/model.ckpt-200",
//                                        {"runs/x/model.ckpt-100", "runs/x/model.ckpt-200"},
//                                        "checkpoint", /*save_relative_paths=*/true);
//   // runs/x/checkpoint now reads:
//   //   model_checkpoint_path: "model.ckpt-200"
//   //   all_model_checkpoint_paths: "model.ckpt-100"
//   //   all_model_checkpoint_paths: "model.ckpt-200"
//   std::optional<std::string> latest = train::LatestCheckpoint("runs/x");  // "runs/x/model.ckpt-200"
//   train::RemoveCheckpoint("runs/x/model.ckpt-100");
//
// Only V2 checkpoints (`<prefix>.index` + data files) count as existing: flowtrain cannot read
// TF's older V1 format, so it does not report V1 files as checkpoints.
#ifndef FLOWTRAIN_TRAIN_CHECKPOINT_MANAGEMENT_H_
#define FLOWTRAIN_TRAIN_CHECKPOINT_MANAGEMENT_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "flowtrain/proto/checkpoint_state.pb.h"

namespace flowtrain::train {

inline constexpr char kDefaultLatestFilename[] = "checkpoint";

// The CheckpointState for `model_checkpoint_path` (appended to `all_model_checkpoint_paths`
// unless it is already its last element). When `save_dir` is relative, relative paths are
// rewritten relative to it. InvalidArgument if timestamps are given but their count differs
// from the paths'.
tensorflow::CheckpointState GenerateCheckpointStateProto(
    const std::string& save_dir, const std::string& model_checkpoint_path,
    std::vector<std::string> all_model_checkpoint_paths = {},
    const std::vector<double>& all_model_checkpoint_timestamps = {},
    std::optional<double> last_preserved_timestamp = std::nullopt);

// Writes `<save_dir>/<latest_filename>` atomically. With `save_relative_paths`, absolute paths
// are first made relative to `save_dir` (what Estimator and CheckpointManager do, so that a
// model directory can be moved). InvalidArgument if the state file's path equals the
// checkpoint's path.
void UpdateCheckpointStateInternal(const std::string& save_dir, const std::string& model_checkpoint_path,
                                   const std::vector<std::string>& all_model_checkpoint_paths = {},
                                   const std::string& latest_filename = kDefaultLatestFilename,
                                   bool save_relative_paths = false,
                                   const std::vector<double>& all_model_checkpoint_timestamps = {},
                                   std::optional<double> last_preserved_timestamp = std::nullopt);

// The state in `<checkpoint_dir>/<latest_filename>` with relative paths joined onto
// `checkpoint_dir`; nullopt if the file is absent, unreadable or does not parse (logged as
// "Checkpoint ignored", as TF does). InvalidArgument if it parses but names no checkpoint.
std::optional<tensorflow::CheckpointState> GetCheckpointState(
    const std::string& checkpoint_dir, const std::string& latest_filename = kDefaultLatestFilename);

// The newest checkpoint's prefix, if the state file names one whose `.index` exists.
std::optional<std::string> LatestCheckpoint(const std::string& checkpoint_dir,
                                            const std::string& latest_filename = kDefaultLatestFilename);

// True if `<prefix>.index` exists.
bool CheckpointExists(const std::string& prefix);

// Modification times (seconds since the Epoch, with sub-second precision) of the index files
// of the checkpoints that exist, in order; missing ones are skipped.
std::vector<double> GetCheckpointMtimes(const std::vector<std::string>& prefixes);

struct CheckpointWithMtime {
  std::string prefix;
  double mtime;
};
// The checkpoints among `prefixes` that still exist, with their mtimes, in order: what
// Saver::RecoverLastCheckpoints keeps track of after a restart.
std::vector<CheckpointWithMtime> ExistingCheckpoints(const std::vector<std::string>& prefixes);

// Beyond TF: the V2 checkpoints found in `checkpoint_dir` itself, whatever the state file says:
// every `<prefix>.index` whose data files `<prefix>.data-?????-of-NNNNN` are all there (files
// are not read, so damage inside them is found only by restoring). Newest first: by the global
// step ending the prefix ("model.ckpt-1200"), then by the index file's mtime. What
// Saver::RestoreLatest falls back to when the state file is garbage or names missing files.
//
//   for (const std::string& prefix : FindCheckpointsInDirectory("runs/x")) { ... }
std::vector<std::string> FindCheckpointsInDirectory(const std::string& checkpoint_dir);

// How long a save's temporary must have been left untouched before
// RemoveStaleSaveTemporaries takes it for the debris of a dead process rather than a save in
// progress (a live save writes, creates or renames something in it far more often).
inline constexpr std::chrono::seconds kStaleSaveTemporaryAge{60};

// Beyond TF (which leaves them): deletes what interrupted saves to `save_path` left in its
// directory — the sharded saves' `<base>[-<step>]_temp_<32 hex>/` directories with their
// `part-...` files, and the atomic writes' `<base>[-<step>].<suffix>.tmp<32 hex>` and
// `<latest_filename>.tmp<32 hex>` files (`<base>` is Basename(save_path)) — once neither they
// nor anything in them was modified for `min_age`. Nothing else is touched: a directory
// holding other files is left, with a warning. Returns how many files and directories were
// deleted; an error deleting one is only a warning. Saver::Save calls it before each save:
//
//   RemoveStaleSaveTemporaries("runs/x/model.ckpt");   // runs/x/model.ckpt-500_temp_3f.../ goes
int RemoveStaleSaveTemporaries(const std::string& save_path,
                               const std::string& latest_filename = kDefaultLatestFilename,
                               std::chrono::seconds min_age = kStaleSaveTemporaryAge);

// Deletes `<prefix>.<meta_graph_suffix>`, `<prefix>.index` and every
// `<prefix>.data-?????-of-?????`. Files already gone are only warned about (another process
// may be deleting the same checkpoint).
void RemoveCheckpoint(const std::string& prefix, const std::string& meta_graph_suffix = "meta");

// "<checkpoint>.meta", after stripping a V1 shard suffix such as "-00001-of-00002".
std::string MetaGraphFilename(const std::string& checkpoint_filename,
                              const std::string& meta_graph_suffix = "meta");

// The state in protobuf text format exactly as TF's Python (text_format.MessageToString)
// writes it: one field per line, strings C-escaped, doubles in Python's repr.
std::string CheckpointStateToText(const tensorflow::CheckpointState& state);

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_CHECKPOINT_MANAGEMENT_H_
