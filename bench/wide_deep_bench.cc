// A wide-and-deep training step (one shared 1,000,000 x 64 embedding table, batch 512, 26 sparse
// features, dense 256-128-1 on the deep side, a [rows, 1] table on the wide side, sigmoid
// cross-entropy, Adagrad 0.05), flowtrain vs TensorFlow vs PyTorch's nn.EmbeddingBag with sparse
// Adagrad, in one run; then the same with a 100,000-row table, to show whether the step's time
// depends on the table's size:
//   RESULT wide_deep_train flowtrain ms_per_step <v> (<config>)
//   RESULT wide_deep_train tensorflow ms_per_step <v> (<config>)
//   RESULT wide_deep_train pytorch ms_per_step <v> (<config>)
//   RESULT wide_deep_train flowtrain speedup_vs_tensorflow <ratio>   (target >= 3)
//   RESULT wide_deep_train flowtrain speedup_vs_pytorch <ratio>      (target >= 2)
//   RESULT wide_deep_train_1e5_rows flowtrain ms_per_step <v> (<config>)
//   RESULT wide_deep_train_1e5_rows tensorflow ms_per_step <v> (<config>)
//   RESULT wide_deep_train flowtrain rows_1e6_over_1e5 <ratio>        (target <= 1.10)
//   RESULT wide_deep_train tensorflow rows_1e6_over_1e5 <ratio>
// (plus each system's loss and table updates after the check steps).
// TensorFlow writes the graph (bench/wide_deep_bench_tf.py: TF1 code with reference variables,
// embedding_lookup, layers.dense, AdagradOptimizer, a Saver), a checkpoint of the initial
// variables, the initial weights and 20 batches of ids drawn uniformly from the table's rows;
// flowtrain imports the MetaGraph, restores the checkpoint through the graph's own SaverDef
// (save/restore_all) and trains on the batches in turn, TF trains the same graph restored the
// same way, and bench/wide_deep_bench_pytorch.py trains the equivalent model from the same
// weights on the same batches. Every system first runs the same check steps and reports the
// loss of the last and how far they moved the two tables (the sum of |change|: the loss alone
// hardly depends on the sparse updates, as later batches mostly look up other rows): the run
// fails unless all three agree to 1e-3 (relative). Each figure is the median step time of its
// best configuration: flowtrain with intra/inter-op threads 1/1, 2/2 and 1/2; TF with intra/inter-op threads
// 1/1, 2/2, 1/2, 2/1 and its defaults, TF_ENABLE_ONEDNN_OPTS 0 and 1, glibc malloc and jemalloc (Debian's
// libjemalloc2, preloaded, when installed); PyTorch with 1 and 2 threads and either allocator.
// flowtrain runs first, on both tables, its configurations 3 times with the sizes alternating
// (the best of the rounds counts), so that the two sizes meet the same machine; for the
// 100,000-row table TF runs its thread settings at the oneDNN and allocator setting that won on
// the large table (PyTorch does not run). Every configuration's figure goes to stderr. The
// scratch files (~0.9 GB for both tables) go to a fresh directory in /dev/shm when it has room
// (else the temporary directory) and are removed at the end. TensorFlow is the Python given at
// build time (FLOWTRAIN_TF_PYTHON): without it there is no graph and the bench says so; PyTorch
// is the first python3 that imports torch (scripts/bench installs Debian's python3-torch),
// reported as not run when there is none. `--flowtrain_only` and `--flowtrain_trace` (see main)
// train flowtrain alone on a directory the TF script wrote, to profile it.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "flowtrain/flowtrain.h"
#include "peer_bench_util.h"

namespace ft = flowtrain;

