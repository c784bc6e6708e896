// Executor overhead: Session::Run of a cached plan computing a chain of N scalar Adds.
//
// Reports, from Google Benchmark timings of chains of 1 and 100 Adds in one process:
//   RESULT executor_chain100 flowtrain ns_per_node <v>      (target <= 150)
//   RESULT executor_chain100 flowtrain fixed_ns_per_run <v>  (target <= 2000)
// and the same chain computed by calling the Add kernel's arithmetic directly on freshly
// allocated scalar tensors (what any executor must at least do), as the reference:
//   RESULT executor_chain100 direct ns_per_node <v>
//   RESULT executor_chain100 flowtrain overhead_vs_direct <ratio>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <iostream>
#include <map>

#include "flowtrain/flowtrain.h"

namespace ft = flowtrain;

namespace {

struct Chain {
  explicit Chain(int length) {
    auto as_default = graph.AsDefault();
    x = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape({}), "x");
    ft::Output one = ft::ops::Const(1.0f);
    out = x;
    for (int i = 0; i < length; ++i) out = ft::ops::Add(out, one);
    ft::SessionOptions options;
    options.config.inter_op_parallelism_threads = 2;
    session = std::make_unique<ft::Session>(graph, options);
    feed = ft::Tensor::Scalar<float>(0.0f);
  }
  float Run() { return session->Run({{x, feed}}, {out})[0].scalar<float>(); }

  ft::Graph graph;
  ft::Output x, out;
  ft::Tensor feed;
  std::unique_ptr<ft::Session> session;
};

std::map<int, double> g_ns_per_run;
double g_direct_ns_per_add = 0;

void BM_SessionRunChain(benchmark::State& state) {
  const int length = static_cast<int>(state.range(0));
  Chain chain(length);
  if (chain.Run() != static_cast<float>(length)) state.SkipWithError("wrong result");
  for (auto _ : state) benchmark::DoNotOptimize(chain.Run());
  state.counters["ns_per_run"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SessionRunChain)->Arg(1)->Arg(100)->MinTime(1.0);

void BM_DirectAdds(benchmark::State& state) {
  const int length = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ft::Tensor value = ft::Tensor::Scalar<float>(0.0f);
    for (int i = 0; i < length; ++i) {
      ft::Tensor next(ft::DT_FLOAT, ft::TensorShape());
      next.scalar<float>() = value.scalar<float>() + 1.0f;
      value = std::move(next);
    }
    benchmark::DoNotOptimize(value.scalar<float>());
  }
}
BENCHMARK(BM_DirectAdds)->Arg(100)->MinTime(0.5);

// Collects the per-iteration times to print the RESULT lines after the run.
class Collector : public benchmark::ConsoleReporter {
 public:
  // No colours: a ConsoleReporter made here colours its lines whatever --benchmark_color says,
  // and the reset sequence it leaves would start the first RESULT line, which `grep ^RESULT`
  // (scripts/bench) then misses.
  Collector() : ConsoleReporter(OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const double ns = run.GetAdjustedRealTime();  // per iteration, in ns (default unit)
      const std::string name = run.benchmark_name();
      if (name.rfind("BM_SessionRunChain/", 0) == 0) {
        g_ns_per_run[std::stoi(name.substr(name.find('/') + 1))] = ns;
      } else if (name.rfind("BM_DirectAdds/", 0) == 0) {
        g_direct_ns_per_add = ns / 100.0;
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Collector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::cout << std::flush;  // the reporter's lines before the RESULT lines (stdio) after them
  if (g_ns_per_run.count(1) && g_ns_per_run.count(100)) {
    const double per_node = (g_ns_per_run[100] - g_ns_per_run[1]) / 99.0;
    const double fixed = g_ns_per_run[1] - per_node;
    std::printf("RESULT executor_chain100 flowtrain ns_per_node %.1f\n", per_node);
    std::printf("RESULT executor_chain100 flowtrain fixed_ns_per_run %.1f\n", fixed);
    std::printf("RESULT executor_chain100 flowtrain ns_per_run %.1f\n", g_ns_per_run[100]);
    if (g_direct_ns_per_add > 0) {
      std::printf("RESULT executor_chain100 direct ns_per_node %.1f\n", g_direct_ns_per_add);
      std::printf("RESULT executor_chain100 flowtrain overhead_vs_direct %.2f\n",
                  per_node / g_direct_ns_per_add);
    }
  }
  benchmark::Shutdown();
  return 0;
}
