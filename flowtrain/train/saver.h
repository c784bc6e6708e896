// Saver: TF1's tf.train.Saver. It adds a "save/" subgraph to the graph (TF's node names: save/Const,
// save/SaveV2, save/RestoreV2, save/Assign..., save/restore_all), saves variables into V2
// checkpoints that TensorFlow reads, restores them, keeps the `checkpoint` state file and deletes
// old checkpoints exactly as TF does, and writes the `.meta` MetaGraphDef beside each checkpoint.
//
//   train::Saver saver({.max_to_keep = 3});                 // all global variables
//   ...
//   std::string path = saver.Save(sess, "runs/x/model.ckpt", /*global_step=*/1200);
//   // path == "runs/x/model.ckpt-1200"; runs/x/checkpoint names it; runs/x/model.ckpt-1200.meta
//   saver.Restore(sess, path);
//   // Or, after a restart: the newest intact checkpoint (beyond TF, see RestoreLatest):
//   std::optional<std::string> restored = saver.RestoreLatest(sess, "runs/x");
//
// Crash safety: checkpoint files are written under temporary names, fsync'ed and renamed into
// place, and the state file is replaced atomically only after the checkpoint is complete, so a
// process killed at any moment leaves a state file that names only complete checkpoints.
// What such a process leaves behind (temporary files and the sharded saves' `_temp_`
// directories) is deleted by a later Save to the same prefix once it is a minute old (beyond
// TF, which leaves it: see RemoveStaleSaveTemporaries).
//
// Restore errors (beyond TF's wording, which they keep): a variable missing from the
// checkpoint is NotFound naming the key, the variable and the checkpoint; a shape or dtype
// mismatch is InvalidArgument naming the variable and both shapes ("Assign requires shapes of
// both tensors to match. lhs shape= [3] rhs shape= [2]"); a damaged file is DataLoss naming the
// file and tensor. With RestoreOptions::verify_checksums (the default) no variable changes
// unless the whole checkpoint is intact.
//
// A Saver is used from one thread at a time (as TF's); the session it runs in may be shared.
#ifndef FLOWTRAIN_TRAIN_SAVER_H_
#define FLOWTRAIN_TRAIN_SAVER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/saveable_object.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/proto/saver.pb.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain::train {

// TF's Saver constructor arguments. Designated initializers read like TF's keyword arguments:
// `Saver saver({.sharded = true, .max_to_keep = 0});`
struct SaverOptions {
  // What to save, each under its op name ("dense/kernel"). When var_list, var_map and
  // saveable_objects are all empty: every global variable plus the Variables and
  // SaveableObjects in the "saveable_objects" collection (TF's SAVEABLE_OBJECTS).
  std::vector<Variable> var_list = {};
  // Checkpoint key -> variable, for saving under other names (e.g. restoring a TF model whose
  // variables were named differently). Used together with var_list if both are given.
  std::map<std::string, Variable> var_map = {};
  // State other than variables, saved under its specs' keys (TF's var_list entries that are
  // SaveableObjects), e.g. data::MakeSaveableFromIterator(iterator).
  std::vector<std::shared_ptr<SaveableObject>> saveable_objects = {};
  // Beyond TF: state saved like saveable_objects, but which a checkpoint may lack (one TF
  // wrote, or flowtrain without it): Restore then restores everything else and leaves each
  // object whose keys are missing as it is (an iterator starts from its beginning), with an
  // INFO log line naming the keys, instead of NotFound. These come on top of the contents
  // above: with var_list, var_map and saveable_objects empty, the saver still saves every
  // global variable and the SAVEABLE_OBJECTS collection.
  std::vector<std::shared_ptr<SaveableObject>> optional_saveable_objects = {};
  // One SaveV2 per device, merged into one checkpoint by MergeV2Checkpoints (TF's sharded
  // saves; with one device it still takes the sharded path, as TF does).
  bool sharded = false;
  // Checkpoints kept on disk; older ones are deleted (one per save). 0 keeps every file and
  // lists only the latest in the state file (TF's max_to_keep=None).
  int max_to_keep = 5;
  // Besides the newest max_to_keep, one checkpoint per this many hours is kept for good.
  double keep_checkpoint_every_n_hours = 10000.0;
  // Name scope of the save/restore subgraph (made unique: "save", "save_1", ...).
  std::string name = "save";
  // Build() is called by the first Save or by the user, not by the constructor.
  bool defer_build = false;
  // With no variables, the saver is empty (Save returns "", Restore does nothing) instead of
  // InvalidArgument("No variables to save").
  bool allow_empty = false;
  // "model.ckpt-00001200" instead of "model.ckpt-1200".
  bool pad_step_number = false;
  // The state file lists paths relative to its directory, so the directory can be moved.
  bool save_relative_paths = false;
  // Default of the filename tensor (what save/restore ops use when it is not fed).
  std::string filename = {};
  // The graph to build in; default: the variables' graph, else the calling thread's default.
  Graph* graph = nullptr;
};

