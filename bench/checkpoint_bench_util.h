// What the checkpoint benchmarks (bundle_bench, saver_bench) share: the disk they are compared
// against — a plain sequential write (+ fsync) and read of the same bytes through system
// calls, from a cold page cache — and the measurement of memory used beyond the model.
//
//   std::string dir = bench::BenchDirectory(argc, argv, "saver_bench");
//   double write_s = bench::PlainWrite(dir + "/plain.bin", model);   // fsync'ed
//   bench::MakeCold({dir + "/plain.bin"});                           // drop cached pages
//   double read_s = bench::PlainRead(dir + "/plain.bin", model);
//   bench::PeakMemory peak;                                          // VmHWM reset here
//   ... work ...
//   long extra_kb = peak.ExtraKb();                                  // high-water - start RSS
#ifndef FLOWTRAIN_BENCH_CHECKPOINT_BENCH_UTIL_H_
#define FLOWTRAIN_BENCH_CHECKPOINT_BENCH_UTIL_H_

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "flowtrain/core/file_util.h"
#include "flowtrain/core/tensor.h"

namespace bench {

using Clock = std::chrono::steady_clock;

inline constexpr size_t kPlainChunk = 4 << 20;

inline double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline void Check(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::exit(1);
  }
}

// argv[1] if given (created), else a fresh directory under $TMPDIR or /tmp.
inline std::string BenchDirectory(int argc, char** argv, const char* name) {
  if (argc > 1) {
    flowtrain::CreateDirectories(argv[1]);
    return argv[1];
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name + "_XXXXXX";
  Check(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
  return pattern;
}

// A field of /proc/self/status in kB.
inline long StatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + key.size(), nullptr, 10);
  }
  return -1;
}

// The resident memory a phase adds at its peak: VmHWM is reset to the current RSS (Linux >= 4.0,
// /proc/self/clear_refs "5") when constructed, so ExtraKb() is the phase's own high-water mark
// minus what was resident before it — the model and everything else allocated earlier excluded.
class PeakMemory {
 public:
  PeakMemory() {
    std::ofstream("/proc/self/clear_refs") << "5";
    start_kb_ = StatusKb("VmRSS");
  }
  long ExtraKb() const { return StatusKb("VmHWM") - start_kb_; }

 private:
  long start_kb_;
};

// Pages of the file at `path` now in the page cache (mincore of a read-only mapping).
inline size_t ResidentPages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return 0;
  struct stat st;
  size_t resident = 0;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    const size_t size = static_cast<size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
      std::vector<unsigned char> in_core((size + page - 1) / page);
      if (::mincore(map, size, in_core.data()) == 0) {
        for (unsigned char c : in_core) resident += c & 1;
      }
      ::munmap(map, size);
    }
  }
  ::close(fd);
  return resident;
}

// Makes the next reads of `paths` come from the disk: writes back their dirty pages and drops
// their cached pages (POSIX_FADV_DONTNEED). Only these files' pages: dropping the whole cache
// (drop_caches) would also evict the programs' own code, and a contender whose libraries are
// large (torch's are hundreds of MB) would then pay for reading them back. If pages stay
// (mapped by someone), the whole cache is dropped as root. Returns how, for the output.
inline const char* MakeCold(const std::vector<std::string>& paths) {
  size_t resident = 0;
  for (const std::string& path : paths) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    resident += ResidentPages(path);
  }
  if (resident == 0) return "fadvise_dontneed";
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  drop << "3";
  drop.flush();
  return drop.good() ? "drop_caches" : "fadvise_dontneed_partly";
}

// Writes the tensors' bytes to `path` in 4 MB write(2) calls and fsyncs it: the disk's
// sequential write speed for the same bytes a checkpoint holds.
inline double PlainWrite(const std::string& path, const std::vector<flowtrain::Tensor>& model) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Check(fd >= 0, "open plain");
  for (const flowtrain::Tensor& t : model) {
    const char* p = static_cast<const char*>(t.raw_data());
    for (size_t done = 0; done < t.TotalBytes();) {
      const ssize_t w = ::write(fd, p + done, std::min(kPlainChunk, t.TotalBytes() - done));
      Check(w > 0, "write plain");
      done += static_cast<size_t>(w);
    }
  }
  Check(::fsync(fd) == 0, "fsync plain");
  ::close(fd);
  return Seconds(start);
}

// Reads `path` back into the tensors' existing buffers in 4 MB read(2) calls.
inline double PlainRead(const std::string& path, std::vector<flowtrain::Tensor>& model) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY);
  Check(fd >= 0, "open plain for read");
  for (flowtrain::Tensor& t : model) {
    char* p = static_cast<char*>(t.raw_data());
    for (size_t done = 0; done < t.TotalBytes();) {
      const ssize_t r = ::read(fd, p + done, std::min(kPlainChunk, t.TotalBytes() - done));
      Check(r > 0, "read plain");
      done += static_cast<size_t>(r);
    }
  }
  ::close(fd);
  return Seconds(start);
}

// The figures of one checkpoint system against the disk, in seconds for the same bytes.
struct DiskComparison {
  const char* system;  // "flowtrain", "flowtrain_saver"
  double bytes;
  double save_s, restore_s, write_s, read_s;
  long save_peak_extra_kb;
  const char* cache;  // MakeCold's answer
};

// Prints `RESULT checkpoint_400MB ...` lines: MB/s of each, save/write and restore/read, the
// save's peak extra memory, and the conditions (cold reads how, fsync'ed writes). Returns the
// save and restore MB/s.
inline std::pair<double, double> ReportAgainstDisk(const DiskComparison& c) {
  auto mbps = [&](double seconds) { return c.bytes / 1e6 / seconds; };
  const double save = mbps(c.save_s), restore = mbps(c.restore_s);
  const double write = mbps(c.write_s), read = mbps(c.read_s);
  std::printf("RESULT checkpoint_400MB conditions reads_from cold_cache_%s\n", c.cache);
  std::printf("RESULT checkpoint_400MB conditions writes fsynced\n");
  std::printf("RESULT checkpoint_400MB %s save_MBps %.1f\n", c.system, save);
  std::printf("RESULT checkpoint_400MB %s restore_MBps %.1f\n", c.system, restore);
  std::printf("RESULT checkpoint_400MB disk write_MBps %.1f\n", write);
  std::printf("RESULT checkpoint_400MB disk read_MBps %.1f\n", read);
  std::printf("RESULT checkpoint_400MB %s save_peak_extra_MB %.1f\n", c.system,
              c.save_peak_extra_kb / 1024.0);
  std::printf("RESULT checkpoint_400MB %s save_vs_disk %.3f\n", c.system, save / write);
  std::printf("RESULT checkpoint_400MB %s restore_vs_disk %.3f\n", c.system, restore / read);
  std::fflush(stdout);
  return {save, restore};
}

}  // namespace bench

#endif  // FLOWTRAIN_BENCH_CHECKPOINT_BENCH_UTIL_H_