namespace {

// bench/wide_deep_bench_tf.py's and bench/wide_deep_bench_pytorch.py's constants (keep them in
// step).
constexpr int64_t kBatch = 512, kFeatures = 26, kDim = 64;
constexpr int kNumBatches = 20;
constexpr int kCheckSteps = 5, kTimedSteps = 30;
constexpr int kFlowtrainRounds = 3;  // flowtrain's configurations run this many times, sizes alternating
constexpr int64_t kRows = 1000000, kSmallRows = 100000;
constexpr double kTolerance = 1e-3;

// A session's intra-op and inter-op thread counts.
struct Threads {
  int intra_op, inter_op;
  std::string Name() const {
    return "intra_op=" + std::to_string(intra_op) + ",inter_op=" + std::to_string(inter_op);
  }
};
// flowtrain's configurations. With 2 intra-op threads (a pool spanning both cores) a plan runs
// inline on the caller's thread, one kernel at a time; 1 intra-op and 2 inter-op threads run
// independent kernels side by side (runtime/executor.h).
const std::vector<Threads> kFlowtrainThreads = {{1, 1}, {2, 2}, {1, 2}};

struct Figure {
  double ms = -1;  // median step time of the best configuration; negative: did not run
  // After kCheckSteps steps: the last step's loss, sum |embeddings - initial|, sum |wide_weights|.
  double loss = 0, table_l1 = 0, wide_l1 = 0;
  std::string config;
  std::string env;  // the environment the configuration ran with (TF's oneDNN and allocator)
};

void PrintConfig(const std::string& name, const Figure& f) {
  std::fprintf(stderr, "  %-48s %9.3f ms  loss %.7g  table_l1 %.7g  wide_l1 %.7g\n", name.c_str(), f.ms,
               f.loss, f.table_l1, f.wide_l1);
}

// Runs `command`, reading lines "<ms> <loss> <table_l1> <wide_l1> [config]"; keeps the fastest in
// `best` (its config prefixed by `label`, its env `env`). False when the command printed nothing
// it could read.
bool RunPeer(const std::string& env, const std::string& command, const std::string& label, Figure& best) {
  const std::vector<bench::PeerLine> lines = bench::RunPeerLines(env + command, 3);
  for (const bench::PeerLine& line : lines) {
    Figure f;
    f.ms = line.ms;
    f.loss = line.values[0], f.table_l1 = line.values[1], f.wide_l1 = line.values[2];
    f.config = label + (line.config.empty() ? "" : "," + line.config);
    f.env = env;
    PrintConfig(f.config, f);
    if (best.ms < 0 || f.ms < best.ms) best = f;
  }
  return !lines.empty();
}

template <typename T>
ft::Tensor ReadTensor(const std::string& path, ft::DataType dtype, ft::TensorShape shape) {
  ft::Tensor t(dtype, shape);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(t.data<T>()), static_cast<std::streamsize>(t.NumElements() * sizeof(T)));
  if (!in) ft::NotFound("cannot read ", path);
  return t;
}

double SumAbsDifference(const ft::Tensor& a, const float* b) {
  const float* p = a.data<float>();
  double sum = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i)
    sum += std::abs(static_cast<double>(p[i]) - (b ? b[i] : 0.0f));
  return sum;
}

