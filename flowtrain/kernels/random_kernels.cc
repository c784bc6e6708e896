// Kernels of the random ops. Each kernel has a Philox generator seeded from its (seed, seed2)
// attrs (random seeds when both are 0; kept in the session's RandomOpStates, so that its
// position can be checkpointed) and, per run, reserves a stretch of the generator's
// counter space for that run's output; the output is then filled in parallel, every shard
// jumping straight to its own counters, so the numbers depend only on the seeds and on how
// many runs came before — never on the thread count.
#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/philox_random.h"
#include "flowtrain/framework/random_op_states.h"

namespace flowtrain {
namespace {

using random::PhiloxRandom;

// TF reserves 256 blocks per output element, which leaves room for rejection sampling.
constexpr uint64_t kReservedBlocksPerElement = 256;
// Blocks one truncated-normal group may consume (TF's kReservedSamplesPerOutput / 4).
constexpr uint64_t kBlocksPerTruncatedGroup = 64;

TensorShape ShapeFromInput(const Tensor& shape, std::string_view op) {
  if (shape.dims() != 1) {
    InvalidArgument(op, ": shape must be a vector of {int32,int64}, got shape ", shape.shape().DebugString());
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < shape.NumElements(); ++i) {
    const int64_t d = shape.dtype() == DT_INT32 ? shape.flat<int32_t>()[i] : shape.flat<int64_t>()[i];
    if (d < 0) InvalidArgument(op, ": dimension ", i, " of the shape is negative: ", d);
    dims.push_back(d);
  }
  return TensorShape(std::span<const int64_t>(dims.data(), dims.size()));
}

// Splits `groups` work items across the intra-op pool (or runs inline).
void ForGroups(OpKernelContext* ctx, int64_t groups, int64_t cost_per_group,
               const std::function<void(int64_t, int64_t)>& fn) {
  ThreadPool* pool = ctx->intra_op_pool();
  if (pool != nullptr && pool->NumThreads() > 1 && groups * cost_per_group > 100000) {
    pool->ParallelFor(groups, cost_per_group, fn);
  } else {
    fn(0, groups);
  }
}

// The per-type sample generators. `Group` writes kGroupSize values from one generator position.
template <typename T>
struct UniformSampler {
  static constexpr int kGroupSize = 4;
  void operator()(PhiloxRandom& gen, T* out) const {
    const auto w = gen();
    for (int i = 0; i < 4; ++i) out[i] = static_cast<T>(random::Uint32ToFloat(w[i]));
  }
};
template <>
struct UniformSampler<double> {
  static constexpr int kGroupSize = 2;
  void operator()(PhiloxRandom& gen, double* out) const {
    const auto w = gen();
    out[0] = random::Uint64ToDouble(w[0], w[1]);
    out[1] = random::Uint64ToDouble(w[2], w[3]);
  }
};

template <typename T>
struct NormalSampler {
  static constexpr int kGroupSize = 4;
  void operator()(PhiloxRandom& gen, T* out) const {
    const auto w = gen();
    float f[4];
    random::BoxMullerFloat(w[0], w[1], &f[0], &f[1]);
    random::BoxMullerFloat(w[2], w[3], &f[2], &f[3]);
    for (int i = 0; i < 4; ++i) out[i] = static_cast<T>(f[i]);
  }
};
template <>
struct NormalSampler<double> {
  static constexpr int kGroupSize = 2;
  void operator()(PhiloxRandom& gen, double* out) const {
    const auto w = gen();
    random::BoxMullerDouble(w[0], w[1], w[2], w[3], &out[0], &out[1]);
  }
};

// Normals with |x| >= 2 rejected; each group draws from its own reserved counter range.
template <typename T>
struct TruncatedNormalSampler {
  static constexpr int kGroupSize = 4;
  void operator()(PhiloxRandom& gen, T* out) const {
    random::SingleSampleAdapter single(&gen);
    int filled = 0;
    while (filled < kGroupSize) {
      float f[2];
      const uint32_t x0 = single();
      const uint32_t x1 = single();
      random::BoxMullerFloat(x0, x1, &f[0], &f[1]);
      for (float v : f) {
        if (std::abs(v) < 2.0f && filled < kGroupSize) out[filled++] = static_cast<T>(v);
      }
    }
  }
};
template <>
struct TruncatedNormalSampler<double> {
  static constexpr int kGroupSize = 2;
  void operator()(PhiloxRandom& gen, double* out) const {
    random::SingleSampleAdapter single(&gen);
    int filled = 0;
    while (filled < kGroupSize) {
      double d[2];
      const uint32_t x0 = single(), x1 = single(), x2 = single(), x3 = single();
      random::BoxMullerDouble(x0, x1, x2, x3, &d[0], &d[1]);
      for (double v : d) {
        if (std::abs(v) < 2.0 && filled < kGroupSize) out[filled++] = v;
      }
    }
  }
};

// Fills `out[0, n)` group by group; group g starts `blocks_per_group * g` blocks past `base`.
template <typename T, typename Sampler>
void Fill(OpKernelContext* ctx, const PhiloxRandom& base, uint64_t blocks_per_group, T* out, int64_t n) {
  constexpr int kGroup = Sampler::kGroupSize;
  const int64_t groups = (n + kGroup - 1) / kGroup;
  ForGroups(ctx, groups, 40 * kGroup, [&](int64_t begin, int64_t end) {
    Sampler sampler;
    PhiloxRandom gen = base;
    gen.Skip(static_cast<uint64_t>(begin) * blocks_per_group);
    T buffer[kGroup];
    for (int64_t g = begin; g < end; ++g) {
      PhiloxRandom group_gen = gen;
      sampler(group_gen, buffer);
      gen.Skip(blocks_per_group);
      const int64_t first = g * kGroup;
      const int64_t count = std::min<int64_t>(kGroup, n - first);
      std::copy(buffer, buffer + count, out + first);
    }
  });
}

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

template <Distribution kDist>
class RandomFloatOp : public OpKernel {
 public:
  explicit RandomFloatOp(OpKernelConstruction& c) : OpKernel(c), generator_(c) {}
  void Compute(OpKernelContext* ctx) override {
    const TensorShape shape = ShapeFromInput(ctx->input(0), type_string());
    Tensor* output = ctx->allocate_output(0, shape);
    const int64_t n = shape.num_elements();
    const PhiloxRandom base =
        generator_.Get(ctx).Reserve(static_cast<uint64_t>(n) * kReservedBlocksPerElement);
    if (n == 0) return;
    switch (output->dtype()) {
      case DT_FLOAT:
        FillTyped<float>(ctx, base, output->data<float>(), n);
        break;
      case DT_DOUBLE:
        FillTyped<double>(ctx, base, output->data<double>(), n);
        break;
      case DT_HALF:
        FillTyped<half>(ctx, base, output->data<half>(), n);
        break;
      case DT_BFLOAT16:
        FillTyped<bfloat16>(ctx, base, output->data<bfloat16>(), n);
        break;
      default:
        ThrowUnsupportedType(output->dtype(), type_string());
    }
  }

