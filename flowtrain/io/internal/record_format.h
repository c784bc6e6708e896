// The TFRecord framing shared by RecordWriter and RecordReader (docs/tf_behaviour.md §4.1):
//
//   uint64 length | uint32 masked_crc32c(length bytes) | payload | uint32 masked_crc32c(payload)
//
// all little-endian. The length has its own CRC so that a corrupt length is caught before it
// is trusted to say how many bytes to read.
//
//   char header[kRecordHeaderSize];
//   EncodeRecordHeader(payload.size(), header);
//   uint32_t footer = RecordChecksum(payload);
#ifndef FLOWTRAIN_IO_INTERNAL_RECORD_FORMAT_H_
#define FLOWTRAIN_IO_INTERNAL_RECORD_FORMAT_H_

#include <cstdint>
#include <cstring>
#include <string_view>

#include "flowtrain/core/internal/crc32c.h"

namespace flowtrain::io {

inline constexpr size_t kRecordHeaderSize = sizeof(uint64_t) + sizeof(uint32_t);
inline constexpr size_t kRecordFooterSize = sizeof(uint32_t);

inline void EncodeFixed32(uint32_t value, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

inline void EncodeFixed64(uint64_t value, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

inline uint32_t DecodeFixed32(const char* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return value;
}

inline uint64_t DecodeFixed64(const char* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return value;
}

// The masked CRC stored after `data` (the length bytes or the payload).
inline uint32_t RecordChecksum(std::string_view data) {
  return crc32c::Mask(crc32c::Value(data.data(), data.size()));
}

// Writes the 12-byte header for a payload of `length` bytes.
inline void EncodeRecordHeader(uint64_t length, char* out) {
  EncodeFixed64(length, out);
  EncodeFixed32(RecordChecksum(std::string_view(out, sizeof(uint64_t))), out + sizeof(uint64_t));
}

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_INTERNAL_RECORD_FORMAT_H_
