// Ops, kernels and optimizers side by side (issue 3): the same training workloads, on the same
// synthetic data (ops_bench_data.h), in flowtrain, libtorch C++ and PyTorch, at most 2 threads,
// float32; prints each figure and the ratio flowtrain / fastest correct peer configuration.
//
//   ops_bench [--rounds 3] [--budget-seconds 150] [--only W1,W2,W2b,W3,W4,CNN,GEMM] [--no-peers]
//
// Workloads (sizes and step counts in ops_bench_data.h):
//   W1    10 scalar Adds per step                          steps_per_sec, per_op_us
//   W2    MLP 784-256-256-10, ReLU, softmax xent, SGD 0.1, batch 64     examples_per_sec
//   W2b   the same with Adam 1e-3                          examples_per_sec
//   W3    MLP 784-2048-2048-10, batch 256, SGD 0.1         examples_per_sec, matmul_gflops
//   W4    logistic regression, 1000 features, batch 1024   examples_per_sec
//   CNN   2 x (conv 5x5 SAME + ReLU + max-pool 2x2), 32 and 64 channels, dense 128, dense 10,
//         28x28x1, batch 64, SGD 0.01                      examples_per_sec
//   GEMM  1024^3 and 2048^3 sgemm: Eigen built for this CPU on 1 thread and on 2 (each thread
//         one half of C's rows on 1-thread Eigen), flowtrain's MatMul op in a Session, the peers'
//         torch.mm                                          gflops
// flowtrain builds each model as a graph (ops::, layers::, train:: optimizers) and times
// Session::Run of the train op with the batch fed through placeholders (x, y); the peers read
// the same prepared batches from memory. Every system reports the loss of its last step
// (final_loss) after the same number of updates. W3's matmul_gflops is the MatMul FLOPs of a
// step over the whole step's time (so a lower bound), compared with the machine's sgemm peak:
// the best GEMM figure of any system in the run; for flowtrain, matmul_kernels_gflops divides
// them by the time during which MatMul kernels ran (from a traced run of three more steps).
//
// The peers run as child processes — ops_bench_libtorch (beside this binary) and
// ops_bench_pytorch.py. libtorch runs with 1 and 2 threads, each with the machine's
// OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE and (when the machine sets either) with both unset;
// PyTorch, the same library underneath, with 1 and 2 threads in the OPENBLAS environment that
// won most workloads for libtorch. A configuration counts for a workload only if its result
// matches the peer's reference configuration (1 thread, machine environment; tolerances in
// ops_bench_data.h); flowtrain is compared with the fastest counting one. Each round runs
// flowtrain and every peer configuration, each in a fresh process (flowtrain first, then last,
// in turn; `--flowtrain-child` is how this program runs itself for that), and every
// figure is the median over the rounds (shared machines are noisy); no round starts that
// would likely end past --budget-seconds, and a peer run taking over a minute is dropped.
//
// Prints `RESULT <workload> <system> <metric> <value>` for flowtrain, eigen, libtorch and
// pytorch (the peers' fastest correct configuration, named by a `config` line), ratios such as
//   RESULT W2 flowtrain vs_libtorch 1.62
// and, on stderr, every configuration's figures and a summary against the issue's targets.
#include <sys/wait.h>

// GCC 12 warns inside its own AVX-512 intrinsics when Eigen's GEMM is instantiated here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "flowtrain/flowtrain.h"
#include "ops_bench_data.h"

namespace ft = flowtrain;

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// (workload, metric) -> value: what one run of one system configuration measured.
using Figures = std::map<std::pair<std::string, std::string>, double>;

const std::vector<std::string> kWorkloads = {"W1", "W2", "W2b", "W3", "W4", "CNN", "GEMM"};

// ---- Data ------------------------------------------------------------------------------

ft::Tensor UniformTensor(const ft::TensorShape& shape, uint64_t seed, float scale) {
  ft::Tensor t(ft::DT_FLOAT, shape);
  opsbench::FillUniform(t.data<float>(), t.NumElements(), seed, scale);
  return t;
}

ft::Tensor LabelTensor(int64_t n, uint64_t seed, int64_t classes) {
  ft::Tensor t(ft::DT_INT64, ft::TensorShape({n}));
  opsbench::FillLabels(t.data<int64_t>(), n, seed, classes);
  return t;
}

// A glorot-uniform kernel of the shared generator, as a constant initializer.
ft::ops::Initializer Kernel(const ft::TensorShape& shape, uint64_t seed, int64_t fan_in, int64_t fan_out) {
  return ft::ops::ConstantInitializer(UniformTensor(shape, seed, opsbench::GlorotLimit(fan_in, fan_out)));
}

ft::Output Dense(ft::Output x, int64_t in, int64_t units, uint64_t seed, ft::layers::Activation activation) {
  return ft::layers::Dense(x, units, std::move(activation),
                           {.kernel_initializer = Kernel(ft::TensorShape({in, units}), seed, in, units)});
}

// flowtrain's side uses at most two threads, as the peers.
ft::SessionOptions TwoThreads() {
  ft::SessionOptions options;
  options.config.intra_op_parallelism_threads = 2;
  options.config.inter_op_parallelism_threads = 2;
  return options;
}