// Save's global_step: none, a number, or a tensor evaluated in the session (the global step
// variable).
class GlobalStep {
 public:
  GlobalStep() = default;
  GlobalStep(int64_t step) : value_(step) {}                          // NOLINT
  GlobalStep(int step) : value_(static_cast<int64_t>(step)) {}        // NOLINT
  GlobalStep(Output tensor) : value_(tensor) {}                       // NOLINT
  GlobalStep(const Variable& variable) : value_(variable.value()) {}  // NOLINT
  bool has_value() const { return !std::holds_alternative<std::monostate>(value_); }
  // The step, running the tensor in `session` if it is one.
  int64_t Resolve(SessionInterface& session) const;

 private:
  std::variant<std::monostate, int64_t, Output> value_;
};

// Beyond TF: how Restore checks the checkpoint.
struct RestoreOptions {
  // Default true: every tensor's checksum is verified before any variable changes, so a
  // damaged checkpoint fails with DataLoss and leaves every variable as it was. (With one
  // RestoreV2 op — unsharded savers and single-device sharded ones — the op itself reads and
  // checks all tensors before the first Assign runs, so this costs no second pass; with several
  // shards, or optional saveables missing from the checkpoint, BundleReader::VerifyAll runs
  // first.) Shapes and dtypes are always checked against
  // the checkpoint's index before anything is assigned. False gives TF's behaviour: tensors are
  // checked as they are read and assigned, shard by shard.
  bool verify_checksums = true;
};

// Beyond TF: how RestoreLatest picks a checkpoint.
struct RestoreLatestOptions {
  RestoreOptions restore = {};
  // Default true: when the newest checkpoint named by the state file is damaged (DataLoss or
  // missing files), log a warning naming it and try the next newer-to-older one the state file
  // lists, then the others found in the directory (FindCheckpointsInDirectory), restoring the
  // newest intact one. A state file that is garbage goes straight to the directory's, with a
  // warning naming the state file and the checkpoint chosen; without a state file there is no
  // checkpoint, as in TF. False is TF's behaviour: restore tf.train.latest_checkpoint(dir) and
  // let its error propagate (a garbage state file is then no checkpoint at all).
  bool fall_back_to_intact = true;
  std::string latest_filename = "checkpoint";
};

// Beyond TF: everything one Save writes, copied out of the session by Saver::TakeSnapshot so
// that the checkpoint can be written while the session trains on (see AsyncCheckpointSaver).
struct CheckpointSnapshot {
  std::string save_path;        // as given to TakeSnapshot
  std::string checkpoint_file;  // the prefix to write: "<save_path>-<step>"
  bool empty_saver = false;     // nothing to write but the meta graph
  std::vector<std::string> keys;
  std::vector<Tensor> tensors;  // in the order of `keys`; later updates copy, never change them
  std::optional<tensorflow::MetaGraphDef> meta_graph;

  // Bytes of tensor data held.
  uint64_t bytes() const;
};

class Saver {
 public:
  // Builds the save/restore subgraph now unless `options.defer_build`. InvalidArgument for
  // "No variables to save" (without allow_empty), duplicate keys, or defer_build with a
  // var_list.
  explicit Saver(SaverOptions options = {});
  // A saver for an existing save/restore subgraph described by `saver_def` (an imported
  // MetaGraphDef's, TF's or ours); retention settings come from the SaverDef.
  Saver(Graph& graph, const tensorflow::SaverDef& saver_def);
  Saver(const Saver&) = delete;
  Saver& operator=(const Saver&) = delete;

