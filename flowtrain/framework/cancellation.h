// CancellationManager: lets blocking kernels (queue dequeues, waits) be woken when a run is
// cancelled — its session closes, or it is abandoned after another node failed.
//
//   auto token = cm->RegisterCallback([&] { queue_cv.notify_all(); });
//   if (!token) Cancelled("Run was cancelled");     // already cancelled
//   ... wait, checking cm->IsCancelled() ...
//   cm->DeregisterCallback(*token);
//
// A manager can have a parent (the session's): cancelling the parent cancels the child.
#ifndef FLOWTRAIN_FRAMEWORK_CANCELLATION_H_
#define FLOWTRAIN_FRAMEWORK_CANCELLATION_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

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
  void StartCancel();
  bool IsCancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // nullopt if already cancelled (the callback is not run then).
  std::optional<Token> RegisterCallback(std::function<void()> callback);
  // Removes the callback; returns false if cancellation has started. Then, unless called from
  // inside a callback, it first waits until every callback has run, so that what a callback
  // touches may be destroyed as soon as this returns (as TF's DeregisterCallback).
  bool DeregisterCallback(Token token);

 private:
  mutable std::mutex mu_;
  std::condition_variable callbacks_done_;
  std::atomic<bool> cancelled_{false};
  bool cancelling_ = false;              // StartCancel is running the callbacks
  std::thread::id cancelling_thread_;    // ... on this thread
  Token next_token_ = 0;
  std::map<Token, std::function<void()>> callbacks_;
  CancellationManager* parent_ = nullptr;
  std::optional<Token> parent_token_;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_FRAMEWORK_CANCELLATION_H_