// ---- flowtrain's workloads -----------------------------------------------------------------

// A model trained by Session::Run of its train op, batches fed to placeholders x and y.
struct TrainingGraph {
  ft::Graph graph;
  ft::Output x, y, loss;
  ft::Operation train_op, init;
  std::unique_ptr<ft::Session> session;
  std::vector<ft::Tensor> xs, ys;

  // From fresh variables: warmup + timed steps; returns timed steps/s and the last step's loss.
  std::pair<double, float> Train(opsbench::Steps steps) {
    session->Run({}, {}, {init});
    auto feeds = [&](int i) -> ft::FeedList { return {{x, xs[i % xs.size()]}, {y, ys[i % ys.size()]}}; };
    for (int i = 0; i < steps.warmup; ++i) session->Run(feeds(i), {}, {train_op});
    const auto start = Clock::now();
    for (int i = 0; i < steps.timed - 1; ++i) session->Run(feeds(steps.warmup + i), {}, {train_op});
    const float final_loss =
        session->Run(feeds(steps.warmup + steps.timed - 1), {loss}, {train_op})[0].scalar<float>();
    return {steps.timed / SecondsSince(start), final_loss};
  }

  // After Train: `steps` more steps traced, returning the wall time during which at least one
  // MatMul kernel ran (they may overlap) and the steps' wall time, in seconds. (Tracing costs
  // a little; these steps are not timed.)
  std::pair<double, double> MatMulAndStepSeconds(int steps) {
    ft::RunOptions options;
    options.trace_level = ft::RunOptions::kFullTrace;
    int64_t matmul_micros = 0;
    const auto start = Clock::now();
    for (int i = 0; i < steps; ++i) {
      ft::RunMetadata metadata;
      session->Run({{x, xs[i % xs.size()]}, {y, ys[i % ys.size()]}}, {}, {train_op}, &options, &metadata);
      std::vector<std::pair<int64_t, int64_t>> intervals;
      for (const auto& device : metadata.step_stats().dev_stats()) {
        for (const auto& node : device.node_stats()) {
          // The plan's fused MatMuls (runtime/graph_rewrite.h) count too: the bias, ReLU,
          // ReLU gradient or SGD update they fold in is a small part of their time.
          const std::string& label = node.timeline_label();
          if (label.ends_with("= MatMul()") || label.ends_with("= _FusedMatMul()") ||
              label.ends_with("= _FusedMatMulReluGrad()") ||
              label.ends_with("= _FusedMatMulApplyGradientDescent()")) {
            intervals.emplace_back(node.all_start_micros(),
                                   node.all_start_micros() + node.op_end_rel_micros());
          }
        }
      }
      std::sort(intervals.begin(), intervals.end());
      int64_t covered_until = std::numeric_limits<int64_t>::min();
      for (auto [begin, end] : intervals) {
        begin = std::max(begin, covered_until);
        if (end > begin) matmul_micros += end - begin;
        covered_until = std::max(covered_until, end);
      }
    }
    return {matmul_micros * 1e-6, SecondsSince(start)};
  }
};

// Builds x, y, the model (`logits_fn(x)`), the mean loss, the optimizer's train op and the
// session; `make_batch(b)` gives batch b's (x, y).
template <typename LogitsFn, typename LossFn, typename BatchFn>
std::unique_ptr<TrainingGraph> BuildTraining(const ft::PartialTensorShape& x_shape, ft::DataType y_dtype,
                                             const ft::PartialTensorShape& y_shape, LogitsFn logits_fn,
                                             LossFn loss_fn, ft::train::Optimizer&& optimizer, int batches,
                                             BatchFn make_batch) {
  auto t = std::make_unique<TrainingGraph>();
  {
    auto as_default = t->graph.AsDefault();
    t->x = ft::ops::Placeholder(ft::DT_FLOAT, x_shape, "x");
    t->y = ft::ops::Placeholder(y_dtype, y_shape, "y");
    t->loss = loss_fn(t->y, logits_fn(t->x));
    t->train_op = optimizer.Minimize(t->loss);
    t->init = ft::ops::GlobalVariablesInitializer();
  }
  t->session = std::make_unique<ft::Session>(t->graph, TwoThreads());
  for (int b = 0; b < batches; ++b) {
    auto [bx, by] = make_batch(b);
    t->xs.push_back(bx);
    t->ys.push_back(by);
  }
  return t;
}

ft::Output SoftmaxLoss(ft::Output labels, ft::Output logits) {
  return ft::ops::ReduceMean(ft::ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits));
}

