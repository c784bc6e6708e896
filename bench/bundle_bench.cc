// Checkpoint save/restore throughput against the disk itself: writes and reads a 100M-parameter
// float32 model (40 tensors of 2.5M floats, 400 MB) through BundleWriter/BundleReader, and in the
// same run writes (+ fsync) and reads 400 MB with plain system calls to the same directory.
//
//   bundle_bench [dir]        (default: a fresh directory under $TMPDIR or /tmp)
//
// Reads start from a cold page cache for both (drop_caches as root, else POSIX_FADV_DONTNEED on
// the files), so both measure the disk rather than memory copies; writes are fsync'ed. Restore reads into the
// model's existing tensors, as restoring variables does, and the plain read targets the same buffers. Each
// measurement runs seven times, the two contenders taking turns, and the best run of each is printed (every
// run goes to stderr): the machine is shared, and other processes' disk and CPU use only ever slows a run
// down, so the best run is the reproducible one.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "flowtrain/core/file_util.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "checkpoint_bench_util.h"

namespace {

using bench::Clock;
using bench::Seconds;
using flowtrain::Tensor;

constexpr int kTensors = 40;
constexpr int64_t kFloatsPerTensor = 2'500'000;  // 40 x 2.5M = 100M parameters
constexpr double kTotalBytes = 4.0 * kTensors * kFloatsPerTensor;
constexpr int kRepeats = 7;

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

double Best(const std::vector<double>& seconds) { return *std::min_element(seconds.begin(), seconds.end()); }

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = bench::BenchDirectory(argc, argv, "bundle_bench");
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
  const char* cache = "";
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
    if (plain_first) disk_write.push_back(bench::PlainWrite(plain_path, model));
    {
      bench::PeakMemory peak;
      save.push_back(Save(prefix, model));
      save_peak_extra_kb = std::max(save_peak_extra_kb, peak.ExtraKb());
    }
    if (!plain_first) disk_write.push_back(bench::PlainWrite(plain_path, model));

    cache = bench::MakeCold({plain_path, flowtrain::io::DataFilename(prefix, 0, 1)});
    if (plain_first) disk_read.push_back(bench::PlainRead(plain_path, model));
    restore.push_back(Restore(prefix, model));
    if (!plain_first) disk_read.push_back(bench::PlainRead(plain_path, model));
  }
  for (int r = 0; r < kRepeats; ++r) {
    std::fprintf(stderr, "run %d: disk write %.3fs, save %.3fs, disk read %.3fs, restore %.3fs\n", r,
                 disk_write[r], save[r], disk_read[r], restore[r]);
  }
  // The restored values must be the saved ones.
  flowtrain::io::BundleReader(prefix).VerifyAll();

  bench::ReportAgainstDisk({.system = "flowtrain",
                            .bytes = kTotalBytes,
                            .save_s = Best(save),
                            .restore_s = Best(restore),
                            .write_s = Best(disk_write),
                            .read_s = Best(disk_read),
                            .save_peak_extra_kb = save_peak_extra_kb,
                            .cache = cache});

  std::error_code ec;
  if (argc <= 1) std::filesystem::remove_all(dir, ec);
  return 0;
}
