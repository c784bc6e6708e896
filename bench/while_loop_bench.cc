// TF1 while loop cost: a 10,000-iteration loop of a scalar add (i += 1 while i < 10000),
// built from the control-flow primitives as tf.compat.v1.while_loop builds it, run through a
// cached Session::Run; TensorFlow's own while_loop in a tf.compat.v1 Session, same process
// run, as the reference. Prints the best of several runs:
//   RESULT while_loop_10k flowtrain us_per_iter <v>     (target <= 0.5)
//   RESULT while_loop_10k tensorflow us_per_iter <v>
//   RESULT while_loop_10k flowtrain speedup_vs_tensorflow <ratio>  (target >= 3)
// TensorFlow is run with the Python given at build time (FLOWTRAIN_TF_PYTHON), skipped when
// there is none, in the fastest of the peer configurations it tries (see below).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "flowtrain/flowtrain.h"

namespace ft = flowtrain;

namespace {

constexpr int kIterations = 10000;
constexpr int kRuns = 20;

double FlowtrainMicrosPerIteration(int runs) {
  ft::Graph graph;
  auto as_default = graph.AsDefault();
  const std::string frame = "while/while_context";
  ft::Output zero = ft::ops::Const(0, "Const");
  ft::Output enter = ft::ops::Enter(zero, frame, {}, "while/Enter");
  ft::ops::MergeOutputs merge = ft::ops::Merge({enter, enter}, "while/Merge");
  ft::Output limit = ft::ops::Enter(ft::ops::Const(kIterations, "while/Less/y"), frame, {.is_constant = true},
                                    "while/Less/Enter");
  ft::Output cond = ft::ops::LoopCond(ft::ops::Less(merge.output, limit, "while/Less"), "while/LoopCond");
  ft::ops::SwitchOutputs sw = ft::ops::Switch(merge.output, cond, "while/Switch");
  ft::Output body = ft::ops::Identity(sw.output_true, "while/Identity");
  ft::Output one =
      ft::ops::Enter(ft::ops::Const(1, "while/add/y"), frame, {.is_constant = true}, "while/add/Enter");
  ft::Output next = ft::ops::NextIteration(ft::ops::Add(body, one, "while/add"), "while/NextIteration");
  graph.UpdateInput(merge.output.op(), 1, next);
  ft::Output exit = ft::ops::Exit(sw.output_false, "while/Exit");

  ft::Session session(graph);
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const int result = session.Run({}, {exit})[0].scalar<int32_t>();
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (result != kIterations) {
      std::fprintf(stderr, "flowtrain loop computed %d, expected %d\n", result, kIterations);
      std::exit(1);
    }
    best = std::min(best, us / kIterations);
  }
  return best;
}

// TensorFlow's figure in its best configuration, or a negative number when it cannot run.
// Its peer configuration is searched, not assumed: glibc's malloc and jemalloc (Debian's
// libjemalloc2, when installed), oneDNN's options off and on, and session thread counts
// (intra/inter-op 0 = TF's default, 1/1, 2/2, 1/2, 2/1). `best_config` names the winner.
double TensorflowMicrosPerIteration(std::string* best_config) {
#ifdef FLOWTRAIN_WHILE_BENCH_TF_PYTHON
  const std::string script = std::string(" - <<'EOF'\n") +
                             "import os, time\n"
                             "os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
                             "import tensorflow.compat.v1 as tf\n"
                             "tf.disable_v2_behavior()\n"
                             "n = " +
                             std::to_string(kIterations) +
                             "\n"
                             "i = tf.constant(0)\n"
                             "out = tf.while_loop(lambda i: i < n, lambda i: i + 1, [i])\n"
                             "for intra, inter in [(0, 0), (1, 1), (2, 2), (1, 2), (2, 1)]:\n"
                             "  config = tf.ConfigProto(intra_op_parallelism_threads=intra,\n"
                             "                          inter_op_parallelism_threads=inter)\n"
                             "  with tf.Session(config=config) as s:\n"
                             "    best = 1e30\n"
                             "    for _ in range(" +
                             std::to_string(kRuns) +
                             "):\n"
                             "      t = time.perf_counter(); r = s.run(out); t = time.perf_counter() - t\n"
                             "      assert r == n, r\n"
                             "      best = min(best, t * 1e6 / n)\n"
                             "    print(best, 'intra_op=%d,inter_op=%d' % (intra, inter))\n"
                             "EOF\n";
  const std::string jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
  std::vector<std::string> allocators = {""};
  if (FILE* f = std::fopen(jemalloc.c_str(), "r"); f != nullptr) {
    std::fclose(f);
    allocators.push_back(jemalloc);
  }
  double best = -1;
  for (const std::string& allocator : allocators) {
    for (const char* onednn : {"0", "1"}) {
      const std::string env = std::string("TF_ENABLE_ONEDNN_OPTS=") + onednn +
                              (allocator.empty() ? "" : " LD_PRELOAD=" + allocator) + " ";
      FILE* pipe = popen((env + FLOWTRAIN_WHILE_BENCH_TF_PYTHON + script).c_str(), "r");
      if (pipe == nullptr) continue;
      double us;
      char threads[64];
      while (std::fscanf(pipe, "%lf %63s", &us, threads) == 2) {
        if (best < 0 || us < best) {
          best = us;
          *best_config = std::string(threads) + ",onednn=" + onednn +
                         ",malloc=" + (allocator.empty() ? "glibc" : "jemalloc");
        }
      }
      pclose(pipe);
    }
  }
  return best;
#else
  (void)best_config;
  return -1;
#endif
}

}  // namespace

// `--flowtrain_only N` runs flowtrain's loop N times and not TensorFlow (to profile it).
int main(int argc, char** argv) {
  const bool flowtrain_only = argc == 3 && std::string(argv[1]) == "--flowtrain_only";
  const double flowtrain = FlowtrainMicrosPerIteration(flowtrain_only ? std::atoi(argv[2]) : kRuns);
  std::printf("RESULT while_loop_10k flowtrain us_per_iter %.4f\n", flowtrain);
  if (flowtrain_only) return 0;
  std::string tensorflow_config;
  const double tensorflow = TensorflowMicrosPerIteration(&tensorflow_config);
  if (tensorflow < 0) {
    std::printf("(TensorFlow not run: no FLOWTRAIN_TF_PYTHON at build time, or it failed)\n");
    return 0;
  }
  std::printf("RESULT while_loop_10k tensorflow us_per_iter %.4f (%s)\n", tensorflow,
              tensorflow_config.c_str());
  std::printf("RESULT while_loop_10k flowtrain speedup_vs_tensorflow %.2f\n", tensorflow / flowtrain);
  return 0;
}
