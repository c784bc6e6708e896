// The libtorch (PyTorch's C++ API) side of ops_bench: the same workloads, on the same data
// (ops_bench_data.h), written as a libtorch user would write them — torch::nn modules, autograd,
// torch::optim — with the peer's fastest idioms (gradients reset to none instead of zeroed,
// InferenceMode for the tensor-arithmetic workload, mm_out into a preallocated result).
//
//   ops_bench_libtorch --threads 1 [--only W2,W3]
//
// ops_bench runs it as a child process (with 1 and 2 threads, with and without the machine's
// OPENBLAS_* settings) and reads its lines:
//   RESULT <workload> libtorch <metric> <value>
// Built only when CMake finds Torch (Debian's libtorch-dev, which scripts/bench installs).
#include <dlfcn.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ops_bench_data.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace F = torch::nn::functional;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Report(const std::string& workload, const char* metric, double value) {
  std::printf("RESULT %s libtorch %s %.6g\n", workload.c_str(), metric, value);
  std::fflush(stdout);
}

// A float tensor of `shape` filled by the shared generator (flowtrain's layout).
torch::Tensor Uniform(std::vector<int64_t> shape, uint64_t seed, float scale) {
  torch::Tensor t = torch::empty(shape, torch::kFloat32);
  opsbench::FillUniform(t.data_ptr<float>(), t.numel(), seed, scale);
  return t;
}

torch::Tensor Labels(int64_t n, uint64_t seed, int64_t classes) {
  torch::Tensor t = torch::empty({n}, torch::kInt64);
  opsbench::FillLabels(t.data_ptr<int64_t>(), n, seed, classes);
  return t;
}

// A Linear layer holding the shared dense kernel [in, out] (stored transposed, as torch does)
// and a zero bias.
torch::nn::Linear MakeLinear(int64_t in, int64_t out, uint64_t seed) {
  torch::nn::Linear layer(in, out);
  torch::NoGradGuard no_grad;
  layer->weight.copy_(Uniform({in, out}, seed, opsbench::GlorotLimit(in, out)).t());
  layer->bias.zero_();
  return layer;
}

// The dense-MLP model of W2, W2b and W3.
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t hidden, uint64_t seed)
      : l1(register_module("l1", MakeLinear(opsbench::kMlpIn, hidden, seed + opsbench::kWeightSeedOffset))),
        l2(register_module("l2", MakeLinear(hidden, hidden, seed + opsbench::kWeightSeedOffset + 1))),
        l3(register_module(
            "l3", MakeLinear(hidden, opsbench::kMlpClasses, seed + opsbench::kWeightSeedOffset + 2))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return l3->forward(torch::relu(l2->forward(torch::relu(l1->forward(x)))));
  }
  torch::nn::Linear l1, l2, l3;
};
TORCH_MODULE(Mlp);

// The CNN: NCHW, so the conv filters [kh, kw, in, out] become [out, in, kh, kw] and the first
// dense kernel's rows are reordered from NHWC's (h, w, c) flattening to NCHW's (c, h, w).
struct CnnImpl : torch::nn::Module {
  CnnImpl() {
    const uint64_t seed = opsbench::kCnnSeed + opsbench::kWeightSeedOffset;
    conv1 = register_module("conv1", MakeConv(1, opsbench::kCnnConv1, seed));
    conv2 = register_module("conv2", MakeConv(opsbench::kCnnConv1, opsbench::kCnnConv2, seed + 1));
    dense1 = register_module("dense1", torch::nn::Linear(opsbench::kCnnFlat, opsbench::kCnnDense));
    dense2 = register_module("dense2", MakeLinear(opsbench::kCnnDense, opsbench::kMlpClasses, seed + 3));
    torch::NoGradGuard no_grad;
    const int64_t positions = opsbench::kCnnFlat / opsbench::kCnnConv2;
    torch::Tensor kernel = Uniform({opsbench::kCnnFlat, opsbench::kCnnDense}, seed + 2,
                                   opsbench::GlorotLimit(opsbench::kCnnFlat, opsbench::kCnnDense));
    dense1->weight.copy_(kernel.view({positions, opsbench::kCnnConv2, opsbench::kCnnDense})
                             .permute({1, 0, 2})
                             .reshape({opsbench::kCnnFlat, opsbench::kCnnDense})
                             .t());
    dense1->bias.zero_();
  }
  static torch::nn::Conv2d MakeConv(int64_t in, int64_t out, uint64_t seed) {
    const int64_t k = opsbench::kCnnKernel;
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in, out, k).padding(k / 2));
    torch::NoGradGuard no_grad;
    conv->weight.copy_(
        Uniform({k, k, in, out}, seed, opsbench::GlorotLimit(k * k * in, k * k * out)).permute({3, 2, 0, 1}));
    conv->bias.zero_();
    return conv;
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = F::max_pool2d(torch::relu(conv1->forward(x)), F::MaxPool2dFuncOptions(2));
    h = F::max_pool2d(torch::relu(conv2->forward(h)), F::MaxPool2dFuncOptions(2));
    h = torch::relu(dense1->forward(h.flatten(1)));
    return dense2->forward(h);
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear dense1{nullptr}, dense2{nullptr};
};
TORCH_MODULE(Cnn);

