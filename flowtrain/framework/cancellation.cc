#include "flowtrain/framework/cancellation.h"

namespace flowtrain {

CancellationManager::CancellationManager(CancellationManager* parent) : parent_(parent) {
  parent_token_ = parent_->RegisterCallback([this] { StartCancel(); });
  if (!parent_token_) cancelled_.store(true);
}

CancellationManager::~CancellationManager() {
  if (parent_ != nullptr && parent_token_) parent_->DeregisterCallback(*parent_token_);
}

void CancellationManager::StartCancel() {
  std::map<Token, std::function<void()>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_.load()) return;
    cancelled_.store(true, std::memory_order_release);
    cancelling_ = true;
    cancelling_thread_ = std::this_thread::get_id();
    callbacks.swap(callbacks_);
  }
  for (auto& [token, callback] : callbacks) callback();
  {
    absl::MutexLock lock(&mu_);
    cancelling_ = false;
  }
  callbacks_done_.SignalAll();
}

std::optional<CancellationManager::Token> CancellationManager::RegisterCallback(
    std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.load()) return std::nullopt;
  const Token token = next_token_++;
  callbacks_.emplace(token, std::move(callback));
  return token;
}

bool CancellationManager::DeregisterCallback(Token token) {
  absl::MutexLock lock(&mu_);
  if (!cancelled_.load()) {
    callbacks_.erase(token);
    return true;
  }
  // The callback may be running on the cancelling thread right now: wait for it, unless this
  // is that thread (a callback deregistering another would wait for itself).
  if (cancelling_ && cancelling_thread_ != std::this_thread::get_id()) {
    while (cancelling_) callbacks_done_.Wait(&mu_);
  }
  return false;
}

}  // namespace flowtrain
