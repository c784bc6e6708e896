// DivergenceGuardHook (beyond TF): when the loss turns NaN or infinite (or exceeds a bound),
// restores the newest checkpoint of the run in the same process and carries on training,
// up to a budget of rollbacks; only then does it fail with NanLossDuringTrainingError. TF's
// NanTensorHook can only kill the job or stop it; dlib's trainer is the one peer that rolls
// back, and this is its idea as a hook.
//
//   auto guard = std::make_shared<train::DivergenceGuardHook>(train::DivergenceGuardHook::Options{
//       .loss = loss, .checkpoint_dir = model_dir, .max_rollbacks = 3,
//       .on_rollback = [&](SessionInterface& s, const train::Rollback& r) {
//         s.Run({}, {}, {halve_learning_rate});   // e.g. continue more carefully
//       }});
//   options.chief_only_hooks.push_back(guard);   // before the CheckpointSaverHook: see below
//
// The input pipeline is not rewound (unless the Saver also saves the iterator: the default
// one does not, even when MonitoredTrainingSession's own saves it), so training
// resumes from the restored weights on batches it has not seen: the batch that blew up is
// skipped. The restore runs on the raw session inside AfterRun; a hook placed after this one
// in the list sees the restored model. Place the guard before the CheckpointSaverHook (in
// MonitoredTrainingSession, chief_only_hooks come first), or a save due on the diverged step
// would write the NaN weights before the guard restores. In distributed training only the
// chief should roll back (the variables it restores are the ones every worker shares).
#ifndef FLOWTRAIN_TRAIN_DIVERGENCE_GUARD_HOOK_H_
#define FLOWTRAIN_TRAIN_DIVERGENCE_GUARD_HOOK_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "flowtrain/train/saver.h"
#include "flowtrain/train/session_run_hook.h"

namespace flowtrain::train {

// What DivergenceGuardHook tells `on_rollback` after each rollback.
struct Rollback {
  int rollbacks = 0;                // this one included
  double loss = 0;                  // the diverged value
  std::string restored_checkpoint;  // its prefix; the global step went back to its step
};

class DivergenceGuardHook : public SessionRunHook {
 public:
  struct Options {
    Output loss;                     // a float or double scalar (or any shape: all checked)
    std::string checkpoint_dir;      // where the run's checkpoints are
    int max_rollbacks = 3;           // then NanLossDuringTrainingError
    std::optional<double> max_loss;  // also diverged above this (NaN/Inf always are)
    // Default: the graph's (SAVERS collection) if it has one when the hook begins; else a
    // saver of TF's default contents (variables, SAVEABLE_OBJECTS) of the hook's own.
    std::shared_ptr<Saver> saver;
    std::function<void(SessionInterface&, const Rollback&)> on_rollback;
  };
  explicit DivergenceGuardHook(Options options);

  void Begin() override;
  std::optional<SessionRunArgs> BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;

  int rollbacks() const { return rollbacks_; }

 private:
  Options options_;
  int rollbacks_ = 0;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_DIVERGENCE_GUARD_HOOK_H_
