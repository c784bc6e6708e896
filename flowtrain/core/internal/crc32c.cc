#include "flowtrain/core/internal/crc32c.h"

#include <array>
#include <cstring>

#include "flowtrain/core/internal/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace flowtrain::crc32c {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables, built at compile time.
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> tables{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
    tables[0][i] = crc;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int t = 1; t < 8; ++t) {
      tables[t][i] = (tables[t - 1][i] >> 8) ^ tables[0][tables[t - 1][i] & 0xff];
    }
  }
  return tables;
}

constexpr auto kTables = MakeTables();

uint32_t ExtendPortable(uint32_t crc, const uint8_t* p, size_t n) {
  crc = ~crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    const uint32_t lo = static_cast<uint32_t>(word) ^ crc;
    const uint32_t hi = static_cast<uint32_t>(word >> 32);
    crc = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
          kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
          kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

#if defined(__x86_64__)
// a * b modulo the polynomial, in the reflected bit order of CRC registers (x^0 is the top bit).
uint32_t MultiplyModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

// Three independent streams keep the CPU's crc32 unit busy (its latency is three times its
// throughput); their registers are combined by shifting with this table.
constexpr size_t kStreamBytes = 512;

// Multiplying a register by x^(8 * kStreamBytes) (appending kStreamBytes zero bytes), one
// table per register byte.
struct ShiftTables {
  ShiftTables() {
    uint32_t shift = 1u << 31;  // x^0
    for (size_t i = 0; i < 8 * kStreamBytes; ++i)
      shift = (shift & 1) ? (shift >> 1) ^ kPolynomial : shift >> 1;
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) table[k][b] = MultiplyModP(shift, b << (8 * k));
    }
  }
  uint32_t Shift(uint32_t crc) const {
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
           table[3][crc >> 24];
  }
  uint32_t table[4][256];
};

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = ~crc;
  if (n >= 3 * kStreamBytes) {
    static const ShiftTables shift;
    do {
      uint64_t c1 = 0, c2 = 0;
      for (size_t i = 0; i < kStreamBytes; i += 8) {
        uint64_t w0, w1, w2;
        std::memcpy(&w0, p + i, 8);
        std::memcpy(&w1, p + kStreamBytes + i, 8);
        std::memcpy(&w2, p + 2 * kStreamBytes + i, 8);
        c = _mm_crc32_u64(c, w0);
        c1 = _mm_crc32_u64(c1, w1);
        c2 = _mm_crc32_u64(c2, w2);
      }
      // The register is linear in the message: (A B C) = shift(shift(A) ^ B) ^ C.
      c = shift.Shift(shift.Shift(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1)) ^
          static_cast<uint32_t>(c2);
      p += 3 * kStreamBytes;
      n -= 3 * kStreamBytes;
    } while (n >= 3 * kStreamBytes);
  }
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

// ---- Folding with carry-less multiplies (AVX-512 VPCLMULQDQ) ----
//
// The crc32 instruction, even on three streams, tops out near 25 GB/s here, so checksumming a
// restored checkpoint cost about as much CPU as the kernel's copy of its bytes (and a cold
// read waits for that CPU: the next read-ahead starts only when the reader asks for it).
// Carry-less multiplication folds 256 bytes per step at more than twice that speed (57 vs.
// 25 GB/s on data in L2).
//
// A 16-byte block loaded little-endian, with bit j of the 128-bit value holding the
// coefficient of x^(127-j), is the block's polynomial in the CRC's bit order (first bit
// highest). A block B followed by d more bits of message contributes B * x^d; with B = h * x^64
// + l (h the low quadword), B * x^d = h * x^(d+64) + l * x^d, and each product by x^k mod P
// (degree < 32) fits in 128 bits: the block is folded d bits on and added to the block there.
// The state that remains, S, is reduced as the crc32 instruction does: crc32(crc32(0, h), l)
// = (h * x^96 + l * x^32) mod P = S * x^32 mod P, the CRC register.

// x^n mod P in the register's order (bit i holds x^(31-i)).
uint32_t XPowModP(size_t n) {
  uint32_t r = 1u << 31;
  for (size_t i = 0; i < n; ++i) r = (r & 1) ? (r >> 1) ^ kPolynomial : r >> 1;
  return r;
}

// The carry-less multiplier that moves a 64-bit half n bits on: x^(n-1) mod P in the high
// half (the product of two bit-reflected 64-bit values comes out one position short).
uint64_t FoldMultiplier(size_t n) { return uint64_t{XPowModP(n - 1)} << 32; }

// Per 128-bit lane: the multiplier of the high-degree (low) quadword, then the low-degree one.
struct FoldPair {
  explicit FoldPair(size_t bits) : by_high(FoldMultiplier(bits + 64)), by_low(FoldMultiplier(bits)) {}
  uint64_t by_high, by_low;
};

struct FoldMultipliers {
  FoldPair step{2048};  // four 64-byte registers, each 256 bytes on per loop
  FoldPair by1536{1536}, by1024{1024}, by512{512};
  FoldPair by384{384}, by256{256}, by128{128};
};

constexpr size_t kFoldBlock = 256;
// Below this the setup costs more than the crc32 loop.
constexpr size_t kFoldMinBytes = 1024;

