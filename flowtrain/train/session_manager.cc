#include "flowtrain/train/session_manager.h"

#include <algorithm>
#include <thread>

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/runtime/session_factory.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/saver.h"

namespace flowtrain::train {
namespace {

std::string OpName(const Operation& op) { return op ? op.name() : std::string("None"); }

}  // namespace

SessionManager::SessionManager(Graph& graph, SessionManagerOptions options)
    : graph_(graph), options_(std::move(options)) {
  if (options_.ready_for_local_init_op && !options_.local_init_op) {
    InvalidArgument(
        "If you pass a ready_for_local_init_op you must also pass a local_init_op, "
        "ready_for_local_init_op [",
        options_.ready_for_local_init_op.name(), "]");
  }
}

std::unique_ptr<SessionInterface> SessionManager::NewRawSession(const std::string& master,
                                                                const ConfigProto& config) const {
  SessionOptions session_options;
  session_options.target = master;
  session_options.config = config;
  return NewSession(graph_, session_options);
}

namespace {

// TF's _ready: ready if the op is unset or reports no uninitialized variables.
std::pair<bool, std::string> Ready(const Output& op, SessionInterface& session, std::string_view what) {
  if (!op) return {true, ""};
  try {
    const Tensor names = session.Run({}, {op}, {})[0];
    if (names.NumElements() == 0 || names.dtype() == DT_INT32) return {true, ""};
    std::vector<std::string> list;
    if (names.dtype() == DT_STRING) {
      for (const std::string& n : names.flat<std::string>()) list.push_back(n);
    }
    return {false, StrCat("Variables not initialized: ", StrJoin(list, ", "))};
  } catch (const FailedPreconditionError& e) {
    if (std::string(e.what()).find("uninitialized") == std::string::npos) {
      FT_LOG(WARNING) << what << " : error while checking readiness: " << e.what();
      throw;
    }
    return {false, e.what()};
  }
}

}  // namespace

std::pair<bool, std::string> SessionManager::ModelReady(SessionInterface& session) const {
  return Ready(options_.ready_op, session, "Model not ready");
}

std::pair<bool, std::string> SessionManager::ModelReadyForLocalInit(SessionInterface& session) const {
  return Ready(options_.ready_for_local_init_op, session, "Model not ready for local init");
}

std::pair<bool, std::string> SessionManager::TryRunLocalInitOp(SessionInterface& session) const {
  if (!options_.local_init_op) return {true, ""};
  auto [ready, reason] = ModelReadyForLocalInit(session);
  if (!ready) return {false, reason};
  FT_LOG(INFO) << "Running local_init_op.";
  session.Run(options_.local_init_feed_dict, {}, {options_.local_init_op});
  FT_LOG(INFO) << "Done running local_init_op.";
  return {true, ""};
}

std::pair<std::unique_ptr<SessionInterface>, bool> SessionManager::RestoreCheckpoint(
    const PrepareSessionOptions& options) {
  std::unique_ptr<SessionInterface> session = NewRawSession(options.master, options.config);
  if (!options.checkpoint_dir.empty() && !options.checkpoint_filename_with_path.empty()) {
    InvalidArgument("Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
  }
  if (options.saver == nullptr ||
      (options.checkpoint_dir.empty() && options.checkpoint_filename_with_path.empty())) {
    return {std::move(session), false};
  }
  if (!options.checkpoint_filename_with_path.empty()) {
    options.saver->Restore(*session, options.checkpoint_filename_with_path);
    return {std::move(session), true};
  }
  std::chrono::milliseconds waited{0};
  std::optional<std::string> restored;
  while (true) {
    // Beyond TF: a damaged newest checkpoint, or a state file that is garbage or names missing
    // files, falls back to the newest intact checkpoint (saver.h).
    restored = options.saver->RestoreLatest(*session, options.checkpoint_dir);
    if (restored) break;
    if (options.wait_for_checkpoint && waited < options.max_wait) {
      FT_LOG(INFO) << "Waiting for checkpoint to be available.";
      std::this_thread::sleep_for(options_.recovery_wait);
      waited += options_.recovery_wait;
    } else {
      return {std::move(session), false};
    }
  }
  // Retention goes on over the checkpoints the state file lists (those still there) and the
  // one restored, which a fallback may have found outside the list.
  std::vector<std::string> paths;
  try {
    if (std::optional<tensorflow::CheckpointState> state = GetCheckpointState(options.checkpoint_dir)) {
      paths.assign(state->all_model_checkpoint_paths().begin(), state->all_model_checkpoint_paths().end());
    }
  } catch (const InvalidArgumentError&) {
    // Reported by RestoreLatest already.
  }
  if (std::find(paths.begin(), paths.end(), *restored) == paths.end()) paths.push_back(*restored);
  options.saver->RecoverLastCheckpoints(paths);
  FT_LOG(INFO) << "Restoring parameters from " << *restored;
  return {std::move(session), true};
}

std::unique_ptr<SessionInterface> SessionManager::PrepareSession(const PrepareSessionOptions& options) {
  auto [session, loaded] = RestoreCheckpoint(options);
  if (!loaded) {
    if (!options.init_op && !options.init_fn && !options_.local_init_op) {
      FailedPrecondition("Model is not initialized and no init_op or init_fn or local_init_op was given");
    }
    if (options.init_op) session->Run(options.init_feed_dict, {}, {options.init_op});
    if (options.init_fn) options.init_fn(*session);
  }
  auto [local_ok, local_reason] = TryRunLocalInitOp(*session);
  if (!local_ok) {
    FailedPrecondition(
        "Init operations did not make model ready for local_init.  Init op: ", OpName(options.init_op),
        ", init fn: ", options.init_fn ? "set" : "None", ", error: ", local_reason);
  }
  auto [ready, reason] = ModelReady(*session);
  if (!ready) {
    FailedPrecondition("Init operations did not make model ready.  Init op: ", OpName(options.init_op),
                       ", init fn: ", options.init_fn ? "set" : "None",
                       ", local_init_op: ", OpName(options_.local_init_op), ", error: ", reason);
  }
  return std::move(session);
}

std::pair<std::unique_ptr<SessionInterface>, bool> SessionManager::RecoverSession(
    const PrepareSessionOptions& options) {
  auto [session, restored] = RestoreCheckpoint(options);
  auto [local_ok, local_reason] = TryRunLocalInitOp(*session);
  if (!restored) return {std::move(session), false};
  if (!local_ok) {
    FT_LOG(INFO) << "Restored model from " << options.checkpoint_dir
                 << " but local init failed: " << local_reason;
    return {std::move(session), false};
  }
  auto [ready, reason] = ModelReady(*session);
  if (!ready) {
    FT_LOG(INFO) << "Restored model from " << options.checkpoint_dir << " is not ready: " << reason;
    return {std::move(session), false};
  }
  FT_LOG(INFO) << "Restored model from " << options.checkpoint_dir;
  return {std::move(session), true};
}

std::unique_ptr<SessionInterface> SessionManager::WaitForSession(
    const std::string& master, const ConfigProto& config, std::optional<std::chrono::seconds> max_wait) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    std::unique_ptr<SessionInterface> session = NewRawSession(master, config);
    std::string local_reason, reason;
    bool ok = false;
    try {
      auto [local_ok, lr] = TryRunLocalInitOp(*session);
      local_reason = lr;
      if (local_ok) {
        auto [ready, r] = ModelReady(*session);
        reason = r;
        ok = ready;
      }
    } catch (const Error& e) {
      // A chief that is not up yet looks like an unavailable session: keep waiting.
      if (e.code() != Code::kUnavailable && e.code() != Code::kAborted) throw;
      reason = e.what();
    }
    if (ok) return session;
    try {
      session->Close();
    } catch (...) {
    }
    if (max_wait) {
      const auto elapsed = std::chrono::steady_clock::now() - start;
      if (elapsed + options_.recovery_wait > *max_wait) {
        DeadlineExceeded("Session was not ready after waiting ", max_wait->count(), " secs.");
      }
    }
    FT_LOG(INFO) << "Waiting for model to be ready.  Ready_for_local_init_op:  " << local_reason
                 << ", ready: " << reason;
    std::this_thread::sleep_for(options_.recovery_wait);
  }
}

}  // namespace flowtrain::train
