#include "flowtrain/summary/file_writer_cache.h"

#include <cstdlib>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace flowtrain::summary {
namespace {

struct Cache {
  absl::Mutex mu;
  std::map<std::string, std::shared_ptr<FileWriter>> writers ABSL_GUARDED_BY(mu);
  bool exit_hook_registered ABSL_GUARDED_BY(mu) = false;
};

// Never destroyed: writers may still be used from other threads while the process exits.
Cache& GlobalCache() {
  static auto* cache = new Cache();
  return *cache;
}

}  // namespace

std::shared_ptr<FileWriter> FileWriterCache::Get(const std::string& logdir) {
  Cache& cache = GlobalCache();
  absl::MutexLock lock(&cache.mu);
  auto it = cache.writers.find(logdir);
  if (it != cache.writers.end()) return it->second;
  if (!cache.exit_hook_registered) {
    // Events still buffered when the program ends reach the disk.
    cache.exit_hook_registered = true;
    std::atexit([] { FileWriterCache::Clear(); });
  }
  auto writer = std::make_shared<FileWriter>(logdir);
  cache.writers.emplace(logdir, writer);
  return writer;
}

void FileWriterCache::Clear() {
  std::map<std::string, std::shared_ptr<FileWriter>> writers;
  {
    Cache& cache = GlobalCache();
    absl::MutexLock lock(&cache.mu);
    writers.swap(cache.writers);
  }
  // Closing waits for the disk; do it without holding the cache's lock.
  for (auto& [logdir, writer] : writers) writer->Close();
}

}  // namespace flowtrain::summary
