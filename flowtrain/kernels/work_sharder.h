// Splitting a kernel's work over the session's intra-op thread pool.
//
//   // Elementwise work: [0, n) in ranges, small n inline on the calling thread.
//   ParallelRange(ctx, n, /*cost_per_unit=*/5, [&](int64_t begin, int64_t end) { ... });
//
//   // Work with per-shard scratch (partial sums, im2col buffers): shard s of NumShards.
//   const int shards = NumShards(ctx, rows, /*min_units_per_shard=*/64);
//   ParallelShards(ctx, shards, [&](int shard) { ... uses scratch[shard] ... });
//
// The functions must not throw: validate inputs before splitting.
#ifndef FLOWTRAIN_KERNELS_WORK_SHARDER_H_
#define FLOWTRAIN_KERNELS_WORK_SHARDER_H_

#include <algorithm>
#include <cstdint>

#include "flowtrain/kernels/op_kernel.h"

namespace flowtrain {

// Calls fn(begin, end) over [0, n); runs inline when the pool has one thread or the work
// (n * cost_per_unit, roughly in cycles) is too small to be worth waking threads.
template <typename Fn>
void ParallelRange(OpKernelContext* ctx, int64_t n, int64_t cost_per_unit, const Fn& fn) {
  if (n <= 0) return;
  ThreadPool* pool = ctx->intra_op_pool();
  if (pool == nullptr || pool->NumThreads() <= 1 || n * cost_per_unit < 100'000) {
    fn(int64_t{0}, n);
    return;
  }
  pool->ParallelFor(n, cost_per_unit, [&fn](int64_t begin, int64_t end) { fn(begin, end); });
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
// when all are done.
template <typename Fn>
void ParallelShards(OpKernelContext* ctx, int num_shards, const Fn& fn) {
  ThreadPool* pool = ctx->intra_op_pool();
  if (num_shards <= 1 || pool == nullptr || pool->NumThreads() <= 1) {
    for (int s = 0; s < num_shards; ++s) fn(s);
    return;
  }
  // A very high cost per unit makes every shard its own task.
  pool->ParallelFor(num_shards, 1'000'000'000, [&fn](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) fn(static_cast<int>(s));
  });
}

// [begin, end) of shard `s` when `units` are split evenly into `num_shards`.
inline std::pair<int64_t, int64_t> ShardRange(int64_t units, int num_shards, int s) {
  return {units * s / num_shards, units * (s + 1) / num_shards};
}

}  // namespace flowtrain

#endif  // FLOWTRAIN_KERNELS_WORK_SHARDER_H_
