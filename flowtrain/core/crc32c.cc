#include "flowtrain/core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
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
    for (size_t i = 0; i < 8 * kStreamBytes; ++i) shift = (shift & 1) ? (shift >> 1) ^ kPolynomial : shift >> 1;
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) table[k][b] = MultiplyModP(shift, b << (8 * k));
    }
  }
  uint32_t Shift(uint32_t crc) const {
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^ table[3][crc >> 24];
  }
  uint32_t table[4][256];
};

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const uint8_t* p,
                                                           size_t n) {
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
      c = shift.Shift(shift.Shift(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1)) ^ static_cast<uint32_t>(c2);
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

bool DetectHardware() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & bit_SSE4_2) != 0;
}
#else
bool DetectHardware() { return false; }
#endif

const bool kHardware = DetectHardware();

}  // namespace

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (kHardware) return ExtendHardware(crc, p, n);
#endif
  return ExtendPortable(crc, p, n);
}

bool UsesHardware() { return kHardware; }

// Exposed for the test that checks both paths agree.
uint32_t ExtendPortableForTest(uint32_t crc, const void* data, size_t n) {
  return ExtendPortable(crc, static_cast<const uint8_t*>(data), n);
}

}  // namespace flowtrain::crc32c
