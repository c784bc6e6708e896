// Saver::Save / Saver::Restore of a 100M-parameter float32 model (40 variables of 2.5M floats,
// 400 MB) in a graph and session, against, in the same run: a plain sequential write (+ fsync)
// and read of 400 MB, and torch.save / torch.load of the same tensors (Debian's python3-torch,
// when /usr/bin/python3 or python3 imports torch; this program installs nothing).
//
//   saver_bench [dir]        (default: a fresh directory under $TMPDIR or /tmp)
//
// Every contender's writes are fsync'ed and each of its reads starts from a cold page cache
// (the files' pages dropped; see bench::MakeCold). Each round every contender saves, then
// loads: Saver::Restore twice, into the variables' recycled buffers and into fresh memory (as
// at a process's start, and as torch.load always does). Twelve rounds, contenders taking
// turns in every place (the virtual disk favours whichever transfer goes first, and its speed
// drifts 2-3x within a minute, so torch runs in the same rounds rather than apart); medians
// are printed. "save_peak_extra_MB" is the resident memory Save adds at its peak beyond the
// model (VmHWM reset before the save). Save includes everything Saver::Save does: the bundle
// (fsync'ed, renamed), the `checkpoint` state file and the .meta file; Restore everything
// Saver::Restore does (index checks, reading and verifying every tensor, the assigns).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
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
constexpr int kRepeats = 12;  // each of 2, 3 or 4 contenders takes every place equally often

double MBps(double seconds) { return kTotalBytes / 1e6 / seconds; }

// torch.save / torch.load of the same 40 tensors in a python3 process that stays up for the
// whole benchmark, so that torch takes its turn in every round beside the other contenders and
// meets the same disk (this virtual disk's speed drifts by 2-3x within a minute; torch measured
// in a period of its own compared disks, not checkpoint formats). Each command line on its
// stdin, "save" (torch.save + fsync) or "load" (torch.load of that file; the caller makes it
// cold first), is answered by the seconds it took.
class TorchContender {
 public:
  // Nullptr when no python3 imports torch (Debian's interpreter first: python3-torch installs
  // there, whatever python3 is on PATH).
  static std::unique_ptr<TorchContender> Start(const std::string& dir) {
    for (const char* python : {"/usr/bin/python3", "python3"}) {
      const std::string probe = std::string(python) + " -c 'import torch' >/dev/null 2>&1";
      if (std::system(probe.c_str()) == 0)
        return std::unique_ptr<TorchContender>(new TorchContender(python, dir));
    }
    return nullptr;
  }
  TorchContender(const TorchContender&) = delete;
  TorchContender& operator=(const TorchContender&) = delete;
  ~TorchContender() {
    std::fclose(to_python_);  // end of input: the script removes its file and exits
    std::fclose(from_python_);
    ::waitpid(pid_, nullptr, 0);
  }

  const std::string& path() const { return path_; }
  double Save() { return Ask("save"); }
  double Load() { return Ask("load"); }

