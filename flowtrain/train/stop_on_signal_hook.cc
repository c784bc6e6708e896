#include "flowtrain/train/stop_on_signal_hook.h"

#include <atomic>
#include <cstring>

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"

namespace flowtrain::train {
namespace {

// What the handler may touch: lock-free atomics only (async-signal-safe). Per signal number:
// whether a hook owns it, and whether it arrived since that hook was installed.
constexpr int kMaxSignal = 65;
std::atomic<bool> owned[kMaxSignal];
std::atomic<bool> caught[kMaxSignal];
static_assert(std::atomic<bool>::is_always_lock_free);

void OnStopSignal(int signal) {
  caught[signal] = true;
  // SA_RESETHAND has restored the default action: a second delivery ends the process.
}

}  // namespace

StopOnSignalHook::StopOnSignalHook(Options options) : options_(std::move(options)) {
  for (int signal : options_.signals) {
    if (signal <= 0 || signal >= kMaxSignal || signal == SIGKILL || signal == SIGSTOP) {
      InvalidArgument("StopOnSignalHook: signal ", signal, " cannot be caught");
    }
  }
  for (size_t i = 0; i < options_.signals.size(); ++i) {
    const int signal = options_.signals[i];
    if (owned[signal].exchange(true)) {
      for (size_t j = 0; j < i; ++j) {
        sigaction(options_.signals[j], &previous_[j], nullptr);
        owned[options_.signals[j]] = false;
      }
      InvalidArgument("StopOnSignalHook: signal ", signal, " is already handled by another StopOnSignalHook");
    }
    struct sigaction action = {};
    action.sa_handler = OnStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND | SA_RESTART;
    caught[signal] = false;
    previous_.emplace_back();
    sigaction(signal, &action, &previous_.back());
  }
}

StopOnSignalHook::~StopOnSignalHook() {
  for (size_t i = 0; i < options_.signals.size(); ++i) {
    sigaction(options_.signals[i], &previous_[i], nullptr);
    owned[options_.signals[i]] = false;
  }
}

std::optional<int> StopOnSignalHook::signal() const {
  for (int signal : options_.signals) {
    if (caught[signal]) return signal;
  }
  return std::nullopt;
}

void StopOnSignalHook::AfterRun(SessionRunContext& context, const SessionRunValues&) {
  if (const std::optional<int> caught = signal()) {
    FT_LOG(WARNING) << "Received signal " << *caught << " (" << strsignal(*caught)
                    << "): stopping after this step; the session's hooks save on close";
    context.RequestStop();
  }
}

HookSchedule StopOnSignalHook::NextDue() const {
  if (signal()) return HookSchedule::EveryRun();
  return HookSchedule{.time = HookSchedule::Clock::now() + options_.check_interval};
}

}  // namespace flowtrain::train
