#include "flowtrain/train/divergence_guard_hook.h"

#include <cmath>

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"

namespace flowtrain::train {
namespace {

// The first element that is not finite or is above `max_loss`, if any.
template <typename T>
std::optional<double> FirstDiverged(const Tensor& loss, const std::optional<double>& max_loss) {
  for (T v : loss.flat<T>()) {
    if (!std::isfinite(v) || (max_loss && static_cast<double>(v) > *max_loss)) return static_cast<double>(v);
  }
  return std::nullopt;
}

}  // namespace

DivergenceGuardHook::DivergenceGuardHook(Options options) : options_(std::move(options)) {
  if (!options_.loss) InvalidArgument("DivergenceGuardHook: no loss tensor given");
  if (options_.loss.dtype() != DT_FLOAT && options_.loss.dtype() != DT_DOUBLE) {
    InvalidArgument("DivergenceGuardHook: the loss ", options_.loss.name(), " is ",
                    DataTypeString(options_.loss.dtype()), "; it must be float or double");
  }
  if (options_.checkpoint_dir.empty()) InvalidArgument("DivergenceGuardHook: no checkpoint_dir given");
  if (options_.max_rollbacks < 0) InvalidArgument("DivergenceGuardHook: max_rollbacks must be >= 0");
}

void DivergenceGuardHook::Begin() {
  if (options_.saver != nullptr) return;
  Graph& graph = *options_.loss.graph();
  if (!graph.GetCollectionItems(GraphKeys::kSavers).empty()) {
    // The user's saver, which the scaffold and CheckpointSaverHook use too.
    options_.saver = GetSaverOrDefault(graph);
    return;
  }
  // One of TF's default contents, kept out of the SAVERS collection: the scaffold's default
  // saver, built later, may also save the input's position (exact_resume), and restoring that
  // would replay the batch that blew up instead of skipping it.
  options_.saver = std::make_shared<Saver>(
      SaverOptions{.sharded = true, .name = "rollback", .allow_empty = true, .graph = &graph});
}

std::optional<SessionRunArgs> DivergenceGuardHook::BeforeRun(SessionRunContext&) {
  return SessionRunArgs{.fetches = {options_.loss}};
}

void DivergenceGuardHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const Tensor& loss = values.results[0];
  const std::optional<double> diverged = loss.dtype() == DT_FLOAT
                                             ? FirstDiverged<float>(loss, options_.max_loss)
                                             : FirstDiverged<double>(loss, options_.max_loss);
  if (!diverged) return;
  if (rollbacks_ >= options_.max_rollbacks) {
    FT_LOG(ERROR) << "Model diverged with loss = " << *diverged << " after " << rollbacks_
                  << " rollbacks (max_rollbacks " << options_.max_rollbacks << ")";
    throw NanLossDuringTrainingError();
  }
  const std::optional<std::string> latest = LatestCheckpoint(options_.checkpoint_dir);
  if (!latest) {
    FT_LOG(ERROR) << "Model diverged with loss = " << *diverged << " and " << options_.checkpoint_dir
                  << " holds no checkpoint to roll back to";
    throw NanLossDuringTrainingError();
  }
  options_.saver->Restore(context.session(), *latest);
  ++rollbacks_;
  FT_LOG(WARNING) << "Model diverged with loss = " << *diverged << "; restored " << *latest << " (rollback "
                  << rollbacks_ << " of at most " << options_.max_rollbacks << ")";
  if (options_.on_rollback) {
    options_.on_rollback(
        context.session(),
        Rollback{.rollbacks = rollbacks_, .loss = *diverged, .restored_checkpoint = *latest});
  }
}

}  // namespace flowtrain::train
