// LevelDB's varint decoding, as its tables and TF's bundle string lengths use it: 7 bits a
// byte, low bits first, at most 5 bytes for 32 bits and 10 for 64. Readers that check bytes
// before LevelDB sees them must decode exactly as it does.
//
//   const char* p = data;
//   uint64_t length;
//   if (!GetVarint64(&p, data + size, &length)) ...;  // p is now past the varint
#ifndef FLOWTRAIN_IO_INTERNAL_VARINT_H_
#define FLOWTRAIN_IO_INTERNAL_VARINT_H_

#include <cstdint>

namespace flowtrain::io {

// Decodes the varint at *p (not reading at or past `limit`) and advances *p past it; false
// when it is cut off or too long.
inline bool GetVarint32(const char** p, const char* limit, uint32_t* value) {
  uint32_t result = 0;
  for (int shift = 0; shift <= 28 && *p < limit; shift += 7) {
    const uint32_t byte = static_cast<unsigned char>(**p);
    ++*p;
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

inline bool GetVarint64(const char** p, const char* limit, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && *p < limit; shift += 7) {
    const uint64_t byte = static_cast<unsigned char>(**p);
    ++*p;
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_INTERNAL_VARINT_H_
