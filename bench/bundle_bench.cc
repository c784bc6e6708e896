// Checkpoint save/restore throughput against the disk itself: writes and reads a 100M-parameter
// float32 model (40 tensors of 2.5M floats, 400 MB) through BundleWriter/BundleReader, and in the
// same run writes (+ fsync) and reads 400 MB with plain system calls to the same directory.
//
//   bundle_bench [dir]        (default: a fresh directory under $TMPDIR or /tmp)
//
// Reads start from a cold page cache for both (POSIX_FADV_DONTNEED on the files, which needs no
// privileges), so both measure the disk rather than memory copies. Restore reads into the model's
// existing tensors, as restoring variables does, and the plain read targets the same buffers.
// Each measurement runs seven times, the two contenders taking turns, and the best run of each
// is printed (every run goes to stderr): the machine is shared, and other processes' disk and
// CPU use only ever slows a run down, so the best run is the reproducible one.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "flowtrain/core/file_util.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/io/tensor_bundle_writer.h"

namespace {

using flowtrain::Tensor;
using Clock = std::chrono::steady_clock;

constexpr int kTensors = 40;
constexpr int64_t kFloatsPerTensor = 2'500'000;  // 40 x 2.5M = 100M parameters
constexpr double kTotalBytes = 4.0 * kTensors * kFloatsPerTensor;
constexpr size_t kPlainChunk = 4 << 20;
constexpr int kRepeats = 7;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double MBps(double seconds) { return kTotalBytes / 1e6 / seconds; }

// A field of /proc/self/status in kB.
long StatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + key.size(), nullptr, 10);
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0), so the next peak is this phase's own.
void ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::exit(1);
  }
}

// Drops the file's pages from the page cache so the next read comes from the disk.
void EvictFromCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  Check(fd >= 0, "open for evict");
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

double PlainWrite(const std::string& path, const std::vector<Tensor>& model) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Check(fd >= 0, "open plain");
  for (const Tensor& t : model) {
    const char* p = static_cast<const char*>(t.raw_data());
    for (size_t done = 0; done < t.TotalBytes();) {
      const size_t n = std::min(kPlainChunk, t.TotalBytes() - done);
      const ssize_t w = ::write(fd, p + done, n);
      Check(w > 0, "write plain");
      done += static_cast<size_t>(w);
    }
  }
  Check(::fsync(fd) == 0, "fsync plain");
  ::close(fd);
  return Seconds(start);
}

double PlainRead(const std::string& path, std::vector<Tensor>& model) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY);
  Check(fd >= 0, "open plain for read");
  for (Tensor& t : model) {
    char* p = static_cast<char*>(t.raw_data());
    for (size_t done = 0; done < t.TotalBytes();) {
      const size_t n = std::min(kPlainChunk, t.TotalBytes() - done);
      const ssize_t r = ::read(fd, p + done, n);
      Check(r > 0, "read plain");
      done += static_cast<size_t>(r);
    }
  }
  ::close(fd);
  return Seconds(start);
}

std::string Name(int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "layer_%02d/kernel", i);
  return name;
}

double Save(const std::string& prefix, const std::vector<Tensor>& model) {
  const auto start = Clock::now();
  flowtrain::io::BundleWriter writer(prefix);
  for (int i = 0; i < kTensors; ++i) writer.Add(Name(i), model[i]);
  writer.Finish();
  return Seconds(start);
}

double Restore(const std::string& prefix, std::vector<Tensor>& model) {
  const auto start = Clock::now();
  flowtrain::io::BundleReader reader(prefix);
  for (int i = 0; i < kTensors; ++i) reader.LookupInto(Name(i), &model[i]);
  return Seconds(start);
}

double Best(const std::vector<double>& seconds) {
  return *std::min_element(seconds.begin(), seconds.end());
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  if (argc > 1) {
    dir = argv[1];
    flowtrain::CreateDirectories(dir);
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/bundle_bench_XXXXXX";
    Check(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    dir = pattern;
  }
  const std::string plain_path = dir + "/plain.bin";
  const std::string prefix = dir + "/model.ckpt-1";

  std::vector<Tensor> model;
  for (int i = 0; i < kTensors; ++i) {
    Tensor t(flowtrain::DT_FLOAT, flowtrain::TensorShape({kFloatsPerTensor}));
    auto v = t.flat<float>();
    for (int64_t j = 0; j < kFloatsPerTensor; ++j) v[j] = static_cast<float>((i * 7919 + j) % 1000) * 1e-3f;
    model.push_back(std::move(t));
  }

  std::vector<double> disk_write, save, disk_read, restore;
  long save_peak_extra_kb = 0;
  for (int r = 0; r < kRepeats; ++r) {
    // Each save goes to a new file, as a Saver's does; deleting the previous 400 MB file is
    // not part of either measurement.
    flowtrain::DeleteFileIfExists(plain_path);
    flowtrain::DeleteFileIfExists(flowtrain::io::MetaFilename(prefix));
    flowtrain::DeleteFileIfExists(flowtrain::io::DataFilename(prefix, 0, 1));
    ::sync();
    // On this shared virtual disk the second of two back-to-back transfers is often slower,
    // so the contenders take turns going first.
    const bool plain_first = r % 2 == 0;
    if (plain_first) disk_write.push_back(PlainWrite(plain_path, model));
    const long rss_before = StatusKb("VmRSS");
    ResetPeakRss();
    save.push_back(Save(prefix, model));
    save_peak_extra_kb = std::max(save_peak_extra_kb, StatusKb("VmHWM") - rss_before);
    if (!plain_first) disk_write.push_back(PlainWrite(plain_path, model));

    EvictFromCache(plain_path);
    EvictFromCache(flowtrain::io::DataFilename(prefix, 0, 1));
    if (plain_first) disk_read.push_back(PlainRead(plain_path, model));
    restore.push_back(Restore(prefix, model));
    if (!plain_first) disk_read.push_back(PlainRead(plain_path, model));
  }
  for (int r = 0; r < kRepeats; ++r) {
    std::fprintf(stderr, "run %d: disk write %.3fs, save %.3fs, disk read %.3fs, restore %.3fs\n",
                 r, disk_write[r], save[r], disk_read[r], restore[r]);
  }
  // The restored values must be the saved ones.
  flowtrain::io::BundleReader(prefix).VerifyAll();

  const double save_mbps = MBps(Best(save));
  const double restore_mbps = MBps(Best(restore));
  const double write_mbps = MBps(Best(disk_write));
  const double read_mbps = MBps(Best(disk_read));
  std::printf("RESULT checkpoint_400MB flowtrain save_MBps %.1f\n", save_mbps);
  std::printf("RESULT checkpoint_400MB flowtrain restore_MBps %.1f\n", restore_mbps);
  std::printf("RESULT checkpoint_400MB disk write_MBps %.1f\n", write_mbps);
  std::printf("RESULT checkpoint_400MB disk read_MBps %.1f\n", read_mbps);
  std::printf("RESULT checkpoint_400MB flowtrain save_peak_extra_MB %.1f\n",
              save_peak_extra_kb / 1024.0);
  std::printf("RESULT checkpoint_400MB flowtrain save_vs_disk %.3f\n", save_mbps / write_mbps);
  std::printf("RESULT checkpoint_400MB flowtrain restore_vs_disk %.3f\n", restore_mbps / read_mbps);

  std::error_code ec;
  if (argc <= 1) std::filesystem::remove_all(dir, ec);
  return 0;
}