std::unique_ptr<TrainingGraph> BuildMlp(int64_t hidden, int64_t batch, uint64_t seed, bool adam,
                                        int batches) {
  auto logits = [&](ft::Output x) {
    const uint64_t w = seed + opsbench::kWeightSeedOffset;
    ft::Output h = Dense(x, opsbench::kMlpIn, hidden, w, ft::ops::Relu);
    h = Dense(h, hidden, hidden, w + 1, ft::ops::Relu);
    return Dense(h, hidden, opsbench::kMlpClasses, w + 2, nullptr);
  };
  auto batch_fn = [&](int b) {
    return std::pair(UniformTensor(ft::TensorShape({batch, opsbench::kMlpIn}), seed + 2 * b, 1.0f),
                     LabelTensor(batch, seed + 2 * b + 1, opsbench::kMlpClasses));
  };
  const ft::PartialTensorShape x_shape({batch, opsbench::kMlpIn}), y_shape({batch});
  if (adam) {
    return BuildTraining(x_shape, ft::DT_INT64, y_shape, logits, SoftmaxLoss,
                         ft::train::AdamOptimizer(opsbench::kAdamLearningRate), batches, batch_fn);
  }
  return BuildTraining(x_shape, ft::DT_INT64, y_shape, logits, SoftmaxLoss,
                       ft::train::GradientDescentOptimizer(opsbench::kSgdLearningRate), batches, batch_fn);
}

// Logistic regression with TF's sigmoid_cross_entropy_with_logits, written out as TF1 builds
// it: max(z, 0) - z * y + log(1 + exp(-|z|)).
std::unique_ptr<TrainingGraph> BuildLogisticRegression() {
  const int64_t batch = opsbench::kW4Batch, features = opsbench::kW4Features;
  auto logits = [](ft::Output x) {
    return Dense(x, opsbench::kW4Features, 1, opsbench::kW4Seed + opsbench::kWeightSeedOffset, nullptr);
  };
  auto loss = [](ft::Output y, ft::Output z) {
    using namespace ft::ops;
    return ReduceMean(Relu(z) - z * y + Log1p(Exp(Neg(Abs(z)))));
  };
  auto batch_fn = [&](int b) {
    ft::Tensor labels(ft::DT_FLOAT, ft::TensorShape({batch, 1}));
    ft::Tensor classes = LabelTensor(batch, opsbench::kW4Seed + 2 * b + 1, 2);
    for (int64_t i = 0; i < batch; ++i)
      labels.data<float>()[i] = static_cast<float>(classes.data<int64_t>()[i]);
    return std::pair(UniformTensor(ft::TensorShape({batch, features}), opsbench::kW4Seed + 2 * b, 1.0f),
                     labels);
  };
  return BuildTraining(ft::PartialTensorShape({batch, features}), ft::DT_FLOAT,
                       ft::PartialTensorShape({batch, 1}), logits, loss,
                       ft::train::GradientDescentOptimizer(opsbench::kSgdLearningRate),
                       opsbench::kW4Steps.batches, batch_fn);
}

std::unique_ptr<TrainingGraph> BuildCnn() {
  using opsbench::kCnnKernel;
  const int64_t batch = opsbench::kCnnBatch, side = opsbench::kCnnSide;
  auto conv = [](ft::Output x, int64_t in, int64_t out, uint64_t seed) {
    const int64_t k = kCnnKernel;
    return ft::layers::MaxPooling2D(
        ft::layers::Conv2D(
            x, out, {k, k}, {1, 1}, "same", ft::ops::Relu,
            {.kernel_initializer = Kernel(ft::TensorShape({k, k, in, out}), seed, k * k * in, k * k * out)}),
        {2, 2}, {2, 2});
  };
  auto logits = [&](ft::Output x) {
    const uint64_t w = opsbench::kCnnSeed + opsbench::kWeightSeedOffset;
    ft::Output h = conv(x, 1, opsbench::kCnnConv1, w);
    h = conv(h, opsbench::kCnnConv1, opsbench::kCnnConv2, w + 1);
    h = Dense(ft::layers::Flatten(h), opsbench::kCnnFlat, opsbench::kCnnDense, w + 2, ft::ops::Relu);
    return Dense(h, opsbench::kCnnDense, opsbench::kMlpClasses, w + 3, nullptr);
  };
  auto batch_fn = [&](int b) {
    return std::pair(UniformTensor(ft::TensorShape({batch, side, side, 1}), opsbench::kCnnSeed + 2 * b, 1.0f),
                     LabelTensor(batch, opsbench::kCnnSeed + 2 * b + 1, opsbench::kMlpClasses));
  };
  return BuildTraining(ft::PartialTensorShape({batch, side, side, 1}), ft::DT_INT64,
                       ft::PartialTensorShape({batch}), logits, SoftmaxLoss,
                       ft::train::GradientDescentOptimizer(opsbench::kCnnLearningRate),
                       opsbench::kCnnSteps.batches, batch_fn);
}

// W1: a fed scalar plus the constants 0.5, 1.0, ..., 5.0, one Add each.
struct TinySteps {
  TinySteps() {
    auto as_default = graph.AsDefault();
    x = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape({}), "x");
    sum = x;
    for (int k = 1; k <= opsbench::kW1Adds; ++k) sum = ft::ops::Add(sum, ft::ops::Const(0.5f * k));
    session = std::make_unique<ft::Session>(graph, TwoThreads());
  }
  void Measure(Figures& out) {
    const ft::Tensor one = ft::Tensor::Scalar<float>(1.0f);
    for (int i = 0; i < opsbench::kW1Steps.warmup; ++i) session->Run({{x, one}}, {sum});
    const auto start = Clock::now();
    ft::Tensor result;
    for (int i = 0; i < opsbench::kW1Steps.timed; ++i) result = session->Run({{x, one}}, {sum})[0];
    const double per_sec = opsbench::kW1Steps.timed / SecondsSince(start);
    out[{"W1", "steps_per_sec"}] = per_sec;
    out[{"W1", "per_op_us"}] = 1e6 / per_sec / opsbench::kW1Adds;
    out[{"W1", "final_loss"}] = result.scalar<float>();
  }
  ft::Graph graph;
  ft::Output x, sum;
  std::unique_ptr<ft::Session> session;
};