 private:
  TorchContender(const char* python, const std::string& dir) : path_(dir + "/torch_model.pt") {
    const std::string script = dir + "/torch_bench.py";
    {
      std::ofstream py(script);
      py << "import os, sys, time, torch\n"
            "path = sys.argv[1]\n"
            "torch.set_num_threads(1)\n"
            "model = {'layer_%02d/kernel' % i: torch.arange("
         << kFloatsPerVariable << ", dtype=torch.float32) * 1e-3 + i for i in range(" << kVariables
         << ")}\n"
            "for line in iter(sys.stdin.readline, ''):\n"
            "    t = time.perf_counter()\n"
            "    if line.strip() == 'save':\n"
            "        with open(path, 'wb') as f:\n"
            "            torch.save(model, f)\n"
            "            f.flush(); os.fsync(f.fileno())\n"
            "        print(time.perf_counter() - t, flush=True)\n"
            "    else:\n"
            "        loaded = torch.load(path)\n"
            "        seconds = time.perf_counter() - t\n"
            "        assert torch.equal(loaded['layer_07/kernel'], model['layer_07/kernel'])\n"
            "        del loaded\n"
            "        print(seconds, flush=True)\n"
            "if os.path.exists(path): os.remove(path)\n";
    }
    int to_child[2], from_child[2];
    bench::Check(::pipe(to_child) == 0 && ::pipe(from_child) == 0, "pipe");
    pid_ = ::fork();
    bench::Check(pid_ >= 0, "fork");
    if (pid_ == 0) {
      ::dup2(to_child[0], STDIN_FILENO);
      ::dup2(from_child[1], STDOUT_FILENO);
      for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
      ::execlp(python, python, script.c_str(), path_.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    to_python_ = ::fdopen(to_child[1], "w");
    from_python_ = ::fdopen(from_child[0], "r");
  }

  double Ask(const char* command) {
    std::fprintf(to_python_, "%s\n", command);
    std::fflush(to_python_);
    double seconds = 0;
    if (std::fscanf(from_python_, "%lf", &seconds) != 1) {
      std::fprintf(stderr, "saver_bench: the torch process failed on '%s'\n", command);
      std::exit(1);
    }
    return seconds;
  }

  std::string path_;
  pid_t pid_ = -1;
  FILE* to_python_ = nullptr;
  FILE* from_python_ = nullptr;
};

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

  std::unique_ptr<TorchContender> torch = TorchContender::Start(dir);
  std::vector<double> disk_write, save, disk_read, restore, fresh_restore, torch_save, torch_load;
  long save_peak_extra_kb = 0;
  const char* cache = "";
  std::string path;
  // Each contender's save and load; torch's come last, so that without torch the others are
  // the first entries.
  const std::vector<std::function<void()>> saves = {
      [&] { disk_write.push_back(bench::PlainWrite(plain_path, plain_model)); },
      [&] {
        bench::PeakMemory peak;
        const auto start = Clock::now();
        path = saver.Save(sess, dir + "/model.ckpt", static_cast<int64_t>(save.size()) + 1);
        save.push_back(Seconds(start));
        save_peak_extra_kb = std::max(save_peak_extra_kb, peak.ExtraKb());
      },
      [&] { torch_save.push_back(torch->Save()); }};
  const std::vector<std::function<void()>> loads = {
      [&] { disk_read.push_back(bench::PlainRead(plain_path, plain_model)); },
      [&] {
        const auto start = Clock::now();
        saver.Restore(sess, path);
        restore.push_back(Seconds(start));
      },
      [&] {
        // As at a process's start (and as torch.load always does): into fresh memory.
        ft::ReleaseCachedMemory();
        const auto start = Clock::now();
        saver.Restore(sess, path);
        fresh_restore.push_back(Seconds(start));
      },
      [&] { torch_load.push_back(torch->Load()); }};
  const size_t savers = torch != nullptr ? saves.size() : saves.size() - 1;
  const size_t loaders = torch != nullptr ? loads.size() : loads.size() - 1;
  for (int r = 0; r < kRepeats; ++r) {
    ft::DeleteFileIfExists(plain_path);
    RemoveCheckpointFiles(dir);
    if (torch != nullptr) ft::DeleteFileIfExists(torch->path());
    ::sync();
    // The order rotates from round to round.
    for (size_t i = 0; i < savers; ++i) saves[(r + i) % savers]();
    std::vector<std::string> files = {plain_path, ft::io::DataFilename(path, 0, 1),
                                      ft::io::MetaFilename(path)};
    if (torch != nullptr) files.push_back(torch->path());
    for (size_t i = 0; i < loaders; ++i) {
      cache = bench::MakeCold(files);  // the two restores read the same files
      loads[(r + i) % loaders]();
    }
  }
  for (int r = 0; r < kRepeats; ++r) {
    std::fprintf(
        stderr,
        "run %d: disk write %.3fs, save %.3fs, disk read %.3fs, restore %.3fs, into fresh memory %.3fs", r,
        disk_write[r], save[r], disk_read[r], restore[r], fresh_restore[r]);
    if (torch != nullptr)
      std::fprintf(stderr, ", torch save %.3fs, torch load %.3fs", torch_save[r], torch_load[r]);
    std::fprintf(stderr, "\n");
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
  const auto [save_mbps, restore_mbps] = bench::ReportAgainstDisk({.system = "flowtrain_saver",
                                                                   .bytes = kTotalBytes,
                                                                   .save_s = bench::Median(save),
                                                                   .restore_s = bench::Median(restore),
                                                                   .write_s = bench::Median(disk_write),
                                                                   .read_s = bench::Median(disk_read),
                                                                   .save_peak_extra_kb = save_peak_extra_kb,
                                                                   .cache = cache});
  const double fresh_restore_mbps = MBps(bench::Median(fresh_restore));
  std::printf("RESULT checkpoint_400MB flowtrain_saver restore_into_fresh_memory_MBps %.1f\n",
              fresh_restore_mbps);
  if (torch == nullptr) {
    std::printf("RESULT checkpoint_400MB pytorch save_MBps unavailable\n");
    std::printf("RESULT checkpoint_400MB pytorch load_MBps unavailable\n");
  } else {
    const double torch_save_mbps = MBps(bench::Median(torch_save));
    const double torch_load_mbps = MBps(bench::Median(torch_load));
    std::printf("RESULT checkpoint_400MB pytorch save_MBps %.1f\n", torch_save_mbps);
    std::printf("RESULT checkpoint_400MB pytorch load_MBps %.1f\n", torch_load_mbps);
    std::printf("RESULT checkpoint_400MB flowtrain_saver save_vs_pytorch %.3f\n",
                save_mbps / torch_save_mbps);
    std::printf("RESULT checkpoint_400MB flowtrain_saver restore_vs_pytorch %.3f\n",
                restore_mbps / torch_load_mbps);
    // torch.load always reads into fresh memory; so does a restore at a process's start.
    std::printf("RESULT checkpoint_400MB flowtrain_saver restore_into_fresh_memory_vs_pytorch %.3f\n",
                fresh_restore_mbps / torch_load_mbps);
  }
  torch.reset();
  std::error_code ec;
  if (argc <= 1) std::filesystem::remove_all(dir, ec);
  return 0;
}
