// What the benchmarks that run TensorFlow and PyTorch beside flowtrain share (lstm_bench,
// bn_cnn_bench, wide_deep_bench): quoting for the shell, the allocators each peer is tried
// with, running a peer's script and reading the lines of figures it prints.
//
//   for (const std::string& allocator : bench::Allocators()) {
//     for (const bench::PeerLine& line :
//          bench::RunPeerLines("LD_PRELOAD=" + allocator + " python3 " + bench::ShellQuote(script), 1)) {
//       ...  // line.ms, line.values[0] (a loss), line.config ("intra_op=1,inter_op=1")
//     }
//   }
//
// Not thread-safe (popen); a failure to start a command is an empty result, never an exit.
#ifndef FLOWTRAIN_BENCH_PEER_BENCH_UTIL_H_
#define FLOWTRAIN_BENCH_PEER_BENCH_UTIL_H_

#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "flowtrain/flowtrain.h"

namespace bench {

// Debian's libjemalloc2, preloaded into a peer's process when installed.
inline constexpr char kJemalloc[] = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

// `s` as one word of a shell command line.
inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// The LD_PRELOAD values a peer is tried with: "" (glibc's malloc), and jemalloc when installed.
inline std::vector<std::string> Allocators() {
  std::vector<std::string> allocators = {""};
  if (std::filesystem::exists(kJemalloc)) allocators.push_back(kJemalloc);
  return allocators;
}
inline std::string AllocatorName(const std::string& preload) {
  return preload.empty() ? "glibc" : "jemalloc";
}

// A fresh scratch directory "<base>/<prefix>XXXXXX"; empty (having said why) when it cannot be made.
inline std::string MakeScratchDir(const std::filesystem::path& base, const std::string& prefix) {
  std::string pattern = (base / (prefix + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    return "";
  }
  return pattern;
}

// Runs `tf_script write DIR <extra_args>` under `tf_python` (its stderr dropped): whether it
// succeeded and left DIR/model.meta.
inline bool WriteWithTensorFlow(const std::string& tf_python, const std::string& tf_script,
                                const std::string& dir, const std::string& extra_args = "") {
  const std::string command =
      tf_python + " " + tf_script + " write " + ShellQuote(dir) + extra_args + " 2>/dev/null";
  return std::system(command.c_str()) == 0 && std::filesystem::exists(dir + "/model.meta");
}

// An environment a peer runs in: the variables to set before its command ("A=1 B=2 ", empty or
// ending in a space) and the name its figures are labelled with ("onednn=1,malloc=glibc").
struct PeerEnv {
  std::string env;
  std::string label;
};

// TensorFlow's: TF_ENABLE_ONEDNN_OPTS 0 and 1 under each allocator.
inline std::vector<PeerEnv> TensorFlowEnvs() {
  std::vector<PeerEnv> envs;
  for (const std::string& allocator : Allocators()) {
    for (const char* onednn : {"0", "1"}) {
      envs.push_back({std::string("TF_ENABLE_ONEDNN_OPTS=") + onednn +
                          (allocator.empty() ? "" : " LD_PRELOAD=" + allocator) + " ",
                      std::string("onednn=") + onednn + ",malloc=" + AllocatorName(allocator)});
    }
  }
  return envs;
}

// PyTorch's: 1 and 2 threads under each allocator. The command is run under `timeout 120`: a
// run stalled by a busy machine (OpenMP threads spinning for a core) is dropped. `threads`
// receives the thread count, for the script's own flag.
inline std::vector<PeerEnv> PyTorchEnvs(std::vector<int>* threads) {
  std::vector<PeerEnv> envs;
  threads->clear();
  for (const std::string& allocator : Allocators()) {
    for (int t : {1, 2}) {
      envs.push_back({"timeout 120 env " + (allocator.empty() ? "" : "LD_PRELOAD=" + allocator + " ") +
                          "OMP_NUM_THREADS=" + std::to_string(t) + " ",
                      "threads=" + std::to_string(t) + ",malloc=" + AllocatorName(allocator)});
      threads->push_back(t);
    }
  }
  return envs;
}

// The first python3 that imports torch (Debian's python3-torch, which scripts/bench installs);
// empty when there is none.
inline std::string TorchPython() {
  for (const std::string& python : {std::string("/usr/bin/python3"), std::string("python3")}) {
    if (std::system((python + " -c 'import torch' 2>/dev/null").c_str()) == 0) return python;
  }
  return "";
}

// One configuration as a peer's script prints it: "<ms> <value>... [config]".
struct PeerLine {
  double ms = 0;
  std::vector<double> values;
  std::string config;  // empty when the line names none
};

// Runs `command` and returns the lines it printed holding a step time and `num_values` numbers
// (other lines are skipped). Empty when the command could not start or printed none.
inline std::vector<PeerLine> RunPeerLines(const std::string& command, int num_values) {
  std::vector<PeerLine> lines;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return lines;
  char buffer[1024];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
    std::istringstream in(buffer);
    PeerLine line;
    line.values.resize(static_cast<size_t>(num_values));
    in >> line.ms;
    for (double& v : line.values) in >> v;
    if (!in) continue;
    in >> line.config;
    lines.push_back(std::move(line));
  }
  ::pclose(pipe);
  return lines;
}

// The median of `values` (which it reorders); 0 for none.
inline double Median(std::vector<double>& values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// Whether a and b agree to `relative` of the larger.
inline bool SameWithin(double a, double b, double relative) {
  return std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b));
}

// One flowtrain configuration's figures on a graph TensorFlow wrote.
struct TrainedFigure {
  double ms = 0;    // median of the timed steps
  double loss = 0;  // "loss:0" at the last check step
};

// Imports the MetaGraph `meta`, runs its "init" op, then trains it ("train") with `threads`
// intra- and inter-op threads: `check_steps` steps fetching "loss:0", then `timed_steps` timed.
// Step i feeds feeds[i % feeds.size()] (tensor names to values).
using NamedFeeds = std::vector<std::pair<std::string, flowtrain::Tensor>>;
inline TrainedFigure TrainImportedGraph(const std::string& meta, int threads,
                                        const std::vector<NamedFeeds>& feeds, int check_steps,
                                        int timed_steps) {
  flowtrain::Graph graph;
  flowtrain::train::ImportMetaGraph(meta, &graph);
  flowtrain::SessionOptions options;
  options.config.intra_op_parallelism_threads = threads;
  options.config.inter_op_parallelism_threads = threads;
  flowtrain::Session session(graph, options);
  session.Run({}, {}, {"init"});
  TrainedFigure figure;
  int step = 0;
  for (; step < check_steps; ++step) {
    figure.loss = session.Run(feeds[step % feeds.size()], {"loss:0"}, {"train"})[0].scalar<float>();
  }
  std::vector<double> ms;
  for (; step < check_steps + timed_steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    session.Run(feeds[step % feeds.size()], {}, {"train"});
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  figure.ms = Median(ms);
  return figure;
}

}  // namespace bench

#endif  // FLOWTRAIN_BENCH_PEER_BENCH_UTIL_H_
