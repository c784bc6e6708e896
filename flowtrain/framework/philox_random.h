// PhiloxRandom: the Philox4x32-10 counter-based generator of Salmon et al., "Parallel Random
// Numbers: As Easy as 1, 2, 3" (SC'11), as TensorFlow's random kernels use it. Each call
// encrypts a 128-bit counter under a 64-bit key and returns four 32-bit words, so any position
// of the stream can be reached in O(1) with Skip(): kernels split an output across threads and
// each thread jumps to its own part, and the numbers do not depend on the split.
//
//   PhiloxRandom gen(/*seed=*/87654321, /*seed2=*/42);   // key = seed, counter high = seed2
//   gen.Skip(shard_begin / 4);
//   PhiloxRandom::ResultType words = gen();                 // four uint32, counter advances
//   float u = Uint32ToFloat(words[0]);                      // in [0, 1)
//
// The distribution helpers below turn words into floats the way TF does (23 random mantissa
// bits for floats, 52 for doubles; Box-Muller for normals).
#ifndef FLOWTRAIN_FRAMEWORK_PHILOX_RANDOM_H_
#define FLOWTRAIN_FRAMEWORK_PHILOX_RANDOM_H_

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace flowtrain::random {

class PhiloxRandom {
 public:
  using ResultType = std::array<uint32_t, 4>;
  using Key = std::array<uint32_t, 2>;
  using Counter = std::array<uint32_t, 4>;
  static constexpr int kResultElementCount = 4;

  PhiloxRandom() = default;
  // TF's seeding: the key holds `seed`, the upper half of the counter holds `seed2`.
  PhiloxRandom(uint64_t seed, uint64_t seed2) {
    key_[0] = static_cast<uint32_t>(seed);
    key_[1] = static_cast<uint32_t>(seed >> 32);
    counter_[2] = static_cast<uint32_t>(seed2);
    counter_[3] = static_cast<uint32_t>(seed2 >> 32);
  }
  PhiloxRandom(const Counter& counter, const Key& key) : counter_(counter), key_(key) {}

  // Advances the 128-bit counter by `count` blocks of four words.
  void Skip(uint64_t count) {
    const uint64_t low = (static_cast<uint64_t>(counter_[1]) << 32 | counter_[0]) + count;
    counter_[0] = static_cast<uint32_t>(low);
    counter_[1] = static_cast<uint32_t>(low >> 32);
    if (low < count) {  // carry into the upper 64 bits
      if (++counter_[2] == 0) ++counter_[3];
    }
  }

  // The next four words; the counter moves on by one.
  ResultType operator()() {
    ResultType out = Compute(counter_, key_);
    Skip(1);
    return out;
  }

  // The block function itself: ten rounds over `counter` under `key`.
  static ResultType Compute(Counter counter, Key key) {
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        key[0] += kWeyl0;
        key[1] += kWeyl1;
      }
      const uint64_t p0 = static_cast<uint64_t>(kMultiplier0) * counter[0];
      const uint64_t p1 = static_cast<uint64_t>(kMultiplier1) * counter[2];
      counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ key[0], static_cast<uint32_t>(p1),
                 static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ key[1], static_cast<uint32_t>(p0)};
    }
    return counter;
  }

  const Counter& counter() const { return counter_; }
  const Key& key() const { return key_; }

 private:
  static constexpr uint32_t kMultiplier0 = 0xD2511F53;
  static constexpr uint32_t kMultiplier1 = 0xCD9E8D57;
  static constexpr uint32_t kWeyl0 = 0x9E3779B9;
  static constexpr uint32_t kWeyl1 = 0xBB67AE85;

  Counter counter_{};
  Key key_{};
};

// Hands out one word at a time from a PhiloxRandom (for rejection sampling and shuffles).
class SingleSampleAdapter {
 public:
  explicit SingleSampleAdapter(PhiloxRandom* gen) : gen_(gen) {}
  uint32_t operator()() {
    if (used_ == PhiloxRandom::kResultElementCount) {
      block_ = (*gen_)();
      used_ = 0;
    }
    return block_[used_++];
  }

 private:
  PhiloxRandom* gen_;
  PhiloxRandom::ResultType block_{};
  int used_ = PhiloxRandom::kResultElementCount;
};

// A float uniform in [0, 1) from the low 23 bits of `x` (exponent of 1.0, minus 1).
inline float Uint32ToFloat(uint32_t x) {
  const uint32_t bits = (x & 0x7fffffu) | 0x3f800000u;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f - 1.0f;
}

// A double uniform in [0, 1) from 52 bits of (x0, x1).
inline double Uint64ToDouble(uint32_t x0, uint32_t x1) {
  const uint64_t mantissa = (static_cast<uint64_t>(x0 & 0xfffffu) << 32) | x1;
  const uint64_t bits = (static_cast<uint64_t>(1023) << 52) | mantissa;
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d - 1.0;
}

// Two independent standard normals from two uniform words (Box-Muller), as TF's BoxMullerFloat.
inline void BoxMullerFloat(uint32_t x0, uint32_t x1, float* f0, float* f1) {
  constexpr float kEpsilon = 1.0e-7f;
  float u1 = Uint32ToFloat(x0);
  if (u1 < kEpsilon) u1 = kEpsilon;
  const float v1 = 2.0f * static_cast<float>(M_PI) * Uint32ToFloat(x1);
  const float u2 = std::sqrt(-2.0f * std::log(u1));
  *f0 = std::sin(v1) * u2;
  *f1 = std::cos(v1) * u2;
}

// Two standard normals as doubles from four words.
inline void BoxMullerDouble(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, double* d0, double* d1) {
  constexpr double kEpsilon = 1.0e-7;
  double u1 = Uint64ToDouble(x0, x1);
  if (u1 < kEpsilon) u1 = kEpsilon;
  const double v1 = 2 * M_PI * Uint64ToDouble(x2, x3);
  const double u2 = std::sqrt(-2.0 * std::log(u1));
  *d0 = std::sin(v1) * u2;
  *d1 = std::cos(v1) * u2;
}

}  // namespace flowtrain::random

#endif  // FLOWTRAIN_FRAMEWORK_PHILOX_RANDOM_H_