  // Adds the save/restore subgraph; a no-op once built.
  void Build();

  // Saves every variable to `save_path` (+ "-<step>" if `global_step` is given) and returns
  // the checkpoint prefix ("" for an empty saver). Then, with `write_state`, records it in
  // `<dir>/<latest_filename>` and deletes at most one old checkpoint; with `write_meta_graph`,
  // writes `<prefix>.<meta_graph_suffix>`. InvalidArgument("Parent directory of <save_path>
  // doesn't exist, can't save.") if the directory is missing.
  std::string Save(SessionInterface& session, const std::string& save_path,
                   const GlobalStep& global_step = {}, const std::string& latest_filename = "checkpoint",
                   const std::string& meta_graph_suffix = "meta", bool write_meta_graph = true,
                   bool write_state = true);

  // Beyond TF: Save in two halves, so that a checkpoint can be written while training goes on.
  // TakeSnapshot runs the session once to fetch every tensor the save ops would write (a
  // consistent model, as Save sees it), plus the MetaGraphDef when `write_meta_graph`. The
  // fetched variables share their buffers until an update copies them (copy on write).
  // WriteSnapshot then writes those copies without the session, exactly as Save would have:
  // the same bundle (written under temporary names, fsync'ed and renamed), state file,
  // retention and .meta file; it returns the checkpoint prefix ("" for an empty saver).
  //
  //   CheckpointSnapshot snapshot = saver.TakeSnapshot(sess, "runs/x/model.ckpt", 1200);
  //   std::thread writer([&] { saver.WriteSnapshot(snapshot); });  // training continues
  //
  // Until it is written, the snapshot holds the model as it was: a second copy in memory of
  // every variable updated meanwhile. Unlike
  // sharded Save, which has each device write its own shard, WriteSnapshot writes a single
  // shard from this process. WriteSnapshot may run while another thread uses the Saver: its
  // state-file update and deletions are serialised with Restore and RestoreLatest, so a
  // restore never reads a checkpoint while it is being deleted.
  CheckpointSnapshot TakeSnapshot(SessionInterface& session, const std::string& save_path,
                                  const GlobalStep& global_step = {},
                                  const std::string& latest_filename = "checkpoint",
                                  bool write_meta_graph = true);
  std::string WriteSnapshot(const CheckpointSnapshot& snapshot,
                            const std::string& latest_filename = "checkpoint",
                            const std::string& meta_graph_suffix = "meta", bool write_state = true);

  // Restores every variable from the checkpoint at `save_path` (a prefix as Save returns).
  // InvalidArgument("The passed save_path is not a valid checkpoint: ...") if there is none.
  void Restore(SessionInterface& session, const std::string& save_path, const RestoreOptions& options = {});

  // Beyond TF: restores the newest checkpoint of `checkpoint_dir` (see RestoreLatestOptions)
  // and returns its prefix, or nullopt if the directory names no checkpoint. The session
  // manager uses this to resume training:
  //
  //   if (auto path = saver.RestoreLatest(sess, model_dir)) { ... resumed from *path ... }
  //
  // DataLoss if no checkpoint tried is intact (naming each one skipped); NotFound or
  // InvalidArgument (graph/checkpoint mismatch) from the first intact one are not retried.
  std::optional<std::string> RestoreLatest(SessionInterface& session, const std::string& checkpoint_dir,
                                           const RestoreLatestOptions& options = {});

  // The MetaGraphDef of the saver's graph (shapes, stripped op list, collections, this
  // SaverDef); written to `filename` (binary, atomically) when it is not empty.
  tensorflow::MetaGraphDef ExportMetaGraph(const std::string& filename = "") const;

  // ---- Retention bookkeeping (TF's last_checkpoints & co.) ----
  // Checkpoints not yet deleted, oldest first.
  std::vector<std::string> last_checkpoints() const;
  // After a restart: takes over `checkpoint_paths` (e.g. the state file's list) that still
  // exist, with their files' mtimes as save times.
  void RecoverLastCheckpoints(const std::vector<std::string>& checkpoint_paths);
  void SetLastCheckpointsWithTime(const std::vector<std::pair<std::string, double>>& checkpoints);

