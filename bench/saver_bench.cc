// Saver::Save / Saver::Restore of a 100M-parameter float32 model (40 variables of 2.5M floats,
// 400 MB) in a graph and session, against, in the same run: a plain sequential write (+ fsync)
// and read of 400 MB, and torch.save / torch.load of the same tensors (Debian's python3-torch,
// when /usr/bin/python3 or python3 imports torch; this program installs nothing).
//
//   saver_bench [dir]        (default: a fresh directory under $TMPDIR or /tmp)
//
// Every contender's writes are fsync'ed and its reads start from a cold page cache (the whole
// cache dropped as root, else the files' pages with POSIX_FADV_DONTNEED; the output says
// which). Each measurement runs six times, contenders taking turns (the second of two
// back-to-back transfers is often slower on this virtual disk), and the median is printed;
// "save_peak_extra_MB" is the resident memory Save adds at its peak beyond the model
// (VmHWM reset before the save). Save includes everything Saver::Save does: the bundle
// (fsync'ed, renamed), the `checkpoint` state file and the .meta file; Restore everything
// Saver::Restore does (index checks, reading and verifying every tensor, the assigns).
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
#include "checkpoint_bench_util.h"

namespace {

namespace ft = flowtrain;
using bench::Clock;
using bench::Seconds;

constexpr int kVariables = 40;
constexpr int32_t kFloatsPerVariable = 2'500'000;  // 40 x 2.5M = 100M parameters
constexpr double kTotalBytes = 4.0 * kVariables * kFloatsPerVariable;
constexpr int kRepeats = 6;  // even: each contender goes second equally often

double MBps(double seconds) { return kTotalBytes / 1e6 / seconds; }

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
          "    os.sync()\n"
          "    try:\n"
          "        with open('/proc/sys/vm/drop_caches', 'w') as f: f.write('3')\n"
          "    except OSError: pass\n"
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
  const std::string dir = bench::BenchDirectory(argc, argv, "saver_bench");
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

  // The first restore in a process also takes fresh memory for the restored tensors (page
  // faults, several µs per 4 KiB page here); later ones reuse the buffers the variables give
  // back, as the plain reads reuse theirs. It is measured once, apart, and the timed runs
  // compare steady states.
  double first_restore = 0;
  {
    const std::string path = saver.Save(sess, dir + "/model.ckpt", 0);
    bench::MakeCold({ft::io::DataFilename(path, 0, 1), ft::io::MetaFilename(path)});
    const auto start = Clock::now();
    saver.Restore(sess, path);
    first_restore = Seconds(start);
  }
  std::vector<double> disk_write, save, disk_read, restore;
  long save_peak_extra_kb = 0;
  const char* cache = "";
  for (int r = 0; r < kRepeats; ++r) {
    ft::DeleteFileIfExists(plain_path);
    RemoveCheckpointFiles(dir);
    ::sync();
    // The virtual disk favours whichever transfer goes first: the contenders take turns.
    const bool plain_first = r % 2 == 0;
    if (plain_first) disk_write.push_back(bench::PlainWrite(plain_path, plain_model));
    std::string path;
    {
      bench::PeakMemory peak;
      const auto start = Clock::now();
      path = saver.Save(sess, dir + "/model.ckpt", r + 1);
      save.push_back(Seconds(start));
      save_peak_extra_kb = std::max(save_peak_extra_kb, peak.ExtraKb());
    }
    if (!plain_first) disk_write.push_back(bench::PlainWrite(plain_path, plain_model));

    cache = bench::MakeCold({plain_path, ft::io::DataFilename(path, 0, 1), ft::io::MetaFilename(path)});
    if (plain_first) disk_read.push_back(bench::PlainRead(plain_path, plain_model));
    const auto start = Clock::now();
    saver.Restore(sess, path);
    restore.push_back(Seconds(start));
    if (!plain_first) disk_read.push_back(bench::PlainRead(plain_path, plain_model));
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

  // Medians of the runs: the machine is shared, and one slow or lucky run moves no figure.
  const auto [save_mbps, restore_mbps] = bench::ReportAgainstDisk(
      {.system = "flowtrain_saver", .bytes = kTotalBytes, .save_s = bench::Median(save),
       .restore_s = bench::Median(restore), .write_s = bench::Median(disk_write),
       .read_s = bench::Median(disk_read), .save_peak_extra_kb = save_peak_extra_kb, .cache = cache});
  std::printf("RESULT checkpoint_400MB flowtrain_saver first_restore_in_process_MBps %.1f\n", MBps(first_restore));
  std::fflush(stdout);

  const auto torch = TorchRuns(dir, 3);
  if (torch.empty()) {
    std::printf("RESULT checkpoint_400MB pytorch save_MBps unavailable\n");
    std::printf("RESULT checkpoint_400MB pytorch load_MBps unavailable\n");
  } else {
    std::vector<double> torch_save, torch_load;
    for (const auto& [save_s, load_s] : torch) {
      std::fprintf(stderr, "torch: save %.3fs, load %.3fs\n", save_s, load_s);
      torch_save.push_back(save_s);
      torch_load.push_back(load_s);
    }
    const double torch_save_mbps = MBps(bench::Median(torch_save));
    const double torch_load_mbps = MBps(bench::Median(torch_load));
    std::printf("RESULT checkpoint_400MB pytorch save_MBps %.1f\n", torch_save_mbps);
    std::printf("RESULT checkpoint_400MB pytorch load_MBps %.1f\n", torch_load_mbps);
    std::printf("RESULT checkpoint_400MB flowtrain_saver save_vs_pytorch %.3f\n", save_mbps / torch_save_mbps);
    std::printf("RESULT checkpoint_400MB flowtrain_saver restore_vs_pytorch %.3f\n", restore_mbps / torch_load_mbps);
  }
  std::error_code ec;
  if (argc <= 1) std::filesystem::remove_all(dir, ec);
  return 0;
}
