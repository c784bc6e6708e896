// A dynamic_rnn LSTM training step (batch 32, 128 inputs, 128 units, 50 steps, mean squared
// error, GradientDescent), flowtrain vs TensorFlow vs PyTorch's nn.LSTM, in one run:
//   RESULT lstm_train flowtrain ms_per_step <v> (<config>)
//   RESULT lstm_train tensorflow ms_per_step <v> (<config>)
//   RESULT lstm_train pytorch ms_per_step <v> (<config>)
//   RESULT lstm_train flowtrain speedup_vs_tensorflow <ratio>   (target >= 1.5)
//   RESULT lstm_train flowtrain speedup_vs_pytorch <ratio>      (target >= 1.2)
// TensorFlow writes the graph (bench/lstm_bench_tf.py: tf.compat.v1.nn.dynamic_rnn over an
// LSTMCell, exported as a MetaGraph); flowtrain imports and trains that graph, TF trains it
// too, and bench/lstm_bench_pytorch.py trains nn.LSTM from the same initial weights and data.
// Every system first runs the same few steps and reports the loss of the last: the run fails
// unless the three agree to 1e-3 (relative). Each figure is the median step time of its best
// configuration: flowtrain with 1 and 2 threads; TF with intra/inter-op threads 1/1, 2/2,
// 1/2, 2/1 and its defaults, TF_ENABLE_ONEDNN_OPTS 0 and 1, glibc malloc and jemalloc
// (Debian's libjemalloc2, preloaded, when installed); PyTorch with 1 and 2 threads and either
// allocator. TensorFlow is the Python given at build time (FLOWTRAIN_TF_PYTHON): without it
// there is no graph and the bench says so; PyTorch is the first python3 that imports torch
// (scripts/bench installs Debian's python3-torch), skipped when there is none.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "flowtrain/flowtrain.h"
#include "peer_bench_util.h"

namespace ft = flowtrain;

namespace {

// bench/lstm_bench_tf.py's constants (keep them in step).
constexpr int kBatch = 32, kSteps = 50, kInputs = 128, kUnits = 128;
constexpr int kCheckSteps = 5, kTimedSteps = 30;
constexpr double kLossTolerance = 1e-3;

struct Figure {
  double ms = -1;   // median step time of the best configuration; negative: did not run
  double loss = 0;  // after kCheckSteps steps
  std::string config;
};

// Runs `command`, reading lines "<ms> <loss> [config]"; keeps the fastest in `best` (its
// config prefixed by `label`). False when the command printed nothing it could read.
bool RunPeer(const std::string& command, const std::string& label, Figure& best) {
  const std::vector<bench::PeerLine> lines = bench::RunPeerLines(command, 1);
  for (const bench::PeerLine& line : lines) {
    const std::string name = label + (line.config.empty() ? "" : "," + line.config);
    std::fprintf(stderr, "  %-60s %9.3f ms  loss %.7g\n", name.c_str(), line.ms, line.values[0]);
    if (best.ms < 0 || line.ms < best.ms) best = {line.ms, line.values[0], name};
  }
  return !lines.empty();
}

ft::Tensor ReadFloats(const std::string& path, ft::TensorShape shape) {
  ft::Tensor t(ft::DT_FLOAT, shape);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(t.data<float>()),
          static_cast<std::streamsize>(t.NumElements() * sizeof(float)));
  if (!in) {
    std::fprintf(stderr, "lstm_bench: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return t;
}

// flowtrain on TF's graph: imported from the MetaGraph, initialised by its "init" op.
Figure RunFlowtrain(const std::string& dir) {
  const ft::Tensor x = ReadFloats(dir + "/x.bin", ft::TensorShape({kBatch, kSteps, kInputs}));
  const ft::Tensor y = ReadFloats(dir + "/y.bin", ft::TensorShape({kBatch, kSteps, kUnits}));
  const bench::NamedFeeds feeds = {{"x:0", x}, {"y:0", y}};
  Figure best;
  for (int threads : {1, 2}) {
    const bench::TrainedFigure f =
        bench::TrainImportedGraph(dir + "/model.meta", threads, {feeds}, kCheckSteps, kTimedSteps);
    const std::string name = "threads=" + std::to_string(threads);
    std::fprintf(stderr, "  %-60s %9.3f ms  loss %.7g\n", ("flowtrain," + name).c_str(), f.ms, f.loss);
    if (best.ms < 0 || f.ms < best.ms) best = {f.ms, f.loss, name};
  }
  return best;
}

}  // namespace

// `--flowtrain_only DIR` trains flowtrain alone on a graph lstm_bench_tf.py wrote (to profile).
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--flowtrain_only") {
    const Figure f = RunFlowtrain(argv[2]);
    std::printf("RESULT lstm_train flowtrain ms_per_step %.3f (%s)\n", f.ms, f.config.c_str());
    return 0;
  }