// flowtrain on TF's graph: imported from the MetaGraph, restored from TF's checkpoint through the
// graph's saver (save/restore_all with the path fed to save/Const), trained by its "train" op.
// With `trace`, the timed steps run traced and the kernels' times per step go to stderr, the
// slowest first (to profile).
Figure RunFlowtrain(const std::string& dir, int64_t rows, const std::vector<Threads>& configs,
                    int timed_steps, bool trace = false) {
  const ft::Tensor ids =
      ReadTensor<int64_t>(dir + "/ids.bin", ft::DT_INT64, ft::TensorShape({kNumBatches, kBatch, kFeatures}));
  const ft::Tensor labels =
      ReadTensor<float>(dir + "/labels.bin", ft::DT_FLOAT, ft::TensorShape({kNumBatches, kBatch, 1}));
  // One tensor per batch, fed as it is (no copy inside the timed loop).
  std::vector<ft::Tensor> batch_ids, batch_labels;
  for (int b = 0; b < kNumBatches; ++b) {
    ft::Tensor i(ft::DT_INT64, ft::TensorShape({kBatch, kFeatures}));
    std::copy_n(ids.data<int64_t>() + b * kBatch * kFeatures, kBatch * kFeatures, i.data<int64_t>());
    ft::Tensor l(ft::DT_FLOAT, ft::TensorShape({kBatch, 1}));
    std::copy_n(labels.data<float>() + b * kBatch, kBatch, l.data<float>());
    batch_ids.push_back(std::move(i));
    batch_labels.push_back(std::move(l));
  }
  Figure best;
  for (const Threads& threads : configs) {
    ft::Graph graph;
    std::shared_ptr<ft::train::Saver> saver = ft::train::ImportMetaGraph(dir + "/model.meta", &graph);
    if (saver == nullptr) ft::NotFound(dir, "/model.meta has no SaverDef");
    ft::SessionOptions options;
    options.config.intra_op_parallelism_threads = threads.intra_op;
    options.config.inter_op_parallelism_threads = threads.inter_op;
    ft::Session session(graph, options);
    saver->Restore(session, dir + "/model.ckpt");
    const ft::Output ids_in = graph.GetTensorByName("ids:0");
    const ft::Output labels_in = graph.GetTensorByName("labels:0");
    const ft::Output loss_out = graph.GetTensorByName("loss:0");
    const ft::Operation train = graph.GetOperationByName("train");
    std::vector<ft::FeedList> feeds;
    for (int b = 0; b < kNumBatches; ++b)
      feeds.push_back({{ids_in, batch_ids[b]}, {labels_in, batch_labels[b]}});
    Figure f;
    int step = 0;
    for (; step < kCheckSteps; ++step) {
      f.loss = session.Run(feeds[step % kNumBatches], {loss_out}, {train})[0].scalar<float>();
    }
    {  // The tables' movement; the fetched values are dropped before the timed steps.
      const ft::Tensor initial =
          ReadTensor<float>(dir + "/embeddings.bin", ft::DT_FLOAT, ft::TensorShape({rows, kDim}));
      std::vector<ft::Tensor> tables = session.Run(
          {}, {graph.GetTensorByName("embeddings:0"), graph.GetTensorByName("wide_weights:0")}, {});
      f.table_l1 = SumAbsDifference(tables[0], initial.data<float>());
      f.wide_l1 = SumAbsDifference(tables[1], nullptr);
    }
    std::vector<double> ms;
    ft::RunOptions run_options;
    run_options.trace_level = trace ? ft::RunOptions::kFullTrace : ft::RunOptions::kNoTrace;
    ft::RunMetadata last_metadata;
    std::map<std::string, double> kernel_ms;  // with `trace`: by timeline label, summed over the steps
    for (int i = 0; i < timed_steps; ++i, ++step) {
      const ft::FeedList& feed = feeds[step % kNumBatches];
      ft::RunMetadata metadata;
      const auto start = std::chrono::steady_clock::now();
      session.Run(feed, {}, {train}, trace ? &run_options : nullptr, trace ? &metadata : nullptr);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      if (trace) last_metadata = metadata;
      for (const auto& dev : metadata.step_stats().dev_stats()) {
        for (const auto& node : dev.node_stats())
          kernel_ms[node.timeline_label()] += node.op_end_rel_micros() / 1e3;
      }
    }
    if (trace) {  // the last step's timeline, then the kernels' times per step
      std::vector<std::tuple<int64_t, int64_t, uint32_t, std::string>> timeline;
      int64_t first = INT64_MAX;
      for (const auto& dev : last_metadata.step_stats().dev_stats()) {
        for (const auto& node : dev.node_stats()) {
          timeline.emplace_back(node.all_start_micros(), node.op_end_rel_micros(), node.thread_id(),
                                node.timeline_label());
          first = std::min<int64_t>(first, node.all_start_micros());
        }
      }
      std::sort(timeline.begin(), timeline.end());
      std::fprintf(stderr, "%s: the last step's kernels of 50 us or more (start, duration, thread):\n",
                   threads.Name().c_str());
      for (const auto& [start, length, thread, label] : timeline) {
        if (length >= 50) {
          std::fprintf(stderr, "  %7.3f %7.3f ms  %u  %s\n", (start - first) / 1e3, length / 1e3, thread,
                       label.c_str());
        }
      }
      std::vector<std::pair<double, std::string>> slowest;
      double total = 0;
      for (const auto& [label, t] : kernel_ms)
        slowest.emplace_back(t / timed_steps, label), total += t / timed_steps;
      std::sort(slowest.rbegin(), slowest.rend());
      std::fprintf(stderr, "%s: kernels %.3f ms per step in all, the slowest:\n", threads.Name().c_str(),
                   total);
      for (size_t k = 0; k < slowest.size() && k < 25; ++k) {
        std::fprintf(stderr, "  %8.3f ms  %s\n", slowest[k].first, slowest[k].second.c_str());
      }
    }
    f.ms = bench::Median(ms);
    f.config = threads.Name();
    PrintConfig("flowtrain," + f.config, f);
    if (best.ms < 0 || f.ms < best.ms) best = f;
  }
  return best;
}

