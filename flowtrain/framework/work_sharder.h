// Splitting a kernel's work over the session's intra-op thread pool.
//
//   // Elementwise work: [0, n) in ranges, small n inline on the calling thread.
//   ParallelRange(ctx, n, /*cost_per_unit=*/5, [&](int64_t begin, int64_t end) { ... });
//
//   // Work with per-shard scratch (partial sums, im2col buffers): shard s of NumShards.
//   const int shards = NumShards(ctx, rows, /*min_units_per_shard=*/64);
//   ParallelShards(ctx, shards, [&](int shard) { ... uses scratch[shard] ... });
//
// An exception thrown by a shard is rethrown on the calling thread once every shard is done
// (validating inputs before splitting still gives the clearer error).
#ifndef FLOWTRAIN_FRAMEWORK_WORK_SHARDER_H_
#define FLOWTRAIN_FRAMEWORK_WORK_SHARDER_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {

// Work below about this many cycles per shard is not worth handing to another thread.
inline constexpr int64_t kMinCyclesPerShard = 50'000;

namespace sharder_internal {
// A non-owning reference to a callable taking a shard index (no allocation, unlike
// std::function).
struct ShardFn {
  template <typename Fn>
  explicit ShardFn(const Fn& fn)
      : object(&fn), call([](const void* o, int s) { (*static_cast<const Fn*>(o))(s); }) {}
  void operator()(int s) const { call(object, s); }
  const void* object;
  void (*call)(const void*, int);
};
// Runs fn(0..num_shards-1) on the calling thread and up to num_shards - 1 pool helpers that
// claim shards from a shared counter; returns when every shard has finished, rethrowing the
// first exception a shard threw.
void RunClaimingShards(ThreadPool* pool, int num_shards, ShardFn fn);
}  // namespace sharder_internal

// Calls fn(begin, end) over [0, n) in one contiguous range per pool thread; runs inline when
// the pool has one thread or the work (n * cost_per_unit, roughly in cycles) is too small to
// be worth waking threads.
template <typename Fn>
void ParallelRange(OpKernelContext* ctx, int64_t n, int64_t cost_per_unit, const Fn& fn) {
  if (n <= 0) return;
  ThreadPool* pool = ctx->intra_op_pool();
  const int threads = pool == nullptr ? 1 : pool->NumThreads();
  const int64_t shards = std::min<int64_t>({threads, n, n * cost_per_unit / kMinCyclesPerShard});
  if (shards <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  sharder_internal::RunClaimingShards(
      pool, static_cast<int>(shards),
      sharder_internal::ShardFn([&fn, n, shards](int s) { fn(n * s / shards, n * (s + 1) / shards); }));
}

// How many shards to split `units` of work into: one per pool thread, but no shard smaller
// than `min_units_per_shard`; at least 1.
inline int NumShards(OpKernelContext* ctx, int64_t units, int64_t min_units_per_shard) {
  ThreadPool* pool = ctx->intra_op_pool();
  const int64_t threads = pool == nullptr ? 1 : std::max(pool->NumThreads(), 1);
  const int64_t by_size = std::max<int64_t>(units / std::max<int64_t>(min_units_per_shard, 1), 1);
  return static_cast<int>(std::min(threads, by_size));
}

// Calls fn(shard) for every shard in [0, num_shards), concurrently on the pool, and returns
// when all are done. The calling thread works too, and shards go to whichever thread claims
// them first: a helper the pool starts late (its threads busy with another kernel, or the
// machine loaded) finds the work done and leaves, instead of the caller waiting for it.
template <typename Fn>
void ParallelShards(OpKernelContext* ctx, int num_shards, const Fn& fn) {
  ThreadPool* pool = ctx->intra_op_pool();
  if (num_shards <= 1 || pool == nullptr || pool->NumThreads() <= 1) {
    for (int s = 0; s < num_shards; ++s) fn(s);
    return;
  }
  sharder_internal::RunClaimingShards(pool, num_shards, sharder_internal::ShardFn(fn));
}

// [begin, end) of shard `s` when `units` are split evenly into `num_shards`.
inline std::pair<int64_t, int64_t> ShardRange(int64_t units, int num_shards, int s) {
  return {units * s / num_shards, units * (s + 1) / num_shards};
}

// Runs for ClaimRuns when nothing else decides: one on a single shard, else four per shard
// (no more than there are units).
inline int64_t RunsFor(int shards, int64_t units) {
  return shards <= 1 ? 1 : std::min<int64_t>(units, 4 * int64_t{shards});
}

// Calls fn(shard, first, last, run) for `runs` runs of consecutive units covering [0, units),
// claimed one at a time by up to `shards` threads of the pool, the caller included. A thread
// the machine delays (other processes share the cores) leaves its remaining runs to the
// others instead of holding up the kernel, as a fixed split would. fn may keep per-shard
// state (scratch) indexed by `shard`, or per-run state (partial sums) by `run`.
template <typename Fn>
void ClaimRuns(ThreadPool* pool, int shards, int64_t units, int64_t runs, const Fn& fn) {
  std::atomic<int64_t> next{0};
  auto work = [&](int s) {
    for (int64_t run = next.fetch_add(1, std::memory_order_relaxed); run < runs;
         run = next.fetch_add(1, std::memory_order_relaxed)) {
      const auto [first, last] = ShardRange(units, static_cast<int>(runs), static_cast<int>(run));
      fn(s, first, last, run);
    }
  };
  if (shards <= 1 || pool == nullptr || pool->NumThreads() <= 1) {
    work(0);
    return;
  }
  sharder_internal::RunClaimingShards(pool, shards, sharder_internal::ShardFn(work));
}

}  // namespace flowtrain

#endif  // FLOWTRAIN_FRAMEWORK_WORK_SHARDER_H_
