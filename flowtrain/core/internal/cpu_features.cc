#include "flowtrain/core/internal/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace flowtrain {
namespace {

// Whether FLOWTRAIN_MAX_CPU_ISA allows AVX-512.
bool Avx512Allowed() {
  const char* value = std::getenv("FLOWTRAIN_MAX_CPU_ISA");
  if (value == nullptr || *value == '\0') return true;
  const std::string_view isa(value);
  if (isa == "AVX512" || isa == "avx512") return true;
  if (isa == "SSE2" || isa == "sse2" || isa == "AVX2" || isa == "avx2") return false;
  std::fprintf(stderr,
               "flowtrain: FLOWTRAIN_MAX_CPU_ISA=%s is not one of SSE2, AVX2, AVX512; "
               "using every instruction set the CPU has\n",
               value);
  return true;
}

bool Detect() {
#if FLOWTRAIN_HAS_AVX512_CODE
  // __builtin_cpu_supports also checks that the OS saves the AVX-512 registers (XCR0).
  __builtin_cpu_init();
  const bool cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("fma");
  return cpu && Avx512Allowed();
#else
  return false;
#endif
}

}  // namespace

bool CpuHasAvx512() {
  static const bool has = Detect();
  return has;
}

}  // namespace flowtrain
