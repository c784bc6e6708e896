// Allocator hands out 64-byte-aligned memory for tensor buffers.
//
// On these machines first touching fresh memory costs ~12-15 us per 4 KiB page, so a training
// step that returns its buffers to the OS and maps new ones runs about twice as slow. The
// default allocator therefore caches freed blocks in size classes (four per power of two, so at
// most 25% is wasted) and reuses them step after step: in steady state a step allocates nothing
// from the system. It is process-wide rather than per session so that a tensor fetched from a
// session can outlive it safely.
//
//   void* p = DefaultAllocator()->Allocate(1024);
//   DefaultAllocator()->Deallocate(p, 1024);
#ifndef FLOWTRAIN_CORE_ALLOCATOR_H_
#define FLOWTRAIN_CORE_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>

namespace flowtrain {

inline constexpr size_t kTensorAlignment = 64;

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory aligned to kTensorAlignment; throws ResourceExhausted when out of memory.
  virtual void* Allocate(size_t bytes) = 0;
  // `bytes` must be the size passed to Allocate.
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
};

// Statistics of the caching allocator, for tests and benchmarks.
struct AllocatorStats {
  int64_t system_allocations = 0;  // blocks taken from the system
  int64_t cache_hits = 0;          // allocations served from the cache
  int64_t bytes_cached = 0;        // bytes held in free lists now
  int64_t bytes_in_use = 0;        // bytes handed out and not yet returned
};

// The process-wide caching allocator.
Allocator* DefaultAllocator();
AllocatorStats DefaultAllocatorStats();
// Returns every cached block to the system.
void ReleaseCachedMemory();

// Maps the pages of [p, p + bytes) ahead of their first write (MADV_POPULATE_WRITE, Linux >=
// 5.14; elsewhere it does nothing), without changing their contents, so it may run beside a
// thread that is filling the same memory. Fresh memory costs a page fault per page on first
// write; a reader that takes those faults in its read(2) calls falls behind the disk.
void PrefaultForWrite(void* p, size_t bytes);

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_ALLOCATOR_H_