#define FT_CRC_FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,sse4.2")))
// (In a namespace of that name: the `portable` test allows AVX instructions only there.)
namespace avx512 {

FT_CRC_FOLD_TARGET inline __m512i Broadcast(const FoldPair& k) {
  return _mm512_set_epi64(static_cast<long long>(k.by_low), static_cast<long long>(k.by_high),
                          static_cast<long long>(k.by_low), static_cast<long long>(k.by_high),
                          static_cast<long long>(k.by_low), static_cast<long long>(k.by_high),
                          static_cast<long long>(k.by_low), static_cast<long long>(k.by_high));
}

// Each 128-bit lane of x folded by k's distance, plus `onto`.
FT_CRC_FOLD_TARGET inline __m512i Fold(__m512i x, __m512i k, __m512i onto) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11),
                                   onto, 0x96);
}

FT_CRC_FOLD_TARGET uint32_t ExtendFolding(uint32_t crc, const uint8_t* p, size_t n) {
  static const FoldMultipliers k;
  uint64_t c = static_cast<uint32_t>(~crc);
  if (n >= kFoldBlock) {
    // The register enters as the crc32 instruction takes it: added to the first 32 bits.
    __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                  _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(c))));
    __m512i x1 = _mm512_loadu_si512(p + 64);
    __m512i x2 = _mm512_loadu_si512(p + 128);
    __m512i x3 = _mm512_loadu_si512(p + 192);
    p += kFoldBlock;
    n -= kFoldBlock;
    const __m512i step = Broadcast(k.step);
    while (n >= kFoldBlock) {
      x0 = Fold(x0, step, _mm512_loadu_si512(p));
      x1 = Fold(x1, step, _mm512_loadu_si512(p + 64));
      x2 = Fold(x2, step, _mm512_loadu_si512(p + 128));
      x3 = Fold(x3, step, _mm512_loadu_si512(p + 192));
      p += kFoldBlock;
      n -= kFoldBlock;
    }
    // Four registers into the last, then its lanes 0-2 (384, 256, 128 bits before lane 3)
    // into lane 3.
    __m512i y = Fold(x0, Broadcast(k.by1536), x3);
    y = Fold(x1, Broadcast(k.by1024), y);
    y = Fold(x2, Broadcast(k.by512), y);
    const __m512i lanes = _mm512_set_epi64(
        0, 0, static_cast<long long>(k.by128.by_low), static_cast<long long>(k.by128.by_high),
        static_cast<long long>(k.by256.by_low), static_cast<long long>(k.by256.by_high),
        static_cast<long long>(k.by384.by_low), static_cast<long long>(k.by384.by_high));
    const __m512i z =
        _mm512_xor_si512(_mm512_clmulepi64_epi128(y, lanes, 0x00), _mm512_clmulepi64_epi128(y, lanes, 0x11));
    // (maskz: the plain extract leaves GCC 12 warning of an undefined pass-through register.)
    const __m128i s = _mm_ternarylogic_epi64(
        _mm_xor_si128(_mm512_maskz_extracti32x4_epi32(0xf, z, 0), _mm512_maskz_extracti32x4_epi32(0xf, z, 1)),
        _mm512_maskz_extracti32x4_epi32(0xf, z, 2), _mm512_maskz_extracti32x4_epi32(0xf, y, 3), 0x96);
    c = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(s)));
    c = _mm_crc32_u64(c, static_cast<uint64_t>(_mm_extract_epi64(s, 1)));
  }
  // The last bytes (fewer than a block) by the instruction, from the register as it stands.
  return ExtendHardware(~static_cast<uint32_t>(c), p, n);
}

}  // namespace avx512
#undef FT_CRC_FOLD_TARGET

bool DetectHardware() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & bit_SSE4_2) != 0;
}

// AVX-512 as the kernels decide it (so FLOWTRAIN_MAX_CPU_ISA caps this path too), plus the
// carry-less multiply on 512-bit registers.
bool DetectFolding() { return DetectHardware() && CpuHasAvx512() && __builtin_cpu_supports("vpclmulqdq"); }
#else
bool DetectHardware() { return false; }
bool DetectFolding() { return false; }
#endif

const bool kHardware = DetectHardware();
const bool kFolding = DetectFolding();

}  // namespace

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (kFolding && n >= kFoldMinBytes) return avx512::ExtendFolding(crc, p, n);
  if (kHardware) return ExtendHardware(crc, p, n);
#endif
  return ExtendPortable(crc, p, n);
}

bool UsesHardware() { return kHardware; }

bool UsesFolding() { return kFolding; }

// Exposed for the tests that check the paths agree.
uint32_t ExtendPortableForTest(uint32_t crc, const void* data, size_t n) {
  return ExtendPortable(crc, static_cast<const uint8_t*>(data), n);
}

uint32_t ExtendInstructionForTest(uint32_t crc, const void* data, size_t n) {
#if defined(__x86_64__)
  if (kHardware) return ExtendHardware(crc, static_cast<const uint8_t*>(data), n);
#endif
  return ExtendPortable(crc, static_cast<const uint8_t*>(data), n);
}

}  // namespace flowtrain::crc32c
