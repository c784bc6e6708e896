// The main example's CNN (examples/fashion_mnist_model.h) with batch normalisation after each
// convolution, trained with Adam on batches of 64 Fashion-MNIST images, flowtrain vs TensorFlow vs
// PyTorch, in one run:
//   RESULT bn_cnn_train flowtrain ms_per_step <v> (<config>)
//   RESULT bn_cnn_train tensorflow ms_per_step <v> (<config>)
//   RESULT bn_cnn_train pytorch ms_per_step <v> (<config>)
//   RESULT bn_cnn_train flowtrain speedup_vs_tensorflow <ratio>
//   RESULT bn_cnn_train flowtrain speedup_vs_pytorch <ratio>
//   RESULT bn_cnn_train flowtrain speedup_vs_best_peer <ratio>   (target >= 1.5)
// (plus each system's loss after the check steps). The model: 2 x (conv 3x3 SAME without bias ->
// fused batch normalisation in training mode -> relu -> max-pool 2x2), 32 then 64 filters ->
// dense 128 relu -> dense 10, mean sparse softmax cross-entropy, Adam 1e-3 with the batch norms'
// moving-average updates as control dependencies of the train op. TensorFlow writes the graph
// (bench/bn_cnn_bench_tf.py: TF1 code with tf.compat.v1.layers, exported as a MetaGraph), the
// initial weights and 8 batches of Debian's Fashion-MNIST training images; flowtrain imports
// and trains that graph, TF trains it too, and bench/bn_cnn_bench_pytorch.py trains the same
// layers in torch.nn from the same weights; step i trains on batch i % 8 in every system.
// Every system first runs the same few steps and reports the loss of the last: the run fails
// unless the three agree to 1e-3 (relative). Each figure is the median step time of its best
// configuration: flowtrain with 1 and 2 threads; TF with intra/inter-op threads 1/1, 2/2, 1/2,
// 2/1 and its defaults, TF_ENABLE_ONEDNN_OPTS 0 and 1, glibc malloc and jemalloc (Debian's
// libjemalloc2, preloaded, when installed); PyTorch with 1 and 2 threads, either allocator,
// and the contiguous or channels_last memory format. Every configuration's figure goes to
// stderr. TensorFlow is the Python given at build time (FLOWTRAIN_TF_PYTHON): without it there
// is no graph and the bench says so; PyTorch is the first python3 that imports torch
// (scripts/bench installs Debian's python3-torch), reported as not run when there is none.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "flowtrain/flowtrain.h"
#include "peer_bench_util.h"

namespace ft = flowtrain;