// GEMM on the flowtrain side: Eigen (the library under flowtrain's kernels) on 1 and 2
// threads, and the MatMul op through a Session.
struct Gemm {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  explicit Gemm(opsbench::GemmSize size) : size(size) {
    const int64_t n = size.n;
    a_tensor = UniformTensor(ft::TensorShape({n, n}), opsbench::kGemmSeed, 1.0f);
    b_tensor = UniformTensor(ft::TensorShape({n, n}), opsbench::kGemmSeed + 1, 1.0f);
    a = Eigen::Map<const Matrix>(a_tensor.data<float>(), n, n);
    b = Eigen::Map<const Matrix>(b_tensor.data<float>(), n, n);
    c.resize(n, n);
    auto as_default = graph.AsDefault();
    product = ft::ops::MatMul(ft::ops::Const(a_tensor), ft::ops::Const(b_tensor));
    session = std::make_unique<ft::Session>(graph, TwoThreads());
  }

  // Rows [begin, end) of C on the calling thread (Eigen without OpenMP is single-threaded).
  void Rows(int64_t begin, int64_t end) {
    c.middleRows(begin, end - begin).noalias() = a.middleRows(begin, end - begin) * b;
  }
  void OneThread() { Rows(0, size.n); }
  void TwoThreadsSplit() {
    std::thread other([&] { Rows(size.n / 2, size.n); });
    Rows(0, size.n / 2);
    other.join();
  }

  template <typename Fn>
  double Gflops(Fn&& product_fn) {
    product_fn();
    const auto start = Clock::now();
    for (int r = 0; r < size.reps; ++r) product_fn();
    return 2.0 * size.n * size.n * double(size.n) * size.reps / SecondsSince(start) / 1e9;
  }

  void Measure(Figures& flowtrain, Figures& eigen) {
    const std::string w = "GEMM" + std::to_string(size.n);
    eigen[{w, "gflops_1t"}] = Gflops([&] { OneThread(); });
    eigen[{w, "gflops_2t"}] = Gflops([&] { TwoThreadsSplit(); });
    eigen[{w, "mean_abs_c"}] = c.cwiseAbs().mean();
    ft::Tensor result;
    flowtrain[{w, "gflops"}] = Gflops([&] { result = session->Run({}, {product})[0]; });
    double abs_sum = 0;
    for (float v : result.flat<float>()) abs_sum += std::fabs(v);
    flowtrain[{w, "mean_abs_c"}] = abs_sum / result.NumElements();
  }

  opsbench::GemmSize size;
  ft::Tensor a_tensor, b_tensor;
  Matrix a, b, c;
  ft::Graph graph;
  ft::Output product;
  std::unique_ptr<ft::Session> session;
};

// Every flowtrain workload, built once; Measure() runs one round of them all.
class FlowtrainBench {
 public:
  explicit FlowtrainBench(const std::set<std::string>& only) {
    auto wanted = [&](const char* w) { return only.empty() || only.count(w) > 0; };
    if (wanted("W1")) tiny_ = std::make_unique<TinySteps>();
    if (wanted("W2"))
      training_.emplace_back("W2", BuildMlp(opsbench::kW2Hidden, opsbench::kW2Batch, opsbench::kW2Seed, false,
                                            opsbench::kW2Steps.batches));
    if (wanted("W2b"))
      training_.emplace_back("W2b", BuildMlp(opsbench::kW2Hidden, opsbench::kW2Batch, opsbench::kW2Seed, true,
                                             opsbench::kW2Steps.batches));
    if (wanted("W3"))
      training_.emplace_back("W3", BuildMlp(opsbench::kW3Hidden, opsbench::kW3Batch, opsbench::kW3Seed, false,
                                            opsbench::kW3Steps.batches));
    if (wanted("W4")) training_.emplace_back("W4", BuildLogisticRegression());
    if (wanted("CNN")) training_.emplace_back("CNN", BuildCnn());
    if (wanted("GEMM")) {
      Eigen::initParallel();
      for (const opsbench::GemmSize& size : opsbench::kGemmSizes)
        gemms_.push_back(std::make_unique<Gemm>(size));
    }
  }

