#include "flowtrain/framework/work_sharder.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace flowtrain::sharder_internal {
namespace {

// How long a caller whose shards are all claimed spins for the helpers' last ones before it
// sleeps: about the time a futex wake-up costs.
constexpr std::chrono::microseconds kSpinBeforeSleep(20);

// Shared by the caller and its helpers; a helper the pool starts after the call returned
// still holds it, finds no shard left and touches nothing else.
struct ClaimState {
  ClaimState(int num_shards, ShardFn fn) : num_shards(num_shards), fn(fn) {}
  const int num_shards;
  const ShardFn fn;  // called only for a claimed shard, so never after the call returned
  std::atomic<int> next{0};
  std::atomic<int> done{0};
  absl::Mutex error_mu;
  std::exception_ptr error;  // the first shard's exception, rethrown by the caller

  void Work() noexcept {
    for (int s = next.fetch_add(1, std::memory_order_relaxed); s < num_shards;
         s = next.fetch_add(1, std::memory_order_relaxed)) {
      try {
        fn(s);
      } catch (...) {
        absl::MutexLock lock(&error_mu);
        if (error == nullptr) error = std::current_exception();
      }
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == num_shards) done.notify_all();
    }
  }
};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

void RunClaimingShards(ThreadPool* pool, int num_shards, ShardFn fn) {
  auto state = std::make_shared<ClaimState>(num_shards, fn);
  const int helpers = std::min(num_shards - 1, pool->NumThreads());
  for (int h = 0; h < helpers; ++h) pool->Schedule([state] { state->Work(); });
  state->Work();
  // Every shard is claimed; wait for those still running on helpers.
  int done = state->done.load(std::memory_order_acquire);
  std::chrono::steady_clock::time_point spin_until;
  for (int i = 0; done != num_shards; ++i) {
    if (i == 0) spin_until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    if (i % 64 != 63) {
      CpuRelax();
    } else if (std::chrono::steady_clock::now() >= spin_until) {
      state->done.wait(done, std::memory_order_acquire);
    }
    done = state->done.load(std::memory_order_acquire);
  }
  if (state->error != nullptr) std::rethrow_exception(state->error);
}

}  // namespace flowtrain::sharder_internal
