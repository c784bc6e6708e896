// CancellationManager: lets blocking kernels (queue dequeues, waits) be woken when a run is
// cancelled — its session closes, or it is abandoned after another node failed.
//
//   auto token = cm->RegisterCallback([&] { queue_cv.SignalAll(); });
//   if (!token) Cancelled("Run was cancelled");     // already cancelled
//   ... wait, checking cm->IsCancelled() ...
//   cm->DeregisterCallback(*token);
//
// A manager can have a parent (the session's): cancelling the parent cancels the child.
#ifndef FLOWTRAIN_FRAMEWORK_CANCELLATION_H_
#define FLOWTRAIN_FRAMEWORK_CANCELLATION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace flowtrain {

class CancellationManager {
 public:
  using Token = int64_t;
  CancellationManager() = default;
  // A child that is cancelled when `parent` is (parent must outlive the child).
  explicit CancellationManager(CancellationManager* parent);
  ~CancellationManager();
  CancellationManager(const CancellationManager&) = delete;
  CancellationManager& operator=(const CancellationManager&) = delete;

  // Runs every registered callback once; later registrations fail.
  void StartCancel() ABSL_LOCKS_EXCLUDED(mu_);
  bool IsCancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // nullopt if already cancelled (the callback is not run then).
  std::optional<Token> RegisterCallback(std::function<void()> callback) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the callback; returns false if cancellation has started. Then, unless called from
  // inside a callback, it first waits until every callback has run, so that what a callback
  // touches may be destroyed as soon as this returns (as TF's DeregisterCallback).
  bool DeregisterCallback(Token token) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  absl::CondVar callbacks_done_;  // signalled when cancelling_ becomes false
  std::atomic<bool> cancelled_{false};
  bool cancelling_ ABSL_GUARDED_BY(mu_) = false;            // StartCancel is running the callbacks
  std::thread::id cancelling_thread_ ABSL_GUARDED_BY(mu_);  // ... on this thread
  Token next_token_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<Token, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
  CancellationManager* parent_ = nullptr;
  std::optional<Token> parent_token_;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_FRAMEWORK_CANCELLATION_H_