#ifndef FLOWTRAIN_LSTM_BENCH_TF_PYTHON
  std::printf(
      "(not run: lstm_bench needs TensorFlow to write its graph; configure with FLOWTRAIN_TF_PYTHON)\n");
  return 0;
#else
  const std::string tf_python = FLOWTRAIN_LSTM_BENCH_TF_PYTHON;
  const std::string tf_script = bench::ShellQuote(FLOWTRAIN_LSTM_BENCH_DIR "/lstm_bench_tf.py");
  const std::string torch_script = bench::ShellQuote(FLOWTRAIN_LSTM_BENCH_DIR "/lstm_bench_pytorch.py");
  const std::string dir = bench::MakeScratchDir(std::filesystem::temp_directory_path(), "lstm_bench_");
  if (dir.empty()) return 1;
  if (!bench::WriteWithTensorFlow(tf_python, tf_script, dir)) {
    std::fprintf(stderr, "lstm_bench: TensorFlow could not write the graph\n");
    std::filesystem::remove_all(dir);
    return 1;
  }

  std::fprintf(stderr, "flowtrain:\n");
  const Figure flowtrain = RunFlowtrain(dir);
  std::fprintf(stderr, "tensorflow:\n");
  Figure tensorflow;
  for (const bench::PeerEnv& env : bench::TensorFlowEnvs()) {
    RunPeer(env.env + tf_python + " " + tf_script + " time " + bench::ShellQuote(dir) + " 2>/dev/null",
            env.label, tensorflow);
  }
  std::fprintf(stderr, "pytorch:\n");
  Figure pytorch;
  if (const std::string python = bench::TorchPython(); !python.empty()) {
    std::vector<int> threads;
    const std::vector<bench::PeerEnv> envs = bench::PyTorchEnvs(&threads);
    for (size_t i = 0; i < envs.size(); ++i) {
      RunPeer(envs[i].env + python + " " + torch_script + " " + bench::ShellQuote(dir) + " --threads " +
                  std::to_string(threads[i]) + " 2>/dev/null",
              envs[i].label, pytorch);
    }
  }
  std::filesystem::remove_all(dir);

  std::printf("RESULT lstm_train flowtrain ms_per_step %.3f (%s)\n", flowtrain.ms, flowtrain.config.c_str());
  std::printf("RESULT lstm_train flowtrain loss_after_%d_steps %.7g\n", kCheckSteps, flowtrain.loss);
  bool losses_agree = true;
  for (const auto& [name, peer] : {std::pair<const char*, const Figure&>{"tensorflow", tensorflow},
                                   std::pair<const char*, const Figure&>{"pytorch", pytorch}}) {
    if (peer.ms < 0) {
      std::printf("(%s not run)\n", name);
      continue;
    }
    std::printf("RESULT lstm_train %s ms_per_step %.3f (%s)\n", name, peer.ms, peer.config.c_str());
    std::printf("RESULT lstm_train %s loss_after_%d_steps %.7g\n", name, kCheckSteps, peer.loss);
    std::printf("RESULT lstm_train flowtrain speedup_vs_%s %.2f\n", name, peer.ms / flowtrain.ms);
    if (!bench::SameWithin(flowtrain.loss, peer.loss, kLossTolerance)) {
      std::fprintf(stderr,
                   "lstm_bench: flowtrain's loss %.7g differs from %s's %.7g by more than %g (relative)\n",
                   flowtrain.loss, name, peer.loss, kLossTolerance);
      losses_agree = false;
    }
  }
  return losses_agree ? 0 : 1;
#endif
}
