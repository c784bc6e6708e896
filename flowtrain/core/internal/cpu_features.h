// Which optional x86-64 instruction sets this CPU offers the kernels. The library is built for
// the x86-64 baseline (FLOWTRAIN_NATIVE=OFF, the default), so a binary runs on any x86-64 CPU;
// the few hand-written kernels that need AVX-512 are compiled for it on their own (between
// FLOWTRAIN_BEGIN_AVX512_CODE and FLOWTRAIN_END_AVX512_CODE) and run only where
// CpuHasAvx512() says so, the other CPUs taking the portable path.
//
//   if (CpuHasAvx512()) {
//     avx512::Sgemm(args);  // defined between the markers
//   } else {
//     PortableGemm(args);
//   }
//
// FLOWTRAIN_MAX_CPU_ISA in the environment caps what is used, as oneDNN's ONEDNN_MAX_CPU_ISA
// does: SSE2 or AVX2 turn the AVX-512 kernels off (the way to test the portable paths on an
// AVX-512 machine), AVX512 (or unset) allows them. Thread-safe; decided once per process.
#ifndef FLOWTRAIN_CORE_CPU_FEATURES_H_
#define FLOWTRAIN_CORE_CPU_FEATURES_H_

namespace flowtrain {

// Whether the CPU and the operating system support AVX-512 F and VL (and FMA), and
// FLOWTRAIN_MAX_CPU_ISA does not exclude them. An unrecognised FLOWTRAIN_MAX_CPU_ISA value is
// reported once on stderr and leaves the default.
bool CpuHasAvx512();

}  // namespace flowtrain

// Functions defined between these markers are compiled for AVX-512 F/VL with FMA whatever the
// build targets; call them only when CpuHasAvx512(). Templates and lambdas defined there are
// too; code instantiated from headers outside them (the standard library, Eigen) is not, so no
// AVX-512 copy of a shared inline function can reach the rest of the program. Keep such code
// in a namespace named avx512: the `portable` test allows AVX instructions only there.
#if defined(__x86_64__) && defined(__clang__)
#define FLOWTRAIN_HAS_AVX512_CODE 1
#define FLOWTRAIN_BEGIN_AVX512_CODE \
  _Pragma("clang attribute push(__attribute__((target(\"avx512f,avx512vl,fma\"))), apply_to = function)")
#define FLOWTRAIN_END_AVX512_CODE _Pragma("clang attribute pop")
#elif defined(__x86_64__) && defined(__GNUC__)
#define FLOWTRAIN_HAS_AVX512_CODE 1
#define FLOWTRAIN_BEGIN_AVX512_CODE \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,avx512vl,fma\")")
#define FLOWTRAIN_END_AVX512_CODE _Pragma("GCC pop_options")
#else
#define FLOWTRAIN_HAS_AVX512_CODE 0
#endif

#endif  // FLOWTRAIN_CORE_CPU_FEATURES_H_
