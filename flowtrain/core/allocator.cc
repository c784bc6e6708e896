#include "flowtrain/core/allocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "flowtrain/core/error.h"

namespace flowtrain {
namespace {

// Blocks up to this size are cached; larger ones go straight to the system (a model's worth
// of 100 MB tensors is not worth pinning).
constexpr size_t kMaxCachedBlock = size_t{256} << 20;
// Free blocks beyond this many bytes are returned to the system.
constexpr size_t kMaxCachedBytes = size_t{2} << 30;
constexpr int kClassesPerDoubling = 4;
constexpr int kNumClasses = 64 * kClassesPerDoubling;

// Size class of `bytes`: classes are 64 * (1 + k/4) * 2^e, e >= 0.
constexpr int SizeClassSlow(size_t bytes, size_t* class_bytes) {
  if (bytes <= kTensorAlignment) {
    *class_bytes = kTensorAlignment;
    return 0;
  }
  const size_t units = (bytes + kTensorAlignment - 1) / kTensorAlignment;  // >= 2
  const int exponent = std::bit_width(units) - 1;                          // 2^e <= units
  const size_t base = size_t{1} << exponent;
  // Round up to the next quarter step within [2^e, 2^(e+1)].
  const size_t step = exponent >= 2 ? base / kClassesPerDoubling : 1;
  size_t rounded = (units + step - 1) / step * step;
  int sub = static_cast<int>((rounded - base) / (step == 0 ? 1 : step));
  int cls = exponent * kClassesPerDoubling + sub;
  *class_bytes = rounded * kTensorAlignment;
  return cls;
}

// The classes of blocks up to 512 bytes, by 64-byte units (a scalar tensor's block is 2):
// every scalar node allocates and frees one, so the arithmetic is looked up.
struct SmallClass {
  int cls;
  size_t class_bytes;
};
// constexpr: tensors made by static initializers elsewhere may come before any dynamic one.
constexpr std::array<SmallClass, 9> kSmallClasses = [] {
  std::array<SmallClass, 9> classes{};
  for (size_t units = 0; units < classes.size(); ++units) {
    classes[units].cls = SizeClassSlow(units * kTensorAlignment, &classes[units].class_bytes);
  }
  return classes;
}();

int SizeClass(size_t bytes, size_t* class_bytes) {
  const size_t units = (bytes + kTensorAlignment - 1) / kTensorAlignment;
  if (units < kSmallClasses.size()) [[likely]] {
    *class_bytes = kSmallClasses[units].class_bytes;
    return kSmallClasses[units].cls;
  }
  return SizeClassSlow(bytes, class_bytes);
}

// Blocks from this size on start on a huge-page boundary and ask for transparent huge pages
// (MADV_HUGEPAGE; the system default here is "madvise"). A kernel walking a big matrix down
// its columns (a GEMM packing a [2048, 2048] weight: every row 8 KB apart) touches a new 4 KB
// page per element read; with 2 MB pages the TLB covers the whole matrix (an MLP training
// step took ~3.5% less CPU time).
constexpr size_t kHugePage = size_t{2} << 20;

void* AllocateFromSystem(size_t bytes) {
  if (bytes < kHugePage) return std::aligned_alloc(kTensorAlignment, bytes);
  void* p = nullptr;
  if (posix_memalign(&p, kHugePage, bytes) != 0) return nullptr;
  madvise(p, bytes, MADV_HUGEPAGE);  // only advice: without huge pages the block still works
  return p;
}

// Small blocks (a scalar tensor's is 128 bytes) are cached per thread as well: a tight loop
// allocates and frees one every node, and the free list's mutex and the shared statistics'
// atomic updates were a third of a scalar node's cost. Each thread keeps up to
// kThreadBlocksPerClass blocks per small class; its statistics are counters only it writes
// (relaxed loads and stores, no read-modify-write), summed by Stats().
constexpr size_t kMaxThreadCachedBlock = 512;
constexpr int kNumThreadClasses = 13;  // SizeClass(512) + 1
constexpr int kThreadBlocksPerClass = 32;

// Adds `delta` to a counter that only the calling thread writes.
void Bump(std::atomic<int64_t>& counter, int64_t delta) {
  counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

// A cached block is poisoned for AddressSanitizer while it waits in a cache, so that a use
// after its tensor freed it is reported (use-after-poison) as a use after free would be
// without the caches; no-ops in other builds.
void PoisonCached([[maybe_unused]] void* p, [[maybe_unused]] size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_POISON_MEMORY_REGION(p, bytes);
#endif
}
void* UnpoisonCached(void* p, [[maybe_unused]] size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#endif
  return p;
}

class CachingAllocator;
CachingAllocator* GlobalCachingAllocator();

class CachingAllocator final : public Allocator {
 public:
  void* Allocate(size_t bytes) override {
    size_t class_bytes = 0;
    const int cls = bytes <= kMaxCachedBlock ? SizeClass(bytes, &class_bytes) : -1;
    if (class_bytes <= kMaxThreadCachedBlock && cls >= 0) {
      if (ThreadCache* cache = LocalCache(); cache != nullptr) {
        ThreadCache::Blocks& blocks = cache->classes[cls];
        if (blocks.count > 0) {
          Bump(cache->cache_hits, 1);
          Bump(cache->bytes_cached, -static_cast<int64_t>(class_bytes));
          Bump(cache->bytes_in_use, static_cast<int64_t>(class_bytes));
          return UnpoisonCached(blocks.blocks[--blocks.count], class_bytes);
        }
      }
    }
    if (cls >= 0 && cls < kNumClasses) {
      FreeList& list = lists_[cls];
      absl::MutexLock lock(&list.mu);
      if (!list.blocks.empty()) {
        void* p = list.blocks.back();
        list.blocks.pop_back();
        cache_hits_.fetch_add(1, std::memory_order_relaxed);
        bytes_cached_.fetch_sub(class_bytes, std::memory_order_relaxed);
        bytes_in_use_.fetch_add(class_bytes, std::memory_order_relaxed);
        return UnpoisonCached(p, class_bytes);
      }
    } else {
      class_bytes = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    }
    if (class_bytes == 0) class_bytes = kTensorAlignment;
    void* p = AllocateFromSystem(class_bytes);
    if (p == nullptr) ResourceExhausted("OOM when allocating ", bytes, " bytes");
    system_allocations_.fetch_add(1, std::memory_order_relaxed);
    bytes_in_use_.fetch_add(class_bytes, std::memory_order_relaxed);
    return p;
  }

  void Deallocate(void* ptr, size_t bytes) override {
    if (ptr == nullptr) return;
    size_t class_bytes = 0;
    const int cls = bytes <= kMaxCachedBlock ? SizeClass(bytes, &class_bytes) : -1;
    if (class_bytes <= kMaxThreadCachedBlock && cls >= 0) {
      if (ThreadCache* cache = LocalCache(); cache != nullptr) {
        ThreadCache::Blocks& blocks = cache->classes[cls];
        if (blocks.count < kThreadBlocksPerClass) {
          blocks.class_bytes = class_bytes;
          PoisonCached(ptr, class_bytes);
          blocks.blocks[blocks.count++] = ptr;
          Bump(cache->bytes_cached, static_cast<int64_t>(class_bytes));
          Bump(cache->bytes_in_use, -static_cast<int64_t>(class_bytes));
          return;
        }
      }
    }
    if (cls < 0 || cls >= kNumClasses) {
      class_bytes = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
      bytes_in_use_.fetch_sub(class_bytes, std::memory_order_relaxed);
      std::free(ptr);
      return;
    }
    if (class_bytes == 0) class_bytes = kTensorAlignment;
    bytes_in_use_.fetch_sub(class_bytes, std::memory_order_relaxed);
    PushToList(cls, class_bytes, ptr);
  }

  AllocatorStats Stats() const {
    AllocatorStats stats;
    stats.system_allocations = system_allocations_.load();
    stats.cache_hits = cache_hits_.load();
    stats.bytes_cached = bytes_cached_.load();
    stats.bytes_in_use = bytes_in_use_.load();
    absl::MutexLock lock(&caches_mu_);
    for (const ThreadCache* cache : caches_) {
      stats.cache_hits += cache->cache_hits.load(std::memory_order_relaxed);
      stats.bytes_cached += cache->bytes_cached.load(std::memory_order_relaxed);
      stats.bytes_in_use += cache->bytes_in_use.load(std::memory_order_relaxed);
    }
    return stats;
  }

  // The calling thread's small blocks go too; other threads keep theirs (a few KB each).
  void ReleaseAll() {
    if (ThreadCache* cache = LocalCache(); cache != nullptr) Flush(*cache);
    for (FreeList& list : lists_) {
      absl::MutexLock lock(&list.mu);
      for (void* p : list.blocks) std::free(p);
      list.blocks.clear();
    }
    bytes_cached_.store(0);
  }

 private:
  struct FreeList {
    absl::Mutex mu;
    std::vector<void*> blocks ABSL_GUARDED_BY(mu);
  };

  // One thread's small blocks and its share of the statistics. Only the owning thread
  // touches `classes` and writes the counters; Stats() reads the counters.
  struct ThreadCache {
    struct Blocks {
      size_t class_bytes = 0;  // set by the first block the class takes
      int count = 0;
      std::array<void*, kThreadBlocksPerClass> blocks;
    };
    std::array<Blocks, kNumThreadClasses> classes;
    std::atomic<int64_t> cache_hits{0};
    std::atomic<int64_t> bytes_cached{0};
    std::atomic<int64_t> bytes_in_use{0};
  };

  // Hands the thread's cache back when the thread ends. Blocks freed later in the thread's
  // teardown (a thread_local tensor destroyed after this) take the shared path.
  struct CacheOwner {
    ~CacheOwner() {
      ThreadCache* cache = local_cache_;
      local_cache_ = nullptr;
      local_cache_state_ = kGone;
      if (cache != nullptr) GlobalCachingAllocator()->Retire(cache);
    }
  };

  // The calling thread's cache, made on first use; null once the thread's teardown began.
  ThreadCache* LocalCache() {
    if (local_cache_state_ == kLive) [[likely]]
      return local_cache_;
    if (local_cache_state_ == kGone) return nullptr;
    static thread_local CacheOwner owner;  // its destructor runs at the thread's exit
    local_cache_ = new ThreadCache();
    local_cache_state_ = kLive;
    absl::MutexLock lock(&caches_mu_);
    caches_.push_back(local_cache_);
    return local_cache_;
  }

  // Moves the thread's blocks to the shared lists.
  void Flush(ThreadCache& cache) {
    for (int cls = 0; cls < kNumThreadClasses; ++cls) {
      ThreadCache::Blocks& blocks = cache.classes[cls];
      for (; blocks.count > 0; --blocks.count) {
        Bump(cache.bytes_cached, -static_cast<int64_t>(blocks.class_bytes));
        PushToList(cls, blocks.class_bytes, blocks.blocks[blocks.count - 1]);
      }
    }
  }

  // The thread's end: its blocks and statistics go to the shared ones.
  void Retire(ThreadCache* cache) {
    Flush(*cache);
    absl::MutexLock lock(&caches_mu_);
    cache_hits_.fetch_add(cache->cache_hits.load(std::memory_order_relaxed), std::memory_order_relaxed);
    bytes_in_use_.fetch_add(cache->bytes_in_use.load(std::memory_order_relaxed), std::memory_order_relaxed);
    caches_.erase(std::find(caches_.begin(), caches_.end(), cache));
    delete cache;
  }

  void PushToList(int cls, size_t class_bytes, void* ptr) {
    if (bytes_cached_.load(std::memory_order_relaxed) + class_bytes > kMaxCachedBytes) {
      std::free(ptr);
      return;
    }
    PoisonCached(ptr, class_bytes);
    FreeList& list = lists_[cls];
    absl::MutexLock lock(&list.mu);
    list.blocks.push_back(ptr);
    bytes_cached_.fetch_add(class_bytes, std::memory_order_relaxed);
  }

  enum CacheState : uint8_t { kNone, kLive, kGone };
  static thread_local ThreadCache* local_cache_;
  static thread_local CacheState local_cache_state_;

  std::array<FreeList, kNumClasses> lists_;
  std::atomic<int64_t> system_allocations_{0};
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<int64_t> bytes_cached_{0};
  std::atomic<int64_t> bytes_in_use_{0};
  mutable absl::Mutex caches_mu_;
  std::vector<ThreadCache*> caches_ ABSL_GUARDED_BY(caches_mu_);  // of the live threads
};

thread_local CachingAllocator::ThreadCache* CachingAllocator::local_cache_ = nullptr;
thread_local CachingAllocator::CacheState CachingAllocator::local_cache_state_ = CachingAllocator::kNone;

CachingAllocator* GlobalCachingAllocator() {
  // Leaked on purpose: tensors held in static objects may be freed after main returns.
  static CachingAllocator* allocator = new CachingAllocator();
  return allocator;
}

}  // namespace

Allocator* DefaultAllocator() { return GlobalCachingAllocator(); }
AllocatorStats DefaultAllocatorStats() { return GlobalCachingAllocator()->Stats(); }
void ReleaseCachedMemory() { GlobalCachingAllocator()->ReleaseAll(); }

void PrefaultForWrite(void* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  // madvise wants a page-aligned start; the partial first page is left to fault normally.
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  if (end <= begin) return;
  // Only advice: an older kernel answers EINVAL and the pages fault as they are written.
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace flowtrain
