// SessionManager: creates sessions that are ready to run — restored from a checkpoint or
// initialised — and lets non-chief workers wait until the chief has done so, as TF's
// tf.train.SessionManager.
//
//   SessionManager sm(graph, {.ready_op = ops::ReportUninitializedVariables()});
//   auto sess = sm.PrepareSession({.init_op = init, .saver = saver, .checkpoint_dir = dir});
//   auto worker_sess = sm.WaitForSession("", config, std::chrono::minutes(30));
//
// Readiness: ready_op returns the names of uninitialized variables; an empty result (or a
// FailedPrecondition mentioning "uninitialized") decides, and the names are logged while
// waiting. Beyond TF: when `verify_checkpoints` is set in the restore options, a damaged
// latest checkpoint is skipped for the newest intact one, with a warning (see saver.h).
#ifndef FLOWTRAIN_TRAIN_SESSION_MANAGER_H_
#define FLOWTRAIN_TRAIN_SESSION_MANAGER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "flowtrain/graph/graph.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain::train {

class Saver;

struct SessionManagerOptions {
  Operation local_init_op;
  FeedList local_init_feed_dict;
  Output ready_op;
  Output ready_for_local_init_op;
  std::chrono::milliseconds recovery_wait{30000};  // TF's recovery_wait_secs=30
};

struct PrepareSessionOptions {
  std::string master;
  Operation init_op;
  std::shared_ptr<Saver> saver;
  std::string checkpoint_dir;
  std::string checkpoint_filename_with_path;
  bool wait_for_checkpoint = false;
  std::chrono::seconds max_wait{7200};
  ConfigProto config;
  FeedList init_feed_dict;
  std::function<void(SessionInterface&)> init_fn;
};

class SessionManager {
 public:
  SessionManager(Graph& graph, SessionManagerOptions options = {});

  // A session with the model restored from the latest checkpoint, or initialised (init_op,
  // then init_fn), then local-initialised; throws FailedPrecondition with TF's messages when
  // the model is still not ready.
  std::unique_ptr<SessionInterface> PrepareSession(const PrepareSessionOptions& options);
  // Restores if it can; returns the session and whether the model is ready.
  std::pair<std::unique_ptr<SessionInterface>, bool> RecoverSession(const PrepareSessionOptions& options);
  // Polls (a new session each time, every recovery_wait) until the model is ready; throws
  // DeadlineExceeded "Session was not ready after waiting N secs." after max_wait.
  std::unique_ptr<SessionInterface> WaitForSession(const std::string& master, const ConfigProto& config,
                                                   std::optional<std::chrono::seconds> max_wait);

  // (ready, reason) for a session, as TF's _model_ready.
  std::pair<bool, std::string> ModelReady(SessionInterface& session) const;
  std::pair<bool, std::string> ModelReadyForLocalInit(SessionInterface& session) const;

 private:
  std::pair<std::unique_ptr<SessionInterface>, bool> RestoreCheckpoint(const PrepareSessionOptions& options);
  std::pair<bool, std::string> TryRunLocalInitOp(SessionInterface& session) const;
  std::unique_ptr<SessionInterface> NewRawSession(const std::string& master, const ConfigProto& config) const;

  Graph& graph_;
  SessionManagerOptions options_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_SESSION_MANAGER_H_