  // flowtrain's figures and Eigen's (the GEMM peak).
  std::pair<Figures, Figures> Measure() {
    Figures flowtrain, eigen;
    if (tiny_) tiny_->Measure(flowtrain);
    for (auto& [name, t] : training_) {
      const opsbench::Steps steps = name == "W2" || name == "W2b" ? opsbench::kW2Steps
                                    : name == "W3"                ? opsbench::kW3Steps
                                    : name == "W4"                ? opsbench::kW4Steps
                                                                  : opsbench::kCnnSteps;
      auto [per_sec, loss] = t->Train(steps);
      flowtrain[{name, "examples_per_sec"}] = per_sec * t->xs[0].dim_size(0);
      flowtrain[{name, "final_loss"}] = loss;
      if (name == "W3") {
        flowtrain[{name, "matmul_gflops"}] = opsbench::kW3MatMulFlops * per_sec / 1e9;
        // The MatMul kernels alone: their FLOPs over the time any of them ran (the trace's).
        const int traced_steps = 3;
        auto [matmul_seconds, step_seconds] = t->MatMulAndStepSeconds(traced_steps);
        flowtrain[{name, "matmul_kernels_gflops"}] =
            opsbench::kW3MatMulFlops * traced_steps / matmul_seconds / 1e9;
        flowtrain[{name, "matmul_share_of_step_pct"}] = 100 * matmul_seconds / step_seconds;
      }
    }
    for (auto& gemm : gemms_) gemm->Measure(flowtrain, eigen);
    return {flowtrain, eigen};
  }

 private:
  std::unique_ptr<TinySteps> tiny_;
  std::vector<std::pair<std::string, std::unique_ptr<TrainingGraph>>> training_;
  std::vector<std::unique_ptr<Gemm>> gemms_;
};

// ---- Peers ---------------------------------------------------------------------------------

// How a peer is run: its thread count, and whether the machine's OPENBLAS_* settings are kept.
struct PeerConfig {
  std::string peer;  // "libtorch" or "pytorch"
  int threads;
  bool unset_openblas_env;

  std::string Label() const {
    return peer + "[threads=" + std::to_string(threads) +
           ",openblas_env=" + (unset_openblas_env ? "unset" : "machine") + "]";
  }
  // The configuration whose results the others must match: one thread, the machine's settings.
  bool IsReference() const { return threads == 1 && !unset_openblas_env; }
};

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// The peers' programs as shell commands; empty when a peer cannot run here.
struct PeerPrograms {
  std::string libtorch;
  std::string pytorch;
  bool machine_sets_openblas = false;

  const std::string& Command(const std::string& peer) const {
    return peer == "libtorch" ? libtorch : pytorch;
  }
};

PeerPrograms FindPeers() {
  PeerPrograms programs;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::filesystem::path libtorch = self.parent_path() / "ops_bench_libtorch";
  if (std::filesystem::exists(libtorch)) {
    programs.libtorch = ShellQuote(libtorch.string());
  } else {
    std::fprintf(stderr, "ops_bench: %s not built (CMake found no Torch): no libtorch figures\n",
                 libtorch.c_str());
  }
  // Debian's interpreter first: python3-torch installs there, whatever python3 is on PATH.
  for (const char* python : {"/usr/bin/python3", "python3"}) {
    if (std::system((std::string(python) + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0) {
      programs.pytorch = std::string(python) + " " + ShellQuote(FLOWTRAIN_OPS_BENCH_PYTORCH);
      break;
    }
  }
  if (programs.pytorch.empty())
    std::fprintf(stderr, "ops_bench: no python3 imports torch: no pytorch figures\n");
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const char* l2_size = std::getenv("OPENBLAS_L2_SIZE");
  programs.machine_sets_openblas = coretype != nullptr || l2_size != nullptr;
  std::fprintf(stderr, "ops_bench: this machine sets OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s%s\n",
               coretype ? coretype : "(unset)", l2_size ? l2_size : "(unset)",
               programs.machine_sets_openblas ? "; peers also run with both unset" : "");
  return programs;
}

constexpr int kPeerTimeoutSeconds = 60;

// Runs `command` as a child process and collects the RESULT lines it prints; nullopt when it
// fails (its stderr says why). `label` names it in messages; `echo_info` passes its "# ..."
// lines on to stderr.
std::optional<Figures> RunChild(const std::string& command, const std::string& label, bool echo_info) {
  const auto start = Clock::now();
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  Figures figures;
  char line[1024];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    std::istringstream in(line);
    std::string tag, workload, system, metric;
    double value;
    in >> tag;
    if (tag == "RESULT" && (in >> workload >> system >> metric >> value)) {
      figures[{workload, metric}] = value;
    } else if (tag == "#" && echo_info) {
      std::fprintf(stderr, "  %s: %s", label.c_str(), line + 2);
    }
  }
  const int status = ::pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 124) {
    std::fprintf(stderr, "ops_bench: %s ran out of its %d s (a busy machine?); its figures are dropped\n",
                 label.c_str(), kPeerTimeoutSeconds);
    return std::nullopt;
  }
  if (status != 0) {
    std::fprintf(stderr, "ops_bench: %s failed (status %d); its figures are dropped\n", label.c_str(),
                 status);
    return std::nullopt;
  }
  if (echo_info) std::fprintf(stderr, "  %s: ran %.0f s\n", label.c_str(), SecondsSince(start));
  return figures;
}

