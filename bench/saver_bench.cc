// Saver::Save / Saver::Restore of a 100M-parameter float32 model (40 variables of 2.5M floats,
// 400 MB) in a graph and session, against, in the same run: a plain sequential write (+ fsync)
// and read of 400 MB, and torch.save / torch.load of the same tensors (Debian's python3-torch,
// when /usr/bin/python3 or python3 imports torch; this program installs nothing).
//
//   saver_bench [dir]        (default: a fresh directory under $TMPDIR or /tmp)
//
// Reads start from a cold page cache (POSIX_FADV_DONTNEED) for every contender. Each
// measurement runs five times, contenders taking turns, and the best run is printed (the
// machine is shared; interference only slows runs down). Save includes everything Saver::Save
// does: the bundle (fsync'ed, renamed), the `checkpoint` state file and the .meta file.
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
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/saver.h"

namespace {

namespace ft = flowtrain;
using Clock = std::chrono::steady_clock;

constexpr int kVariables = 40;
constexpr int32_t kFloatsPerVariable = 2'500'000;  // 40 x 2.5M = 100M parameters
constexpr double kTotalBytes = 4.0 * kVariables * kFloatsPerVariable;
constexpr size_t kPlainChunk = 4 << 20;
constexpr int kRepeats = 5;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
double MBps(double seconds) { return kTotalBytes / 1e6 / seconds; }
double Best(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

long StatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + key.size(), nullptr, 10);
  }
  return -1;
}

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

void EvictFromCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