// Trains `model` for the workload's steps on the prepared batches; reports examples/s and the
// loss of the last step.
template <typename Model, typename LossFn>
double Train(const std::string& workload, Model& model, torch::optim::Optimizer& optimizer,
             const std::vector<torch::Tensor>& xs, const std::vector<torch::Tensor>& ys,
             opsbench::Steps steps, LossFn loss_fn) {
  std::vector<torch::Tensor> parameters = model->parameters();
  auto step = [&](int i) {
    for (torch::Tensor& p : parameters) p.mutable_grad().reset();  // zero_grad(set_to_none=True)
    torch::Tensor loss = loss_fn(model->forward(xs[i % xs.size()]), ys[i % ys.size()]);
    loss.backward();
    optimizer.step();
    return loss;
  };
  for (int i = 0; i < steps.warmup; ++i) step(i);
  const auto start = Clock::now();
  float final_loss = 0;
  for (int i = 0; i < steps.timed; ++i) {
    torch::Tensor loss = step(steps.warmup + i);
    if (i == steps.timed - 1) final_loss = loss.item<float>();
  }
  const double per_sec = steps.timed / SecondsSince(start);
  const int64_t batch = xs[0].size(0);
  Report(workload, "examples_per_sec", per_sec * batch);
  Report(workload, "final_loss", final_loss);
  return per_sec;
}

void RunW1() {
  c10::InferenceMode inference;
  torch::Tensor x = torch::tensor(1.0f);
  std::vector<torch::Tensor> addends;
  for (int k = 1; k <= opsbench::kW1Adds; ++k) addends.push_back(torch::tensor(0.5f * k));
  auto step = [&] {
    torch::Tensor y = x;
    for (const torch::Tensor& c : addends) y = y + c;
    return y;
  };
  for (int i = 0; i < opsbench::kW1Steps.warmup; ++i) step();
  const auto start = Clock::now();
  torch::Tensor y;
  for (int i = 0; i < opsbench::kW1Steps.timed; ++i) y = step();
  const double per_sec = opsbench::kW1Steps.timed / SecondsSince(start);
  Report("W1", "steps_per_sec", per_sec);
  Report("W1", "per_op_us", 1e6 / per_sec / opsbench::kW1Adds);
  Report("W1", "final_loss", y.item<float>());
}

void RunMlp(const std::string& workload) {
  const bool w3 = workload == "W3";
  const bool adam = workload == "W2b";
  const uint64_t seed = w3 ? opsbench::kW3Seed : opsbench::kW2Seed;
  const int64_t batch = w3 ? opsbench::kW3Batch : opsbench::kW2Batch;
  const opsbench::Steps steps = w3 ? opsbench::kW3Steps : opsbench::kW2Steps;
  std::vector<torch::Tensor> xs, ys;
  for (int b = 0; b < steps.batches; ++b) {
    xs.push_back(Uniform({batch, opsbench::kMlpIn}, seed + 2 * b, 1.0f));
    ys.push_back(Labels(batch, seed + 2 * b + 1, opsbench::kMlpClasses));
  }
  Mlp model(w3 ? opsbench::kW3Hidden : opsbench::kW2Hidden, seed);
  auto loss_fn = [](const torch::Tensor& logits, const torch::Tensor& y) {
    return F::cross_entropy(logits, y);
  };
  if (adam) {
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(opsbench::kAdamLearningRate));
    Train(workload, model, optimizer, xs, ys, steps, loss_fn);
  } else {
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(opsbench::kSgdLearningRate));
    const double per_sec = Train(workload, model, optimizer, xs, ys, steps, loss_fn);
    if (w3) Report(workload, "matmul_gflops", opsbench::kW3MatMulFlops * per_sec / 1e9);
  }
}