// Runs a peer configuration as a child process; nullopt when it fails (its stderr says why).
std::optional<Figures> RunPeer(const PeerPrograms& programs, const PeerConfig& config,
                               const std::string& only, bool echo_info) {
  // A peer stalled by a busy machine (spinning OpenMP threads) is dropped, not waited for.
  std::string command = "timeout -k 5 " + std::to_string(kPeerTimeoutSeconds) + " env";
  if (config.unset_openblas_env) command += " -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE";
  const std::string threads = std::to_string(config.threads);
  command += " OMP_NUM_THREADS=" + threads + " " + programs.Command(config.peer) + " --threads " + threads;
  if (!only.empty()) command += " --only " + ShellQuote(only);
  return RunChild(command, config.Label(), echo_info);
}

// flowtrain's figures and Eigen's of one round, measured in a fresh process as the peers are:
// a process that sat idle while the peers ran measured up to a quarter slower afterwards on
// this virtual machine (which reclaims idle memory), so no system carries state between rounds.
std::optional<std::pair<Figures, Figures>> MeasureFlowtrainInChild(const std::string& self,
                                                                   const std::string& only) {
  std::string command = ShellQuote(self) + " --flowtrain-child";
  if (!only.empty()) command += " --only " + ShellQuote(only);
  std::optional<Figures> all = RunChild(command, "flowtrain", false);
  if (!all) return std::nullopt;
  // The child prints Eigen's figures under the workload name with an "eigen:" metric prefix.
  Figures flowtrain, eigen;
  for (const auto& [key, value] : *all) {
    if (key.second.rfind("eigen:", 0) == 0) {
      eigen[{key.first, key.second.substr(6)}] = value;
    } else {
      flowtrain[key] = value;
    }
  }
  return std::make_pair(flowtrain, eigen);
}

