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

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace bench

#endif  // FLOWTRAIN_BENCH_PEER_BENCH_UTIL_H_
