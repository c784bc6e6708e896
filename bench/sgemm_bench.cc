// Single-core float32 GEMM: flowtrain's products (gemm.h: the AVX-512 micro-kernel where the CPU
// has it, Eigen's GEMM on the portable path) against the libraries made for them, on every
// product shape of the workloads (W3's MLP layers and their gradients, the CNN's im2col
// product, the LSTM's per-step product, 1024^3 and 2048^3). One thread each: flowtrain splits
// a product over the intra-op pool itself, so a core's speed is what its kernel decides.
//
//   sgemm_bench [--seconds 0.3] [--rounds 3]
//   FLOWTRAIN_MAX_CPU_ISA=SSE2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell sgemm_bench
//       # what a CPU without AVX-512 gets: flowtrain's portable path, the libraries' AVX2 code
//
// The libraries are loaded at run time when present (scripts/bench installs them; none is a
// build dependency): oneDNN (libdnnl.so.2, dnnl_sgemm), OpenBLAS pinned to its OpenMP build and
// BLIS (OpenMP build), both through cblas_sgemm. Every library's result is checked against
// flowtrain's before it is timed. Rounds interleave the systems and each keeps its best time.
// Prints, per shape (m x n x k, op(a) op(b)):
//   RESULT sgemm_<shape> <system> gflops <v>         system: flowtrain_avx512 or flowtrain_portable, onednn,
//   openblas, blis RESULT sgemm_<shape> flowtrain vs_best_library <flowtrain gflops / the best library's>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "flowtrain/core/internal/cpu_features.h"
#include "flowtrain/kernels/internal/gemm.h"

namespace ft = flowtrain;

namespace {

struct Shape {
  const char* name;
  int64_t m, n, k;
  bool transpose_a, transpose_b;
};

// W3: MLP 784-2048-2048-10 at batch 256 (forward, weight gradient x^T dy, input gradient dy W^T);
// the CNN's second layer on im2col (64 x 14 x 14 positions, 5x5x32 patches, 64 filters); the
// LSTM's gates per time step ([32, 256] x [256, 512]); the square sizes of the target.
constexpr Shape kShapes[] = {
    {"w3_fwd1_256x2048x784", 256, 2048, 784, false, false},
    {"w3_fwd2_256x2048x2048", 256, 2048, 2048, false, false},
    {"w3_wgrad_784x2048x256_tn", 784, 2048, 256, true, false},
    {"w3_xgrad_256x2048x2048_nt", 256, 2048, 2048, false, true},
    {"cnn_im2col_12544x64x800", 12544, 64, 800, false, false},
    {"lstm_32x512x256", 32, 512, 256, false, false},
    {"square_1024", 1024, 1024, 1024, false, false},
    {"square_2048", 2048, 2048, 2048, false, false},
};

// c = op(a) op(b), row-major, as each system computes it.
using Product = std::function<void(const Shape&, const float* a, const float* b, float* c)>;

struct System {
  std::string name;
  Product run;
};

// The row-major BLAS interface's constants (cblas.h), declared here: no BLAS header is needed.
constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112;
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                            float*, int);
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                          int64_t, float, float*, int64_t);

void* Open(const char* path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }

std::vector<System> Systems() {
  std::vector<System> systems;
  systems.push_back({ft::CpuHasAvx512() ? "flowtrain_avx512" : "flowtrain_portable",
                     [](const Shape& s, const float* a, const float* b, float* c) {
                       ft::GemmOnThisThread<float>({.m = s.m,
                                                    .n = s.n,
                                                    .k = s.k,
                                                    .a = a,
                                                    .lda = s.transpose_a ? s.m : s.k,
                                                    .transpose_a = s.transpose_a,
                                                    .b = b,
                                                    .ldb = s.transpose_b ? s.k : s.n,
                                                    .transpose_b = s.transpose_b,
                                                    .c = c,
                                                    .ldc = s.n});
                     }});
  if (void* dnnl = Open("libdnnl.so.2")) {
    if (auto sgemm = reinterpret_cast<DnnlSgemm>(dlsym(dnnl, "dnnl_sgemm"))) {
      systems.push_back({"onednn", [sgemm](const Shape& s, const float* a, const float* b, float* c) {
                           const int status = sgemm(s.transpose_a ? 'T' : 'N', s.transpose_b ? 'T' : 'N', s.m,
                                                    s.n, s.k, 1.0f, a, s.transpose_a ? s.m : s.k, b,
                                                    s.transpose_b ? s.k : s.n, 0.0f, c, s.n);
                           if (status != 0) {
                             std::fprintf(stderr, "sgemm_bench: dnnl_sgemm failed with status %d\n", status);
                             std::exit(1);
                           }
                         }});
    }
  } else {
    std::fprintf(stderr, "sgemm_bench: oneDNN not found (libdnnl2): %s\n", dlerror());
  }
  struct Blas {
    const char* name;
    const char* path;
    const char* set_threads;  // the library's own thread-count setter
    bool count_is_int;        // OpenBLAS takes an int, BLIS a dim_t (int64_t)
  };
  for (const Blas& blas : {Blas{"openblas", "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
                                "openblas_set_num_threads", true},
                           Blas{"blis", "/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4",
                                "bli_thread_set_num_threads", false}}) {
    void* lib = Open(blas.path);
    if (lib == nullptr) {
      std::fprintf(stderr, "sgemm_bench: %s not found: %s\n", blas.name, dlerror());
      continue;
    }
    auto sgemm = reinterpret_cast<CblasSgemm>(dlsym(lib, "cblas_sgemm"));
    void* set_threads = dlsym(lib, blas.set_threads);
    if (sgemm == nullptr || set_threads == nullptr) {
      std::fprintf(stderr, "sgemm_bench: %s lacks cblas_sgemm or %s\n", blas.name, blas.set_threads);
      continue;
    }
    if (blas.count_is_int) {
      reinterpret_cast<void (*)(int)>(set_threads)(1);
    } else {
      reinterpret_cast<void (*)(int64_t)>(set_threads)(1);
    }
    systems.push_back({blas.name, [sgemm](const Shape& s, const float* a, const float* b, float* c) {
                         sgemm(kCblasRowMajor, s.transpose_a ? kCblasTrans : kCblasNoTrans,
                               s.transpose_b ? kCblasTrans : kCblasNoTrans, static_cast<int>(s.m),
                               static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a,
                               static_cast<int>(s.transpose_a ? s.m : s.k), b,
                               static_cast<int>(s.transpose_b ? s.k : s.n), 0.0f, c, static_cast<int>(s.n));
                       }});
  }
  return systems;
}

std::vector<float> Random(int64_t size, uint64_t seed) {
  std::vector<float> v(size);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& x : v) x = dist(rng);
  return v;
}

// Seconds per product: the best of repeated runs filling `seconds`.
double BestSeconds(const System& system, const Shape& s, const float* a, const float* b, float* c,
                   double seconds) {
  using Clock = std::chrono::steady_clock;
  double best = 1e30;
  const auto stop =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (int runs = 0; runs < 3 || Clock::now() < stop; ++runs) {
    const Clock::time_point start = Clock::now();
    system.run(s, a, b, c);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0.3;
  int rounds = 3;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[++i]);
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[++i]);
  }
  setenv("OMP_NUM_THREADS", "1", 0);  // oneDNN's OpenMP runtime: one thread, like the others
  const std::vector<System> systems = Systems();
  for (const Shape& s : kShapes) {
    const std::vector<float> a = Random(s.m * s.k, 1), b = Random(s.k * s.n, 2);
    std::vector<float> reference(s.m * s.n), c(s.m * s.n);
    systems[0].run(s, a.data(), b.data(), reference.data());
    std::vector<double> best(systems.size(), 1e30);
    for (size_t i = 1; i < systems.size(); ++i) {
      systems[i].run(s, a.data(), b.data(), c.data());
      double worst = 0;
      for (int64_t j = 0; j < s.m * s.n; ++j) {
        worst =
            std::max(worst, std::abs(double(c[j]) - reference[j]) / (1.0 + std::abs(double(reference[j]))));
      }
      if (worst > 1e-3) {
        std::fprintf(stderr, "sgemm_bench: %s's %s differs from flowtrain's by %g\n", systems[i].name.c_str(),
                     s.name, worst);
        return 1;
      }
    }
    for (int round = 0; round < rounds; ++round) {
      for (size_t i = 0; i < systems.size(); ++i) {
        best[i] = std::min(best[i], BestSeconds(systems[i], s, a.data(), b.data(), c.data(), seconds));
      }
    }
    const double flops = 2.0 * s.m * s.n * s.k;
    double best_library = 0;
    for (size_t i = 0; i < systems.size(); ++i) {
      const double gflops = flops / best[i] / 1e9;
      std::printf("RESULT sgemm_%s %s gflops %.1f\n", s.name, systems[i].name.c_str(), gflops);
      if (i > 0) best_library = std::max(best_library, gflops);
    }
    if (best_library > 0) {
      std::printf("RESULT sgemm_%s flowtrain vs_best_library %.2f\n", s.name,
                  flops / best[0] / 1e9 / best_library);
    }
    std::fflush(stdout);
  }
  return 0;
}