double PlainWrite(const std::string& path, const std::vector<ft::Tensor>& model) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Check(fd >= 0, "open plain");
  for (const ft::Tensor& t : model) {
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

double PlainRead(const std::string& path, std::vector<ft::Tensor>& model) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY);
  Check(fd >= 0, "open plain for read");
  for (ft::Tensor& t : model) {
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

// torch.save + fsync and (cold-cache) torch.load of the same 40 tensors, in a python3 process
// that prints "<save seconds> <load seconds>" per run. Empty if torch is not importable.
std::vector<std::pair<double, double>> TorchRuns(const std::string& dir, int runs) {
  // Debian's interpreter first: python3-torch installs there, whatever python3 is on PATH.
  std::string python;
  for (const char* candidate : {"/usr/bin/python3", "python3"}) {
    if (std::system((std::string(candidate) + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) return {};
  const std::string script = dir + "/torch_bench.py";
  {
    std::ofstream py(script);
    py << "import os, sys, time, torch\n"
          "path = sys.argv[1]\n"
          "torch.set_num_threads(1)\n"
          "model = {'layer_%02d/kernel' % i: torch.arange(" << kFloatsPerVariable
       << ", dtype=torch.float32) * 1e-3 + i for i in range(" << kVariables << ")}\n"
          "for r in range(" << runs << "):\n"
          "    if os.path.exists(path): os.remove(path)\n"
          "    os.sync()\n"
          "    t = time.perf_counter()\n"
          "    with open(path, 'wb') as f:\n"
          "        torch.save(model, f)\n"
          "        f.flush(); os.fsync(f.fileno())\n"
          "    s = time.perf_counter() - t\n"
          "    fd = os.open(path, os.O_RDONLY); os.fdatasync(fd)\n"
          "    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)\n"
          "    t = time.perf_counter()\n"
          "    loaded = torch.load(path)\n"
          "    l = time.perf_counter() - t\n"
          "    assert torch.equal(loaded['layer_07/kernel'], model['layer_07/kernel'])\n"
          "    print(s, l, flush=True)\n"
          "os.remove(path)\n";
  }
  std::vector<std::pair<double, double>> out;
  FILE* pipe = popen((python + " " + script + " " + dir + "/torch_model.pt").c_str(), "r");
  if (pipe == nullptr) return {};
  double s, l;
  while (std::fscanf(pipe, "%lf %lf", &s, &l) == 2) out.emplace_back(s, l);
  if (pclose(pipe) != 0) return {};
  return out;
}

void RemoveCheckpointFiles(const std::string& dir) {
  for (const std::string& name : ft::ListDirectory(dir)) {
    if (name.rfind("model.ckpt", 0) == 0 || name == "checkpoint") ft::DeleteFileIfExists(dir + "/" + name);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  if (argc > 1) {
    dir = argv[1];
    ft::CreateDirectories(dir);
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/saver_bench_XXXXXX";
    Check(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    dir = pattern;
  }
  const std::string plain_path = dir + "/plain.bin";

  // The model: 40 variables initialized by Fill (not by Consts, which would put 400 MB into
  // the GraphDef and the .meta file).
  ft::Graph g;
  std::vector<ft::Variable> vars;
  {
    auto as_default = g.AsDefault();
    for (int i = 0; i < kVariables; ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "layer_%02d/kernel", i);
      vars.emplace_back(
          [i] {
            return ft::ops::Fill(ft::ops::Const<int32_t>({kFloatsPerVariable}),
                                 ft::ops::Const(0.001f * static_cast<float>(i + 1)));
          },
          ft::VariableOptions{.name = name});
    }
  }
  ft::train::Saver saver({.max_to_keep = 0, .graph = &g});
  ft::Session sess(g);
  sess.Run({}, {}, {ft::ops::GlobalVariablesInitializer(&g)});
  // The plain contender writes the same bytes from buffers of its own.
  std::vector<ft::Tensor> plain_model;
  for (const ft::Variable& v : vars) plain_model.push_back(sess.Run({}, {v.value()}, {})[0].DeepCopy());

  std::vector<double> disk_write, save, disk_read, restore;
  long save_peak_extra_kb = 0;
  for (int r = 0; r < kRepeats; ++r) {
    ft::DeleteFileIfExists(plain_path);
    RemoveCheckpointFiles(dir);
    ::sync();
    const bool plain_first = r % 2 == 0;
    if (plain_first) disk_write.push_back(PlainWrite(plain_path, plain_model));
    const long rss_before = StatusKb("VmRSS");
    ResetPeakRss();
    auto start = Clock::now();
    const std::string path = saver.Save(sess, dir + "/model.ckpt", r + 1);
    save.push_back(Seconds(start));
    save_peak_extra_kb = std::max(save_peak_extra_kb, StatusKb("VmHWM") - rss_before);
    if (!plain_first) disk_write.push_back(PlainWrite(plain_path, plain_model));

    EvictFromCache(plain_path);
    EvictFromCache(ft::io::DataFilename(path, 0, 1));
    EvictFromCache(ft::io::MetaFilename(path));
    if (plain_first) disk_read.push_back(PlainRead(plain_path, plain_model));
    start = Clock::now();
    saver.Restore(sess, path);
    restore.push_back(Seconds(start));
    if (!plain_first) disk_read.push_back(PlainRead(plain_path, plain_model));
  }
  for (int r = 0; r < kRepeats; ++r) {
    std::fprintf(stderr, "run %d: disk write %.3fs, save %.3fs, disk read %.3fs, restore %.3fs\n",
                 r, disk_write[r], save[r], disk_read[r], restore[r]);
  }
  // The restored values are the saved ones.
  const float v7 = sess.Run({}, {vars[7].value()}, {})[0].flat<float>()[12345];
  if (v7 != 0.001f * 8.0f) {
    std::fprintf(stderr, "restored value %g, expected 0.008\n", v7);
    return 1;
  }
  ft::DeleteFileIfExists(plain_path);
  RemoveCheckpointFiles(dir);

  const double save_mbps = MBps(Best(save));
  const double restore_mbps = MBps(Best(restore));
  const double write_mbps = MBps(Best(disk_write));
  const double read_mbps = MBps(Best(disk_read));
  std::printf("RESULT checkpoint_400MB flowtrain_saver save_MBps %.1f\n", save_mbps);
  std::printf("RESULT checkpoint_400MB flowtrain_saver restore_MBps %.1f\n", restore_mbps);
  std::printf("RESULT checkpoint_400MB disk write_MBps %.1f\n", write_mbps);
  std::printf("RESULT checkpoint_400MB disk read_MBps %.1f\n", read_mbps);
  std::printf("RESULT checkpoint_400MB flowtrain_saver save_peak_extra_MB %.1f\n",
              save_peak_extra_kb / 1024.0);
  std::printf("RESULT checkpoint_400MB flowtrain_saver save_vs_disk %.3f\n", save_mbps / write_mbps);
  std::printf("RESULT checkpoint_400MB flowtrain_saver restore_vs_disk %.3f\n", restore_mbps / read_mbps);

  const auto torch = TorchRuns(dir, 3);
  if (torch.empty()) {
    std::printf("RESULT checkpoint_400MB pytorch save_MBps unavailable\n");
    std::printf("RESULT checkpoint_400MB pytorch load_MBps unavailable\n");
  } else {
    double best_save = 1e9, best_load = 1e9;
    for (const auto& [s, l] : torch) {
      std::fprintf(stderr, "torch: save %.3fs, load %.3fs\n", s, l);
      best_save = std::min(best_save, s);
      best_load = std::min(best_load, l);
    }
    std::printf("RESULT checkpoint_400MB pytorch save_MBps %.1f\n", MBps(best_save));
    std::printf("RESULT checkpoint_400MB pytorch load_MBps %.1f\n", MBps(best_load));
    std::printf("RESULT checkpoint_400MB flowtrain_saver save_vs_pytorch %.3f\n", save_mbps / MBps(best_save));
    std::printf("RESULT checkpoint_400MB flowtrain_saver restore_vs_pytorch %.3f\n",
                restore_mbps / MBps(best_load));
  }
  std::error_code ec;
  if (argc <= 1) std::filesystem::remove_all(dir, ec);
  return 0;
}