// Prints the peers' RESULT lines for `workload`; false when a peer's check-step figures differ
// from flowtrain's.
bool ReportPeers(const std::string& workload, const Figure& flowtrain,
                 const std::vector<std::pair<std::string, Figure>>& peers, bool speedups) {
  bool agree = true;
  for (const auto& [name, peer] : peers) {
    if (peer.ms < 0) {
      std::printf("(%s %s not run)\n", workload.c_str(), name.c_str());
      continue;
    }
    std::printf("RESULT %s %s ms_per_step %.3f (%s)\n", workload.c_str(), name.c_str(), peer.ms,
                peer.config.c_str());
    std::printf("RESULT %s %s loss_after_%d_steps %.7g (table_l1 %.7g, wide_l1 %.7g)\n", workload.c_str(),
                name.c_str(), kCheckSteps, peer.loss, peer.table_l1, peer.wide_l1);
    if (speedups) {
      std::printf("RESULT %s flowtrain speedup_vs_%s %.2f\n", workload.c_str(), name.c_str(),
                  peer.ms / flowtrain.ms);
    }
    for (const auto& [what, ours, theirs] :
         {std::tuple<const char*, double, double>{"loss", flowtrain.loss, peer.loss},
          std::tuple<const char*, double, double>{"table_l1", flowtrain.table_l1, peer.table_l1},
          std::tuple<const char*, double, double>{"wide_l1", flowtrain.wide_l1, peer.wide_l1}}) {
      if (!bench::SameWithin(ours, theirs, kTolerance)) {
        std::fprintf(
            stderr,
            "wide_deep_bench (%s): flowtrain's %s %.7g differs from %s's %.7g by more than %g (relative)\n",
            workload.c_str(), what, ours, name.c_str(), theirs, kTolerance);
        agree = false;
      }
    }
  }
  return agree;
}

}  // namespace

