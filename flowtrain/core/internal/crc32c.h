// CRC-32C (Castagnoli), as TFRecord framing and checkpoint bundles use it, with TF's mask.
// Uses AVX-512 carry-less multiplies (VPCLMULQDQ) for blocks of 1 KB and more when the CPU has
// them, else the SSE4.2 crc32 instruction when it has that, else a table. Written here because
// Debian 12 packages no C/C++ CRC-32C library (LevelDB keeps its copy private).
//
//   uint32_t crc = crc32c::Value(data, n);      // crc32c::Value("123456789", 9) == 0xE3069283
//   uint32_t stored = crc32c::Mask(crc);        // what TF writes to disk
//   crc = crc32c::Extend(crc, more, m);         // continue over more bytes
#ifndef FLOWTRAIN_CORE_INTERNAL_CRC32C_H_
#define FLOWTRAIN_CORE_INTERNAL_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace flowtrain::crc32c {

// CRC of the concatenation of the bytes `crc` was computed over and data[0, n).
uint32_t Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view data) { return Extend(0, data.data(), data.size()); }

// TF masks stored CRCs so that a CRC over data that itself contains CRCs stays well mixed.
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

inline uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

// True when the hardware instruction is in use (for tests and benchmarks).
bool UsesHardware();
// True when blocks of 1 KB and more are folded with AVX-512 carry-less multiplies.
bool UsesFolding();
// The table-driven path alone, and the crc32-instruction path alone (the table where the CPU
// lacks it), so tests can check every path against the others.
uint32_t ExtendPortableForTest(uint32_t crc, const void* data, size_t n);
uint32_t ExtendInstructionForTest(uint32_t crc, const void* data, size_t n);

}  // namespace flowtrain::crc32c

#endif  // FLOWTRAIN_CORE_INTERNAL_CRC32C_H_