// ---- Results -------------------------------------------------------------------------------

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The figures of every round of each system label ("flowtrain", "eigen", a PeerConfig's
// label), and their medians.
class Runs {
 public:
  void Add(const std::string& label, const Figures& figures) { runs_[label].push_back(figures); }

  std::optional<double> Get(const std::string& label, const std::string& workload,
                            const std::string& metric) const {
    auto it = runs_.find(label);
    if (it == runs_.end()) return std::nullopt;
    std::vector<double> values;
    for (const Figures& f : it->second) {
      auto v = f.find({workload, metric});
      if (v != f.end()) values.push_back(v->second);
    }
    if (values.empty()) return std::nullopt;
    return Median(values);
  }

  // The metrics `label` measured for `workload`, sorted.
  std::vector<std::string> Metrics(const std::string& label, const std::string& workload) const {
    std::set<std::string> metrics;
    auto it = runs_.find(label);
    if (it != runs_.end()) {
      for (const Figures& f : it->second) {
        for (const auto& [key, value] : f) {
          if (key.first == workload) metrics.insert(key.second);
        }
      }
    }
    return {metrics.begin(), metrics.end()};
  }

 private:
  std::map<std::string, std::vector<Figures>> runs_;
};

bool IsGemm(const std::string& workload) { return workload.rfind("GEMM", 0) == 0; }

// The figure a workload is compared by, and the result that says it computed the right thing.
const char* SpeedMetric(const std::string& workload) {
  if (workload == "W1") return "steps_per_sec";
  return IsGemm(workload) ? "gflops" : "examples_per_sec";
}
const char* ResultMetric(const std::string& workload) {
  return IsGemm(workload) ? "mean_abs_c" : "final_loss";
}

bool SameResult(const std::string& workload, double value, double reference) {
  const double tolerance = workload == "W2" || workload == "W2b" ? opsbench::kLongReluTrainingLossTolerance
                                                                 : opsbench::kLossRelativeTolerance;
  return std::fabs(value - reference) <= tolerance * std::fabs(reference);
}

// The result every configuration of `peer` must match on `workload`: its reference
// configuration's, or flowtrain's when that one did not run.
std::optional<double> ReferenceResult(const Runs& runs, const std::vector<PeerConfig>& configs,
                                      const std::string& peer, const std::string& workload) {
  for (const PeerConfig& config : configs) {
    if (config.peer == peer && config.IsReference()) {
      if (auto result = runs.Get(config.Label(), workload, ResultMetric(workload))) return result;
    }
  }
  return runs.Get("flowtrain", workload, ResultMetric(workload));
}

// The fastest configuration of `peer` on `workload` whose result matches the reference; null
// if none. With `log`, every configuration's figures go to stderr.
const PeerConfig* Fastest(const Runs& runs, const std::vector<PeerConfig>& configs, const std::string& peer,
                          const std::string& workload, bool log) {
  const std::optional<double> reference = ReferenceResult(runs, configs, peer, workload);
  const PeerConfig* best = nullptr;
  double best_speed = 0;
  for (const PeerConfig& config : configs) {
    if (config.peer != peer) continue;
    const std::optional<double> speed = runs.Get(config.Label(), workload, SpeedMetric(workload));
    const std::optional<double> result = runs.Get(config.Label(), workload, ResultMetric(workload));
    if (!speed || !result) continue;
    const bool correct = reference && SameResult(workload, *result, *reference);
    if (log) {
      std::fprintf(stderr, "  %-8s %-42s %s %-10.5g %s %.6g%s\n", workload.c_str(), config.Label().c_str(),
                   SpeedMetric(workload), *speed, ResultMetric(workload), *result,
                   correct ? "" : "  (differs from the reference: not counted)");
    }
    if (correct && *speed > best_speed) {
      best = &config;
      best_speed = *speed;
    }
  }
  return best;
}

// The issue's targets: flowtrain / fastest correct libtorch configuration.
const std::map<std::string, double> kTargets = {{"W1", 3.0}, {"W2", 1.5}, {"W2b", 1.8},
                                                {"W3", 1.2}, {"W4", 1.3}, {"CNN", 1.2}};
constexpr double kW3MatMulShareTarget = 0.85;

void Result(const std::string& workload, const std::string& system, const std::string& metric, double value) {
  std::printf("RESULT %s %s %s %.6g\n", workload.c_str(), system.c_str(), metric.c_str(), value);
}

// Prints the RESULT lines (medians) and, on stderr, every configuration and the summary.
void Report(const Runs& runs, const std::vector<PeerConfig>& configs,
            const std::vector<std::string>& workloads) {
  const char* kPeers[] = {"libtorch", "pytorch"};
  // The machine's sgemm peak: the best correct GEMM figure of any system.
  double peak = 0;
  for (const std::string& w : workloads) {
    if (!IsGemm(w)) continue;
    for (const char* m : {"gflops_1t", "gflops_2t"})
      peak = std::max(peak, runs.Get("eigen", w, m).value_or(0));
    peak = std::max(peak, runs.Get("flowtrain", w, "gflops").value_or(0));
    for (const char* peer : kPeers) {
      if (const PeerConfig* best = Fastest(runs, configs, peer, w, false)) {
        peak = std::max(peak, *runs.Get(best->Label(), w, "gflops"));
      }
    }
  }
  std::vector<std::string> summary;
  for (const std::string& w : workloads) {
    const char* speed = SpeedMetric(w);
    for (const char* system : {"eigen", "flowtrain"}) {
      for (const std::string& m : runs.Metrics(system, w)) Result(w, system, m, *runs.Get(system, w, m));
    }
    const std::optional<double> ours = runs.Get("flowtrain", w, speed);
    const std::optional<double> our_result = runs.Get("flowtrain", w, ResultMetric(w));
    std::string line = w;
    line.resize(9, ' ');
    for (const char* peer : kPeers) {
      const PeerConfig* best = Fastest(runs, configs, peer, w, true);
      if (best == nullptr) continue;
      const std::string label = best->Label();
      for (const std::string& m : runs.Metrics(label, w)) Result(w, peer, m, *runs.Get(label, w, m));
      std::printf("RESULT %s %s config %s\n", w.c_str(), peer, label.c_str());
      if (w == "W3" && peak > 0)
        Result(w, peer, "matmul_pct_of_sgemm_peak", 100 * *runs.Get(label, w, "matmul_gflops") / peak);
      if (!ours || !our_result) continue;
      const double ratio = *ours / *runs.Get(label, w, speed);
      Result(w, "flowtrain", std::string("vs_") + peer, ratio);
      const std::optional<double> reference = ReferenceResult(runs, configs, peer, w);
      Result(w, "flowtrain", std::string("result_matches_") + peer,
             SameResult(w, *our_result, *reference) ? 1 : 0);
      char part[160];
      std::snprintf(part, sizeof(part), " %.2fx vs %s", ratio, label.c_str());
      line += part;
      auto target = kTargets.find(w);
      if (std::string(peer) == "libtorch" && target != kTargets.end()) {
        std::snprintf(part, sizeof(part), " (target >= %.1fx: %s)", target->second,
                      ratio >= target->second ? "met" : "MISSED");
        line += part;
      }
    }
    if (line.size() > 9) summary.push_back(line);
    if (w == "W3" && peak > 0) {
      if (auto gflops = runs.Get("flowtrain", w, "matmul_gflops")) {
        const double share = *gflops / peak;
        Result(w, "flowtrain", "matmul_pct_of_sgemm_peak", 100 * share);
        char part[200];
        std::snprintf(part, sizeof(part),
                      "W3       matmuls at %.0f%% of the %.0f GFLOP/s sgemm peak (target >= %.0f%%: %s)",
                      100 * share, peak, 100 * kW3MatMulShareTarget,
                      share >= kW3MatMulShareTarget ? "met" : "MISSED");
        summary.push_back(part);
        if (auto kernels = runs.Get("flowtrain", w, "matmul_kernels_gflops")) {
          Result(w, "flowtrain", "matmul_kernels_pct_of_sgemm_peak", 100 * *kernels / peak);
          std::snprintf(
              part, sizeof(part),
              "W3       the MatMul kernels alone (traced): %.0f%% of the peak, %.0f%% of the step's time",
              100 * *kernels / peak, runs.Get("flowtrain", w, "matmul_share_of_step_pct").value_or(0));
          summary.push_back(part);
        }
      }
    }
  }
  if (peak > 0) Result("GEMM", "machine", "sgemm_peak_gflops", peak);
  std::fflush(stdout);
  std::fprintf(stderr, "ops_bench summary, flowtrain / fastest correct peer configuration (medians):\n");
  for (const std::string& line : summary) std::fprintf(stderr, "  %s\n", line.c_str());
}

// pytorch runs in the OPENBLAS environment that won most workloads for libtorch (the same
// library underneath), both thread counts: half the child processes of trying everything.
bool LibtorchPrefersUnsetEnv(const Runs& runs, const std::vector<PeerConfig>& configs,
                             const std::vector<std::string>& workloads) {
  int unset_wins = 0, machine_wins = 0;
  for (const std::string& w : workloads) {
    if (const PeerConfig* best = Fastest(runs, configs, "libtorch", w, false)) {
      (best->unset_openblas_env ? unset_wins : machine_wins) += 1;
    }
  }
  return unset_wins > machine_wins;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  double budget_seconds = 150;
  bool peers = true;
  bool flowtrain_child = false;  // internal: measure flowtrain once and print its figures
  std::string only_arg;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--budget-seconds") == 0 && i + 1 < argc) {
      budget_seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only_arg = argv[++i];
      std::stringstream list(only_arg);
      for (std::string w; std::getline(list, w, ',');) only.insert(w);
    } else if (std::strcmp(argv[i], "--no-peers") == 0) {
      peers = false;
    } else if (std::strcmp(argv[i], "--flowtrain-child") == 0) {
      flowtrain_child = true;
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--rounds N] [--budget-seconds S] [--only W1,W2,W2b,W3,W4,CNN,GEMM] [--no-peers]\n",
          argv[0]);
      return 2;
    }
  }
  if (flowtrain_child) {
    FlowtrainBench flowtrain(only);
    auto [ours, eigen] = flowtrain.Measure();
    for (const auto& [key, value] : ours)
      std::printf("RESULT %s flowtrain %s %.9g\n", key.first.c_str(), key.second.c_str(), value);
    for (const auto& [key, value] : eigen)
      std::printf("RESULT %s eigen eigen:%s %.9g\n", key.first.c_str(), key.second.c_str(), value);
    return 0;
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> workloads;
  for (const std::string& w : kWorkloads) {
    if (!only.empty() && only.count(w) == 0) continue;
    if (w != "GEMM") workloads.push_back(w);
    for (const opsbench::GemmSize& size : opsbench::kGemmSizes) {
      if (w == "GEMM") workloads.push_back("GEMM" + std::to_string(size.n));
    }
  }

  PeerPrograms programs;
  std::vector<PeerConfig> configs;  // every configuration that runs, libtorch's first
  if (peers) {
    programs = FindPeers();
    if (!programs.libtorch.empty()) {
      for (bool unset : {false, true}) {
        if (unset && !programs.machine_sets_openblas) continue;
        for (int threads : {1, 2}) configs.push_back({"libtorch", threads, unset});
      }
    }
  }
  Runs runs;
  const auto start = Clock::now();
  double longest_round = 0;
  int done = 0;
  for (; done < rounds; ++done) {
    if (done > 0 && SecondsSince(start) + longest_round > budget_seconds) {
      std::fprintf(stderr, "ops_bench: stopping after %d rounds (--budget-seconds %.0f)\n", done,
                   budget_seconds);
      break;
    }
    const auto round_start = Clock::now();
    // flowtrain goes first in even rounds and last in odd ones, so that a busy stretch of the
    // machine does not always fall on the same side.
    auto measure_flowtrain = [&] {
      if (auto figures = MeasureFlowtrainInChild(self, only_arg)) {
        runs.Add("flowtrain", figures->first);
        runs.Add("eigen", figures->second);
      }
    };
    if (done % 2 == 0) measure_flowtrain();
    for (size_t c = 0; c < configs.size(); ++c) {
      if (configs[c].peer == "pytorch") continue;
      if (auto figures = RunPeer(programs, configs[c], only_arg, done == 0))
        runs.Add(configs[c].Label(), *figures);
    }
    if (done == 0 && !programs.pytorch.empty()) {
      const bool unset =
          !programs.libtorch.empty() ? LibtorchPrefersUnsetEnv(runs, configs, workloads) : false;
      for (bool u : {false, true}) {
        if ((u && !programs.machine_sets_openblas) || (!programs.libtorch.empty() && u != unset)) continue;
        for (int threads : {1, 2}) configs.push_back({"pytorch", threads, u});
      }
    }
    for (const PeerConfig& config : configs) {
      if (config.peer != "pytorch") continue;
      if (auto figures = RunPeer(programs, config, only_arg, done == 0)) runs.Add(config.Label(), *figures);
    }
    if (done % 2 == 1) measure_flowtrain();
    longest_round = std::max(longest_round, SecondsSince(round_start));
    std::fprintf(stderr, "ops_bench: round %d of %d done after %.0f s\n", done + 1, rounds,
                 SecondsSince(start));
  }
  std::fprintf(stderr, "ops_bench: figures are medians of %d rounds\n", done);
  Report(runs, configs, workloads);
  return 0;
}
