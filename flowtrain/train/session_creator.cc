#include "flowtrain/train/session_creator.h"

#include "flowtrain/core/error.h"
#include "flowtrain/train/saver.h"

namespace flowtrain::train {
namespace {

// The session manager both creators build lazily, after the scaffold is finalized.
std::unique_ptr<SessionManager> MakeSessionManager(Graph& graph, const Scaffold& scaffold) {
  SessionManagerOptions options;
  options.local_init_op = scaffold.local_init_op;
  options.local_init_feed_dict = scaffold.local_init_feed_dict;
  options.ready_op = scaffold.ready_op;
  options.ready_for_local_init_op = scaffold.ready_for_local_init_op;
  return std::make_unique<SessionManager>(graph, options);
}

}  // namespace

ChiefSessionCreator::ChiefSessionCreator(ChiefSessionCreatorOptions options)
    : options_(std::move(options)), graph_(options_.graph != nullptr ? options_.graph : &GetDefaultGraph()) {
  if (options_.scaffold == nullptr) options_.scaffold = std::make_shared<Scaffold>();
}

SessionManager& ChiefSessionCreator::GetSessionManager() {
  if (session_manager_ == nullptr) session_manager_ = MakeSessionManager(*graph_, *options_.scaffold);
  return *session_manager_;
}

std::unique_ptr<SessionInterface> ChiefSessionCreator::CreateSession() {
  Scaffold& scaffold = *options_.scaffold;
  scaffold.Finalize(*graph_);
  PrepareSessionOptions prepare;
  prepare.master = options_.master;
  prepare.config = options_.config;
  prepare.saver = scaffold.saver;
  prepare.checkpoint_dir = options_.checkpoint_dir;
  prepare.checkpoint_filename_with_path = options_.checkpoint_filename_with_path;
  prepare.init_op = scaffold.init_op;
  prepare.init_feed_dict = scaffold.init_feed_dict;
  if (scaffold.init_fn) {
    auto shared = options_.scaffold;
    prepare.init_fn = [shared](SessionInterface& session) { shared->init_fn(*shared, session); };
  }
  return GetSessionManager().PrepareSession(prepare);
}

WorkerSessionCreator::WorkerSessionCreator(WorkerSessionCreatorOptions options)
    : options_(std::move(options)), graph_(options_.graph != nullptr ? options_.graph : &GetDefaultGraph()) {
  if (options_.scaffold == nullptr) options_.scaffold = std::make_shared<Scaffold>();
}

SessionManager& WorkerSessionCreator::GetSessionManager() {
  if (session_manager_ == nullptr) session_manager_ = MakeSessionManager(*graph_, *options_.scaffold);
  return *session_manager_;
}

std::unique_ptr<SessionInterface> WorkerSessionCreator::CreateSession() {
  options_.scaffold->Finalize(*graph_);
  return GetSessionManager().WaitForSession(options_.master, options_.config, options_.max_wait);
}

}  // namespace flowtrain::train