// `--flowtrain_only DIR ROWS [TIMED_STEPS [INTRA/INTER]]` trains flowtrain alone (in each of its
// thread configurations, or the one given) on what `wide_deep_bench_tf.py write DIR ROWS` wrote
// (to profile);
// `--flowtrain_trace` with the same arguments also prints the kernels' times.
int main(int argc, char** argv) {
  if (argc >= 4 && argc <= 6 &&
      (std::string(argv[1]) == "--flowtrain_only" || std::string(argv[1]) == "--flowtrain_trace")) {
    try {
      std::vector<Threads> threads = kFlowtrainThreads;
      if (argc == 6) {
        Threads t;
        if (std::sscanf(argv[5], "%d/%d", &t.intra_op, &t.inter_op) != 2) {
          std::fprintf(stderr, "wide_deep_bench: THREADS is INTRA/INTER, e.g. 1/2\n");
          return 1;
        }
        threads = {t};
      }
      const Figure f =
          RunFlowtrain(argv[2], std::stoll(argv[3]), threads, argc >= 5 ? std::stoi(argv[4]) : kTimedSteps,
                       std::string(argv[1]) == "--flowtrain_trace");
      std::printf("RESULT wide_deep_train flowtrain ms_per_step %.3f (%s)\n", f.ms, f.config.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "wide_deep_bench: flowtrain failed: %s\n", e.what());
      return 1;
    }
    return 0;
  }
#ifndef FLOWTRAIN_WIDE_DEEP_BENCH_TF_PYTHON
  std::printf(
      "(not run: wide_deep_bench needs TensorFlow to write its graph; configure with FLOWTRAIN_TF_PYTHON)\n");
  return 0;
#else
  const std::string tf_python = FLOWTRAIN_WIDE_DEEP_BENCH_TF_PYTHON;
  const std::string tf_script = bench::ShellQuote(FLOWTRAIN_WIDE_DEEP_BENCH_DIR "/wide_deep_bench_tf.py");
  const std::string torch_script =
      bench::ShellQuote(FLOWTRAIN_WIDE_DEEP_BENCH_DIR "/wide_deep_bench_pytorch.py");
  const std::string python = bench::TorchPython();
  std::error_code ec;
  const std::filesystem::space_info shm = std::filesystem::space("/dev/shm", ec);
  const std::filesystem::path base = !ec && shm.available > (std::uintmax_t{2} << 30)
                                         ? std::filesystem::path("/dev/shm")
                                         : std::filesystem::temp_directory_path();
  const std::string root = bench::MakeScratchDir(base, "wide_deep_bench_");
  if (root.empty()) return 1;
  bool agree = true;
  Figure flowtrain_large, flowtrain_small, tensorflow_large, tensorflow_small, pytorch_large;
  const auto dir_of = [&](int64_t rows) { return root + "/rows_" + std::to_string(rows); };
  const auto args_of = [&](int64_t rows) {
    return " " + bench::ShellQuote(dir_of(rows)) + " " + std::to_string(rows);
  };
  try {
    for (const int64_t rows : {kRows, kSmallRows}) {
      std::filesystem::create_directory(dir_of(rows));
      std::fprintf(stderr, "%lld rows: TensorFlow writes the graph, checkpoint and data\n",
                   static_cast<long long>(rows));
      if (!bench::WriteWithTensorFlow(tf_python, tf_script, dir_of(rows), " " + std::to_string(rows))) {
        std::fprintf(stderr, "wide_deep_bench: TensorFlow could not write the graph\n");
        std::filesystem::remove_all(root);
        return 1;
      }
    }
    // flowtrain on both tables first, alternating, so that the two sizes meet the same machine
    // (a process that sat idle while the peers ran measures slower on this virtual machine).
    for (int round = 1; round <= kFlowtrainRounds; ++round) {
      for (const int64_t rows : {kRows, kSmallRows}) {
        std::fprintf(stderr, "flowtrain, %lld rows, round %d:\n", static_cast<long long>(rows), round);
        Figure& best = rows == kRows ? flowtrain_large : flowtrain_small;
        const Figure f = RunFlowtrain(dir_of(rows), rows, kFlowtrainThreads, kTimedSteps);
        if (best.ms < 0 || f.ms < best.ms) best = f;
      }
    }
    std::fprintf(stderr, "tensorflow, %lld rows:\n", static_cast<long long>(kRows));
    for (const bench::PeerEnv& env : bench::TensorFlowEnvs()) {
      RunPeer(env.env, tf_python + " " + tf_script + " time" + args_of(kRows) + " 2>/dev/null", env.label,
              tensorflow_large);
    }
    if (!python.empty()) {
      std::fprintf(stderr, "pytorch, %lld rows:\n", static_cast<long long>(kRows));
      std::vector<int> threads;
      const std::vector<bench::PeerEnv> envs = bench::PyTorchEnvs(&threads);
      for (size_t i = 0; i < envs.size(); ++i) {
        RunPeer(envs[i].env,
                python + " " + torch_script + args_of(kRows) + " --threads " + std::to_string(threads[i]) +
                    " 2>/dev/null",
                envs[i].label, pytorch_large);
      }
    }
    if (tensorflow_large.ms >= 0) {  // at the large table's winning oneDNN and allocator setting
      std::fprintf(stderr, "tensorflow, %lld rows:\n", static_cast<long long>(kSmallRows));
      RunPeer(tensorflow_large.env,
              tf_python + " " + tf_script + " time" + args_of(kSmallRows) + " 2>/dev/null",
              tensorflow_large.config.substr(0, tensorflow_large.config.find(",intra_op")), tensorflow_small);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wide_deep_bench: flowtrain failed: %s\n", e.what());
    std::filesystem::remove_all(root);
    return 1;
  }
  std::filesystem::remove_all(root);

  std::printf("RESULT wide_deep_train flowtrain ms_per_step %.3f (%s)\n", flowtrain_large.ms,
              flowtrain_large.config.c_str());
  std::printf("RESULT wide_deep_train flowtrain loss_after_%d_steps %.7g (table_l1 %.7g, wide_l1 %.7g)\n",
              kCheckSteps, flowtrain_large.loss, flowtrain_large.table_l1, flowtrain_large.wide_l1);
  if (python.empty()) std::printf("(pytorch not run: no python3 imports torch)\n");
  agree &= ReportPeers("wide_deep_train", flowtrain_large,
                       {{"tensorflow", tensorflow_large}, {"pytorch", pytorch_large}}, true);
  std::printf("RESULT wide_deep_train_1e5_rows flowtrain ms_per_step %.3f (%s)\n", flowtrain_small.ms,
              flowtrain_small.config.c_str());
  std::printf(
      "RESULT wide_deep_train_1e5_rows flowtrain loss_after_%d_steps %.7g (table_l1 %.7g, wide_l1 %.7g)\n",
      kCheckSteps, flowtrain_small.loss, flowtrain_small.table_l1, flowtrain_small.wide_l1);
  agree &=
      ReportPeers("wide_deep_train_1e5_rows", flowtrain_small, {{"tensorflow", tensorflow_small}}, false);
  std::printf("RESULT wide_deep_train flowtrain rows_1e6_over_1e5 %.3f\n",
              flowtrain_large.ms / flowtrain_small.ms);
  if (tensorflow_large.ms >= 0 && tensorflow_small.ms >= 0) {
    std::printf("RESULT wide_deep_train tensorflow rows_1e6_over_1e5 %.3f\n",
                tensorflow_large.ms / tensorflow_small.ms);
  }
  return agree ? 0 : 1;
#endif
}