 private:
  template <typename T>
  static void FillTyped(OpKernelContext* ctx, const PhiloxRandom& base, T* out, int64_t n) {
    if constexpr (kDist == Distribution::kUniform) {
      Fill<T, UniformSampler<T>>(ctx, base, 1, out, n);
    } else if constexpr (kDist == Distribution::kNormal) {
      Fill<T, NormalSampler<T>>(ctx, base, 1, out, n);
    } else {
      Fill<T, TruncatedNormalSampler<T>>(ctx, base, kBlocksPerTruncatedGroup, out, n);
    }
  }

  RandomKernelGenerator generator_;
};
FT_REGISTER_KERNEL("RandomUniform", RandomFloatOp<Distribution::kUniform>);
FT_REGISTER_KERNEL("RandomStandardNormal", RandomFloatOp<Distribution::kNormal>);
FT_REGISTER_KERNEL("TruncatedNormal", RandomFloatOp<Distribution::kTruncatedNormal>);

class RandomUniformIntOp : public OpKernel {
 public:
  explicit RandomUniformIntOp(OpKernelConstruction& c) : OpKernel(c), generator_(c) {}
  void Compute(OpKernelContext* ctx) override {
    const TensorShape shape = ShapeFromInput(ctx->input(0), type_string());
    const Tensor& minval = ctx->input(1);
    const Tensor& maxval = ctx->input(2);
    if (minval.dims() != 0 || maxval.dims() != 0) {
      InvalidArgument("RandomUniformInt: minval and maxval must be scalars, got ",
                      minval.shape().DebugString(), " and ", maxval.shape().DebugString());
    }
    Tensor* output = ctx->allocate_output(0, shape);
    const int64_t n = shape.num_elements();
    const PhiloxRandom base =
        generator_.Get(ctx).Reserve(static_cast<uint64_t>(n) * kReservedBlocksPerElement);
    if (output->dtype() == DT_INT32) {
      FillInts<int32_t>(ctx, base, minval.scalar<int32_t>(), maxval.scalar<int32_t>(),
                        output->data<int32_t>(), n);
    } else {
      FillInts<int64_t>(ctx, base, minval.scalar<int64_t>(), maxval.scalar<int64_t>(),
                        output->data<int64_t>(), n);
    }
  }