namespace {

// bench/bn_cnn_bench_tf.py's and bench/bn_cnn_bench_pytorch.py's constants (keep them in step).
constexpr int64_t kBatch = 64, kSize = 28;
constexpr int kNumBatches = 8;
constexpr int kCheckSteps = 5, kTimedSteps = 30;
constexpr double kLossTolerance = 1e-3;

struct Figure {
  double ms = -1;   // median step time of the best configuration; negative: did not run
  double loss = 0;  // of the last of kCheckSteps steps
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
  if (lines.empty()) std::fprintf(stderr, "  %-60s (failed: no figure)\n", label.c_str());
  return !lines.empty();
}

// The kNumBatches batches of `path` (elements of T, C order), each a tensor of `shape`.
template <typename T>
std::vector<ft::Tensor> ReadBatches(const std::string& path, ft::DataType dtype,
                                    const ft::TensorShape& shape) {
  std::ifstream in(path, std::ios::binary);
  std::vector<ft::Tensor> batches;
  for (int b = 0; b < kNumBatches; ++b) {
    ft::Tensor t(dtype, shape);
    in.read(reinterpret_cast<char*>(t.data<T>()), static_cast<std::streamsize>(t.NumElements() * sizeof(T)));
    batches.push_back(t);
  }
  if (!in) {
    std::fprintf(stderr, "bn_cnn_bench: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return batches;
}

// flowtrain on TF's graph: imported from the MetaGraph, initialised by its "init" op.
Figure RunFlowtrain(const std::string& dir) {
  const std::vector<ft::Tensor> images =
      ReadBatches<float>(dir + "/images.bin", ft::DT_FLOAT, ft::TensorShape({kBatch, kSize, kSize, 1}));
  const std::vector<ft::Tensor> labels =
      ReadBatches<int64_t>(dir + "/labels.bin", ft::DT_INT64, ft::TensorShape({kBatch}));
  std::vector<bench::NamedFeeds> feeds;
  for (int b = 0; b < kNumBatches; ++b) feeds.push_back({{"images:0", images[b]}, {"labels:0", labels[b]}});
  Figure best;
  for (int threads : {1, 2}) {
    const bench::TrainedFigure f =
        bench::TrainImportedGraph(dir + "/model.meta", threads, feeds, kCheckSteps, kTimedSteps);
    const std::string name = "threads=" + std::to_string(threads);
    std::fprintf(stderr, "  %-60s %9.3f ms  loss %.7g\n", ("flowtrain," + name).c_str(), f.ms, f.loss);
    if (best.ms < 0 || f.ms < best.ms) best = {f.ms, f.loss, name};
  }
  return best;
}

}  // namespace

// `--flowtrain_only DIR` trains flowtrain alone on a graph bn_cnn_bench_tf.py wrote (to profile).
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--flowtrain_only") {
    const Figure f = RunFlowtrain(argv[2]);
    std::printf("RESULT bn_cnn_train flowtrain ms_per_step %.3f (%s)\n", f.ms, f.config.c_str());
    std::printf("RESULT bn_cnn_train flowtrain loss_after_%d_steps %.7g\n", kCheckSteps, f.loss);
    return 0;
  }
#ifndef FLOWTRAIN_BN_CNN_BENCH_TF_PYTHON
  std::printf(
      "(not run: bn_cnn_bench needs TensorFlow to write its graph; configure with FLOWTRAIN_TF_PYTHON)\n");
  return 0;
#else
  const std::string tf_python = FLOWTRAIN_BN_CNN_BENCH_TF_PYTHON;
  const std::string tf_script = bench::ShellQuote(FLOWTRAIN_BN_CNN_BENCH_DIR "/bn_cnn_bench_tf.py");
  const std::string torch_script = bench::ShellQuote(FLOWTRAIN_BN_CNN_BENCH_DIR "/bn_cnn_bench_pytorch.py");
  const std::string dir = bench::MakeScratchDir(std::filesystem::temp_directory_path(), "bn_cnn_bench_");
  if (dir.empty()) return 1;
  if (!bench::WriteWithTensorFlow(tf_python, tf_script, dir)) {
    std::fprintf(stderr,
                 "bn_cnn_bench: TensorFlow could not write the graph (is the Fashion-MNIST data at "
                 "/usr/share/datasets/fashion-mnist? Debian's dataset-fashion-mnist)\n");
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
      for (bool channels_last : {false, true}) {
        RunPeer(envs[i].env + python + " " + torch_script + " " + bench::ShellQuote(dir) + " --threads " +
                    std::to_string(threads[i]) + (channels_last ? " --channels-last" : "") + " 2>/dev/null",
                envs[i].label + (channels_last ? ",channels_last" : ",contiguous"), pytorch);
      }
    }
  }
  std::filesystem::remove_all(dir);

  std::printf("RESULT bn_cnn_train flowtrain ms_per_step %.3f (%s)\n", flowtrain.ms,
              flowtrain.config.c_str());
  std::printf("RESULT bn_cnn_train flowtrain loss_after_%d_steps %.7g\n", kCheckSteps, flowtrain.loss);
  bool losses_agree = true;
  double best_peer_ms = -1;
  for (const auto& [name, peer] : {std::pair<const char*, const Figure&>{"tensorflow", tensorflow},
                                   std::pair<const char*, const Figure&>{"pytorch", pytorch}}) {
    if (peer.ms < 0) {
      std::printf("(%s not run)\n", name);
      continue;
    }
    std::printf("RESULT bn_cnn_train %s ms_per_step %.3f (%s)\n", name, peer.ms, peer.config.c_str());
    std::printf("RESULT bn_cnn_train %s loss_after_%d_steps %.7g\n", name, kCheckSteps, peer.loss);
    std::printf("RESULT bn_cnn_train flowtrain speedup_vs_%s %.2f\n", name, peer.ms / flowtrain.ms);
    if (best_peer_ms < 0 || peer.ms < best_peer_ms) best_peer_ms = peer.ms;
    if (!bench::SameWithin(flowtrain.loss, peer.loss, kLossTolerance)) {
      std::fprintf(stderr,
                   "bn_cnn_bench: flowtrain's loss %.7g differs from %s's %.7g by more than %g (relative)\n",
                   flowtrain.loss, name, peer.loss, kLossTolerance);
      losses_agree = false;
    }
  }
  if (best_peer_ms > 0) {
    std::printf("RESULT bn_cnn_train flowtrain speedup_vs_best_peer %.2f\n", best_peer_ms / flowtrain.ms);
  } else {
    std::printf("(no peer ran: no speedup_vs_best_peer)\n");
  }
  return losses_agree ? 0 : 1;
#endif
}
