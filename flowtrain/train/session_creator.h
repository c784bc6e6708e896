// Session creators: how a MonitoredSession gets (and, after a failure, re-gets) its
// underlying session, as TF's ChiefSessionCreator and WorkerSessionCreator.
//
//   ChiefSessionCreatorOptions options;
//   options.checkpoint_dir = "runs/mnist";           // restore from here when it has one
//   auto creator = std::make_shared<ChiefSessionCreator>(options);
//
// The chief initialises the model (or restores the latest checkpoint); a worker waits until
// the chief has made the model ready.
#ifndef FLOWTRAIN_TRAIN_SESSION_CREATOR_H_
#define FLOWTRAIN_TRAIN_SESSION_CREATOR_H_

#include <chrono>
#include <memory>
#include <string>

#include "flowtrain/graph/graph.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/scaffold.h"
#include "flowtrain/train/session_manager.h"

namespace flowtrain::train {

class SessionCreator {
 public:
  virtual ~SessionCreator() = default;
  virtual std::unique_ptr<SessionInterface> CreateSession() = 0;
  // The graph the sessions run.
  virtual Graph& graph() const = 0;
};

struct ChiefSessionCreatorOptions {
  std::shared_ptr<Scaffold> scaffold;  // null: a default Scaffold
  std::string master;                  // "" in-process, "grpc://host:port" remote
  ConfigProto config;
  std::string checkpoint_dir;                 // restore the latest checkpoint found here
  std::string checkpoint_filename_with_path;  // or this exact checkpoint
  Graph* graph = nullptr;                     // null: the default graph at construction
};

class ChiefSessionCreator : public SessionCreator {
 public:
  explicit ChiefSessionCreator(ChiefSessionCreatorOptions options = {});
  // Finalizes the scaffold (and the graph), then initialises or restores the model.
  std::unique_ptr<SessionInterface> CreateSession() override;
  Graph& graph() const override { return *graph_; }
  Scaffold& scaffold() const { return *options_.scaffold; }

 private:
  SessionManager& GetSessionManager();
  ChiefSessionCreatorOptions options_;
  Graph* graph_;
  std::unique_ptr<SessionManager> session_manager_;
};

struct WorkerSessionCreatorOptions {
  std::shared_ptr<Scaffold> scaffold;
  std::string master;
  ConfigProto config;
  std::chrono::seconds max_wait{30 * 60};  // TF's 30 minutes; MonitoredTrainingSession passes 2 h
  Graph* graph = nullptr;
};

class WorkerSessionCreator : public SessionCreator {
 public:
  explicit WorkerSessionCreator(WorkerSessionCreatorOptions options = {});
  // Finalizes the scaffold, then waits (up to max_wait) for the chief to make the model ready.
  std::unique_ptr<SessionInterface> CreateSession() override;
  Graph& graph() const override { return *graph_; }

 private:
  SessionManager& GetSessionManager();
  WorkerSessionCreatorOptions options_;
  Graph* graph_;
  std::unique_ptr<SessionManager> session_manager_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_SESSION_CREATOR_H_