 private:
  template <typename T>
  static void FillInts(OpKernelContext* ctx, const PhiloxRandom& base, T lo, T hi, T* out, int64_t n) {
    if (n == 0) return;
    if (!(lo < hi)) InvalidArgument("Need minval < maxval: ", lo, " >= ", hi);
    using U = std::make_unsigned_t<T>;
    const U range = static_cast<U>(hi) - static_cast<U>(lo);
    constexpr int kGroup = sizeof(T) == 4 ? 4 : 2;
    const int64_t groups = (n + kGroup - 1) / kGroup;
    ForGroups(ctx, groups, 20 * kGroup, [&](int64_t begin, int64_t end) {
      PhiloxRandom gen = base;
      gen.Skip(static_cast<uint64_t>(begin));
      for (int64_t g = begin; g < end; ++g) {
        const auto w = gen();
        for (int i = 0; i < kGroup && g * kGroup + i < n; ++i) {
          U bits;
          if constexpr (sizeof(T) == 4) {
            bits = w[i];
          } else {
            bits = static_cast<U>(w[2 * i]) | (static_cast<U>(w[2 * i + 1]) << 32);
          }
          out[g * kGroup + i] = static_cast<T>(static_cast<U>(lo) + bits % range);
        }
      }
    });
  }

  RandomKernelGenerator generator_;
};
FT_REGISTER_KERNEL("RandomUniformInt", RandomUniformIntOp);

class RandomShuffleOp : public OpKernel {
 public:
  explicit RandomShuffleOp(OpKernelConstruction& c) : OpKernel(c), generator_(c) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    if (input.dims() == 0 || input.dim_size(0) <= 1) {
      ctx->set_output(0, input);
      return;
    }
    const int64_t n = input.dim_size(0);
    PhiloxRandom gen = generator_.Get(ctx).Reserve(static_cast<uint64_t>(n));
    random::SingleSampleAdapter single(&gen);
    // Fisher-Yates over the first dimension.
    std::vector<int64_t> perm(n);
    for (int64_t i = 0; i < n; ++i) perm[i] = i;
    for (int64_t i = n - 1; i > 0; --i) {
      const uint64_t r = n > 0xffffffffLL ? ((static_cast<uint64_t>(single()) << 32) | single()) % (i + 1)
                                          : single() % static_cast<uint32_t>(i + 1);
      std::swap(perm[i], perm[r]);
    }
    Tensor* output = ctx->allocate_output(0, input.shape());
    const int64_t row = input.NumElements() / n;
    DispatchDataType(input.dtype(), type_string(), [&]<typename T>() {
      const T* in = input.data<T>();
      T* out = output->data<T>();
      for (int64_t i = 0; i < n; ++i) {
        std::copy(in + perm[i] * row, in + (perm[i] + 1) * row, out + i * row);
      }
    });
  }

 private:
  RandomKernelGenerator generator_;
};
FT_REGISTER_KERNEL("RandomShuffle", RandomShuffleOp);

}  // namespace
}  // namespace flowtrain