  const tensorflow::SaverDef& saver_def() const { return saver_def_; }
  bool built() const { return built_; }
  bool empty() const { return is_empty_; }
  Graph& graph() const { return *graph_; }

 private:
  // A variable (saved under `name`, its key) or a SaveableObject, as the save and restore
  // subgraphs see it.
  struct Saveable {
    std::string name;
    std::vector<SaveableObject::SaveSpec> specs;
    std::vector<DataType> dtypes;  // of the specs' tensors
    std::string device;
    SaveableObject::RestoreFn restore;
    bool optional = false;  // from optional_saveable_objects
  };
  // What restores one optional saveable on its own, for checkpoints that lack others.
  struct OptionalRestore {
    std::string name;
    std::vector<std::string> keys;
    std::string restore_op;
  };
  // One variable (or other object) a restore op writes, found by walking the restore
  // subgraph (which works for TF-built subgraphs too).
  struct RestoreTarget {
    std::string key;
    std::string variable;  // op name of what is restored
    DataType dtype;
    PartialTensorShape shape;
  };

  void CollectSaveables();
  Saveable VariableSaveable(const std::string& key, const Variable& variable,
                            const std::string& slice_spec = {}) const;
  void BuildSaveRestore(std::vector<Output>* filename_chain);
  Output AddSaveOps(Output filename, const std::vector<Saveable>& saveables);
  Output AddShardedSaveOps(Output filename,
                           const std::vector<std::pair<std::string, std::vector<Saveable>>>& shards);
  Operation AddRestoreOps(Output filename, const std::vector<Saveable>& saveables, std::string_view name);
  // For savers with optional saveables: the ops restoring the others, and each optional one.
  void BuildPartialRestores(Output filename);
  void AnalyzeRestoreGraph();
  void BuildForSave();
  // The prefix Save writes for these arguments, after checking them.
  std::string CheckpointFile(SessionInterface& session, const std::string& save_path,
                             const GlobalStep& global_step, const std::string& latest_filename) const;
  // Records a written checkpoint in the state file and deletes the oldest beyond max_to_keep.
  void CommitCheckpoint(const std::string& save_path, const std::string& checkpoint,
                        const std::string& latest_filename, const std::string& meta_graph_suffix);
  void RestoreLocked(SessionInterface& session, const std::string& save_path, const RestoreOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks every restored key but those in `skipped` against the checkpoint's index.
  void CheckAgainstIndex(const std::string& save_path, const std::set<std::string>& skipped = {}) const;
  void RunRestore(SessionInterface& session, const std::string& save_path, const RestoreOptions& options);
  std::vector<std::string> last_checkpoints_paths() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordLastCheckpoint(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeDeleteOldCheckpoints(const std::string& meta_graph_suffix) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  SaverOptions options_;
  Graph* graph_ = nullptr;
  std::vector<Saveable> saveables_;
  tensorflow::SaverDef saver_def_;
  bool built_ = false;
  bool is_empty_ = false;
  std::vector<RestoreTarget> restore_targets_;
  int num_restore_ops_ = 0;
  // Set when there are optional saveables: restores all but those (empty: nothing to restore).
  std::string required_restore_op_;
  std::vector<OptionalRestore> optional_restores_;

  // Guards the retention state below and serialises checkpoint commits (state file,
  // deletions) with restores.
  mutable absl::Mutex mu_;
  std::vector<std::pair<std::string, double>> last_checkpoints_ ABSL_GUARDED_BY(mu_);  // oldest first
  std::deque<std::pair<std::string, double>> to_delete_ ABSL_GUARDED_BY(mu_);
  double next_checkpoint_time_ ABSL_GUARDED_BY(mu_) = 0;
};

// TF's _get_saver_or_default (used by Scaffold): the one Saver in the graph's "savers"
// collection (items of type std::shared_ptr<Saver>); if there is none, a new
// Saver({.sharded = true, .allow_empty = true}) added to the collection, with the optional
// saveables `make_optional` returns (beyond TF; called only when a new saver is built).
// FailedPrecondition if the collection holds more than one.
std::shared_ptr<Saver> GetSaverOrDefault(
    Graph& graph,
    const std::function<std::vector<std::shared_ptr<SaveableObject>>()>& make_optional = nullptr);

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_SAVER_H_
