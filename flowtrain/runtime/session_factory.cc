#include "flowtrain/runtime/session_factory.h"

#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"

namespace flowtrain {
namespace {

struct Factories {
  absl::Mutex mu;
  std::map<std::string, SessionFactory> by_prefix ABSL_GUARDED_BY(mu);
};

Factories& GetFactories() {
  static Factories* factories = new Factories();
  return *factories;
}

ABSL_CONST_INIT absl::Mutex inproc_states_mu(absl::kConstInit);

// State shared by the sessions of each "inproc://NAME" target; lives for the process.
std::map<std::string, std::shared_ptr<ResourceMgr>>& InprocStates()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(inproc_states_mu) {
  static auto* states = new std::map<std::string, std::shared_ptr<ResourceMgr>>();
  return *states;
}

std::shared_ptr<ResourceMgr> InprocState(const std::string& target) {
  absl::MutexLock lock(&inproc_states_mu);
  auto& state = InprocStates()[target];
  if (state == nullptr) state = std::make_shared<ResourceMgr>();
  return state;
}

}  // namespace

void RegisterSessionFactory(std::string prefix, SessionFactory factory) {
  Factories& f = GetFactories();
  absl::MutexLock lock(&f.mu);
  f.by_prefix[std::move(prefix)] = std::move(factory);
}

std::unique_ptr<SessionInterface> NewSession(Graph& graph, const SessionOptions& options) {
  if (options.target.empty()) return std::make_unique<Session>(graph, options);
  if (options.target.rfind("inproc://", 0) == 0) {
    SessionOptions local = options;
    local.target.clear();
    return std::make_unique<Session>(graph, local, InprocState(options.target));
  }
  SessionFactory factory;
  {
    Factories& f = GetFactories();
    absl::MutexLock lock(&f.mu);
    size_t best = 0;
    for (const auto& [prefix, candidate] : f.by_prefix) {
      if (options.target.rfind(prefix, 0) == 0 && prefix.size() > best) {
        best = prefix.size();
        factory = candidate;
      }
    }
  }
  if (!factory) {
    InvalidArgument("No session factory serves target '", options.target,
                    "' (is the distributed runtime linked in?)");
  }
  return factory(graph, options);
}

}  // namespace flowtrain