void RunW4() {
  std::vector<torch::Tensor> xs, ys;
  for (int b = 0; b < opsbench::kW4Steps.batches; ++b) {
    xs.push_back(Uniform({opsbench::kW4Batch, opsbench::kW4Features}, opsbench::kW4Seed + 2 * b, 1.0f));
    ys.push_back(
        Labels(opsbench::kW4Batch, opsbench::kW4Seed + 2 * b + 1, 2).to(torch::kFloat32).view({-1, 1}));
  }
  torch::nn::Linear model =
      MakeLinear(opsbench::kW4Features, 1, opsbench::kW4Seed + opsbench::kWeightSeedOffset);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(opsbench::kSgdLearningRate));
  Train("W4", model, optimizer, xs, ys, opsbench::kW4Steps,
        [](const torch::Tensor& logits, const torch::Tensor& y) {
          return F::binary_cross_entropy_with_logits(logits, y);
        });
}

void RunCnn() {
  std::vector<torch::Tensor> xs, ys;
  const int64_t side = opsbench::kCnnSide;
  for (int b = 0; b < opsbench::kCnnSteps.batches; ++b) {
    // NHWC with one channel is NCHW with one channel: the same floats.
    xs.push_back(Uniform({opsbench::kCnnBatch, 1, side, side}, opsbench::kCnnSeed + 2 * b, 1.0f));
    ys.push_back(Labels(opsbench::kCnnBatch, opsbench::kCnnSeed + 2 * b + 1, opsbench::kMlpClasses));
  }
  Cnn model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(opsbench::kCnnLearningRate));
  Train("CNN", model, optimizer, xs, ys, opsbench::kCnnSteps,
        [](const torch::Tensor& logits, const torch::Tensor& y) { return F::cross_entropy(logits, y); });
}

void RunGemm() {
  torch::NoGradGuard no_grad;
  for (const opsbench::GemmSize& size : opsbench::kGemmSizes) {
    const std::string workload = "GEMM" + std::to_string(size.n);
    torch::Tensor a = Uniform({size.n, size.n}, opsbench::kGemmSeed, 1.0f);
    torch::Tensor b = Uniform({size.n, size.n}, opsbench::kGemmSeed + 1, 1.0f);
    torch::Tensor c = torch::empty({size.n, size.n});
    torch::mm_out(c, a, b);
    const auto start = Clock::now();
    for (int r = 0; r < size.reps; ++r) torch::mm_out(c, a, b);
    const double seconds = SecondsSince(start);
    Report(workload, "gflops", 2.0 * size.n * size.n * double(size.n) * size.reps / seconds / 1e9);
    Report(workload, "mean_abs_c", c.abs().mean().item<float>());
  }
}

// The OpenBLAS kernel set in use ("Haswell", "SkylakeX", ...), when libtorch's BLAS is OpenBLAS.
std::string BlasCore() {
  using CoreNameFn = char* (*)();
  auto fn = reinterpret_cast<CoreNameFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return fn != nullptr ? fn() : "not-openblas";
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string w; std::getline(list, w, ',');) only.insert(w);
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--only W1,W2,...]\n", argv[0]);
      return 2;
    }
  }
  torch::set_num_threads(threads);
  auto wanted = [&](const std::string& w) { return only.empty() || only.count(w) > 0; };
  std::printf("# libtorch %s threads=%d blas_core=%s\n", TORCH_VERSION, torch::get_num_threads(),
              BlasCore().c_str());
  if (wanted("W1")) RunW1();
  for (const char* w : {"W2", "W2b", "W3"}) {
    if (wanted(w)) RunMlp(w);
  }
  if (wanted("W4")) RunW4();
  if (wanted("CNN")) RunCnn();
  if (wanted("GEMM")) RunGemm();
  return 0;
}
