// The distributed runtime on loopback, flowtrain against TensorFlow's own ps/worker runtime
// (tf.distribute.Server + replica_device_setter, bench/distributed_bench_tf.py) on the same
// workloads, one ps task and one worker task in one process each side:
//
//   RESULT tensor_100mb flowtrain gb_per_s <v>        a 100 MB float variable on the ps read
//   RESULT tensor_100mb tensorflow gb_per_s <v>       by an op on the worker (target >= 2)
//   RESULT logreg_784x10 flowtrain us_per_step <v>    a 784x10 logistic-regression SGD step,
//   RESULT logreg_784x10 flowtrain_in_process us_per_step <v>  batch 64, variables on the ps
//   RESULT logreg_784x10 flowtrain fraction_of_in_process <v>   (target <= 300 us, >= 0.5)
//   RESULT logreg_784x10 tensorflow us_per_step <v>
//   RESULT logreg_784x10 flowtrain speedup_vs_tensorflow <v>    (target >= 2)
//
// Each figure is the median of its timed runs. TensorFlow is the Python given at build time
// (FLOWTRAIN_TF_PYTHON), tried under each allocator, oneDNN off and on, and three thread
// settings; the fastest is reported with its configuration.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "flowtrain/flowtrain.h"
#include "peer_bench_util.h"

namespace ft = flowtrain;
namespace ops = ft::ops;

namespace {

constexpr int64_t kTensorFloats = 100 * 1000 * 1000 / 4;  // 100 MB
constexpr int kTransferRuns = 10;
constexpr int kStepWarmup = 50;
constexpr int kSteps = 500;

template <typename Fn>
double MedianMillis(int runs, Fn&& fn) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

double FlowtrainTransferMillis() {
  ft::distributed::LocalCluster local = ft::distributed::CreateLocalCluster(1, 1);
  ft::Graph g;
  auto as_default = g.AsDefault();
  ft::Variable v;
  {
    auto ps = g.Device("/job:ps/task:0");
    v = ft::Variable(ops::Fill(ops::Const<int64_t>({kTensorFloats}), ops::Const(1.0f)), {.name = "v"});
  }
  ft::Output first = ops::ReduceSum(ops::Slice(v, {0}, {1}));  // on the worker: v crosses
  auto sess = ft::NewSession(g, {.target = local.workers[0]->target()});
  sess->Run({}, {}, {ops::GlobalVariablesInitializer()});
  sess->Run({}, {first}, {});
  return MedianMillis(kTransferRuns, [&] {
    if (sess->Run({}, {first}, {})[0].scalar<float>() != 1.0f) std::abort();
  });
}

// The model of the step workload; `cluster` null for the in-process session.
struct LogReg {
  explicit LogReg(const ft::distributed::ClusterSpec* cluster) {
    auto as_default = graph.AsDefault();
    auto placement = graph.Device(ft::train::ReplicaDeviceSetter({.cluster = cluster}));
    ft::Variable step = ft::train::GetOrCreateGlobalStep();
    x = ops::Placeholder(ft::DT_FLOAT, {64, 784}, "x");
    labels = ops::Placeholder(ft::DT_INT64, {64}, "labels");
    ft::Variable w(ops::Fill(ops::Const<int64_t>({784, 10}), ops::Const(0.0f)), {.name = "w"});
    ft::Variable b(ops::Fill(ops::Const<int64_t>({10}), ops::Const(0.0f)), {.name = "b"});
    loss = ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(labels, ops::Add(ops::MatMul(x, w), b)));
    train_op = ft::train::GradientDescentOptimizer(0.1).Minimize(loss, step);
    init = ops::GlobalVariablesInitializer();
  }
  ft::FeedList Batch() const {
    ft::Tensor images(ft::DT_FLOAT, ft::TensorShape({64, 784}));
    ft::Tensor classes(ft::DT_INT64, ft::TensorShape({64}));
    for (int64_t i = 0; i < images.NumElements(); ++i)
      images.flat<float>()[i] = static_cast<float>(i % 255) / 255;
    for (int64_t i = 0; i < 64; ++i) classes.flat<int64_t>()[i] = i % 10;
    return {{x, images}, {labels, classes}};
  }
  double MedianStepMicros(ft::SessionInterface& sess) const {
    sess.Run({}, {}, {init});
    const ft::FeedList batch = Batch();
    for (int i = 0; i < kStepWarmup; ++i) sess.Run(batch, {}, {train_op});
    return 1000 * MedianMillis(kSteps, [&] { sess.Run(batch, {}, {train_op}); });
  }

  ft::Graph graph;
  ft::Output x, labels, loss;
  ft::Operation train_op, init;
};

// TensorFlow's best figure for `workload` ("transfer" ms, "step" ms), or negative.
double TensorflowMillis(const std::string& workload, std::string* config) {
#ifdef FLOWTRAIN_DISTRIBUTED_BENCH_TF
  double best = -1;
  for (const bench::PeerEnv& env : bench::TensorFlowEnvs()) {
    for (const bench::PeerLine& line :
         bench::RunPeerLines(env.env + FLOWTRAIN_DISTRIBUTED_BENCH_TF + " " + workload + " 2>/dev/null", 1)) {
      if (best < 0 || line.ms < best) {
        best = line.ms;
        *config = line.config + "," + env.label;
      }
    }
  }
  return best;
#else
  (void)workload;
  (void)config;
  return -1;
#endif
}

}  // namespace

int main() {
  const double transfer_ms = FlowtrainTransferMillis();
  const double gigabytes = kTensorFloats * 4 / 1e9;
  std::printf("RESULT tensor_100mb flowtrain gb_per_s %.3f (%.1f ms)\n", gigabytes / (transfer_ms / 1000),
              transfer_ms);
  std::string config;
  if (const double tf_ms = TensorflowMillis("transfer", &config); tf_ms > 0) {
    std::printf("RESULT tensor_100mb tensorflow gb_per_s %.3f (%.1f ms; %s)\n", gigabytes / (tf_ms / 1000),
                tf_ms, config.c_str());
    std::printf("RESULT tensor_100mb flowtrain speedup_vs_tensorflow %.2f\n", tf_ms / transfer_ms);
  }

  ft::distributed::LocalCluster local = ft::distributed::CreateLocalCluster(1, 1);
  LogReg distributed_model(&local.cluster), in_process_model(nullptr);
  const double distributed_us = distributed_model.MedianStepMicros(
      *ft::NewSession(distributed_model.graph, {.target = local.workers[0]->target()}));
  const double in_process_us = in_process_model.MedianStepMicros(*ft::NewSession(in_process_model.graph, {}));
  std::printf("RESULT logreg_784x10 flowtrain us_per_step %.1f\n", distributed_us);
  std::printf("RESULT logreg_784x10 flowtrain_in_process us_per_step %.1f\n", in_process_us);
  std::printf("RESULT logreg_784x10 flowtrain fraction_of_in_process %.3f\n", in_process_us / distributed_us);
  if (const double tf_ms = TensorflowMillis("step", &config); tf_ms > 0) {
    std::printf("RESULT logreg_784x10 tensorflow us_per_step %.1f (%s)\n", tf_ms * 1000, config.c_str());
    std::printf("RESULT logreg_784x10 flowtrain speedup_vs_tensorflow %.2f\n", tf_ms * 1000 / distributed_us);
  } else {
    std::printf("(TensorFlow not run: no FLOWTRAIN_TF_PYTHON at build time, or it failed)\n");
  }
  return 0;
}
