// The workloads of ops_bench and the synthetic data every system trains on, shared by the
// flowtrain side (ops_bench.cc) and the libtorch side (ops_bench_libtorch.cc);
// ops_bench_pytorch.py repeats the same constants and the same formula in numpy, so all three
// systems start from bit-identical weights and see bit-identical batches.
//
// Every value comes from a counter-based generator: element i of the tensor with seed s is
// derived from splitmix64((s << 32) | i), so any system can fill any tensor independently and
// vectorized, without sharing a stream:
//
//   float w[784 * 256];
//   opsbench::FillUniform(w, 784 * 256, opsbench::kW2Seed + opsbench::kWeightSeedOffset,
//                         opsbench::GlorotLimit(784, 256));
//
// Tensors are filled in flowtrain's layout (dense kernels [in, out], conv filters
// [kh, kw, in, out], images NHWC); the torch sides permute them into their own layouts.
#ifndef FLOWTRAIN_BENCH_OPS_BENCH_DATA_H_
#define FLOWTRAIN_BENCH_OPS_BENCH_DATA_H_

#include <cmath>
#include <cstdint>

namespace opsbench {

// ---- The generator ----------------------------------------------------------------------

// splitmix64 of element `index` of the tensor with `seed`.
inline uint64_t Hash(uint64_t seed, uint64_t index) {
  uint64_t z = (seed << 32) | index;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A float uniform in [-1, 1) with 24 random bits. Each step is exact in float32 (the product
// by a power of two and the subtraction), so every system computes the same bits.
inline float Uniform(uint64_t seed, uint64_t index) {
  return static_cast<float>(Hash(seed, index) >> 40) * 0x1p-23f - 1.0f;
}

// out[i] = scale * Uniform(seed, i): one float32 multiplication, the same in numpy.
inline void FillUniform(float* out, int64_t n, uint64_t seed, float scale) {
  for (int64_t i = 0; i < n; ++i) out[i] = Uniform(seed, i) * scale;
}

// out[i] = Hash(seed, i) >> 40 modulo `classes`: class labels.
inline void FillLabels(int64_t* out, int64_t n, uint64_t seed, int64_t classes) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>((Hash(seed, i) >> 40) % classes);
}

// Glorot-uniform's limit sqrt(6 / (fan_in + fan_out)), rounded once to float.
inline float GlorotLimit(int64_t fan_in, int64_t fan_out) {
  return static_cast<float>(std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)));
}

// ---- Seeds ------------------------------------------------------------------------------
// Batch b of a workload: inputs seed kSeed + 2b, labels kSeed + 2b + 1. Weights of layer l:
// kSeed + 1000 + l. Biases start at zero.
inline constexpr uint64_t kW2Seed = 10000;  // W2 and W2b share model and data
inline constexpr uint64_t kW3Seed = 20000;
inline constexpr uint64_t kW4Seed = 30000;
inline constexpr uint64_t kCnnSeed = 40000;
inline constexpr uint64_t kGemmSeed = 50000;
inline constexpr int kWeightSeedOffset = 1000;

// ---- Workloads ------------------------------------------------------------------------
// Every timed phase runs `warmup` steps, then `timed` steps on the clock, step i training on
// batch i % `batches` (all prepared before timing). The final loss is the loss of the last
// timed step (computed before that step's update), so it is the loss after
// warmup + timed - 1 updates in every system. Enough distinct batches keep the final loss far
// from zero, where "the same loss" would say little.
struct Steps {
  int warmup;
  int timed;
  int batches;
};

// W1: a scalar fed in, 10 Adds of constants 0.5, 1.0, ..., 5.0 (the "loss" is the result).
inline constexpr int kW1Adds = 10;
inline constexpr Steps kW1Steps{500, 4000, 1};

// W2/W2b: MLP 784-256-256-10, ReLU, softmax cross-entropy, batch 64; SGD lr 0.1 / Adam 1e-3.
inline constexpr int kMlpIn = 784;
inline constexpr int kMlpClasses = 10;
inline constexpr int kW2Hidden = 256;
inline constexpr int kW2Batch = 64;
inline constexpr Steps kW2Steps{20, 400, 64};
inline constexpr double kSgdLearningRate = 0.1;
inline constexpr double kAdamLearningRate = 1e-3;  // beta1 0.9, beta2 0.999, epsilon 1e-8

// W3: MLP 784-2048-2048-10, batch 256, SGD lr 0.1.
inline constexpr int kW3Hidden = 2048;
inline constexpr int kW3Batch = 256;
inline constexpr Steps kW3Steps{2, 8, 8};
// MatMul FLOPs of one W3 step: forward (3 layers), weight gradients (3), input gradients of
// layers 2 and 3 (nobody needs the gradient of the fed images).
inline constexpr double kW3MatMulFlops =
    2.0 * kW3Batch *
    (3.0 * (double{kMlpIn} * kW3Hidden + double{kW3Hidden} * kW3Hidden + double{kW3Hidden} * kMlpClasses) -
     double{kMlpIn} * kW3Hidden);

// W4: logistic regression, 1000 features, batch 1024, sigmoid cross-entropy, SGD lr 0.1.
inline constexpr int kW4Features = 1000;
inline constexpr int kW4Batch = 1024;
inline constexpr Steps kW4Steps{20, 400, 8};

// CNN: 28x28x1 -> conv 5x5 32 SAME, ReLU -> max-pool 2x2 -> conv 5x5 64 SAME, ReLU ->
// max-pool 2x2 -> dense 128 ReLU -> dense 10; batch 64, SGD lr 0.01.
inline constexpr int kCnnBatch = 64;
inline constexpr int kCnnSide = 28;
inline constexpr int kCnnConv1 = 32;
inline constexpr int kCnnConv2 = 64;
inline constexpr int kCnnKernel = 5;
inline constexpr int kCnnDense = 128;
inline constexpr int kCnnFlat = (kCnnSide / 4) * (kCnnSide / 4) * kCnnConv2;  // 7*7*64
inline constexpr double kCnnLearningRate = 0.01;
inline constexpr Steps kCnnSteps{3, 12, 8};

// GEMM: C = A B with A, B n x n filled uniform [-1, 1); `reps` timed products after one warmup.
struct GemmSize {
  int n;
  int reps;
};
inline constexpr GemmSize kGemmSizes[] = {{1024, 10}, {2048, 4}};

// "The same final loss": within this fraction of the reference configuration's loss. The
// ReLU MLPs of W2/W2b train 420 steps: there float32 rounding alone decides now and then on
// which side of zero a pre-activation falls, and two correct implementations drift apart
// (measured: flowtrain vs libtorch 0.4% on W2 and 0.8% on W2b, while libtorch float32 vs
// float64 stays within 1e-6 until its own first such flip); a wrong kernel is off by far
// more. The other workloads run few steps or have no ReLU and agree to ~1e-5.
inline constexpr double kLossRelativeTolerance = 2e-3;
inline constexpr double kLongReluTrainingLossTolerance = 0.03;  // W2, W2b

}  // namespace opsbench

#endif  // FLOWTRAIN_BENCH_OPS_BENCH_DATA_H_
