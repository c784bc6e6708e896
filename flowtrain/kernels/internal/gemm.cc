#include "flowtrain/kernels/internal/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <thread>
#include <type_traits>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/core/internal/cpu_features.h"
#include "flowtrain/framework/work_sharder.h"

#if FLOWTRAIN_HAS_AVX512_CODE
#include <immintrin.h>
#endif

namespace flowtrain {
namespace {

using Eigen::Index;

// A shared operand of a split product at least this big is packed by the threads together
// (Gemm); a smaller one takes less time to pack than a helper thread may take to arrive, and
// waiting for a piece a delayed helper claimed cost more than packing it all (a 64-example
// MLP step ran slower).
constexpr int64_t kMinSharedPackBytes = 512 * 1024;

// A product below this many flops runs on one thread: a half of it takes about as long as
// handing it to another core does (~10 us), so splitting gains nothing.
constexpr double kMinFlopsPerShard = 1.5e6;

// Growable 64-byte-aligned storage kept between products.
template <typename T>
class PackBuffer {
 public:
  T* Get(Index elements) {
    if (elements > capacity_) {
      const size_t bytes = (static_cast<size_t>(elements) * sizeof(T) + 63) / 64 * 64;
      data_.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
      capacity_ = data_ == nullptr ? 0 : elements;
      if (data_ == nullptr) throw std::bad_alloc();
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  Index capacity_ = 0;
};

// Packed copies of the current blocks of both operands, one pair per thread: a thread runs
// one product at a time, and the buffers' pages stay mapped from step to step (first-touching
// fresh pages is slow on these machines).
template <typename T>
struct PackBuffers {
  PackBuffer<T> lhs, rhs;
  PackBuffer<T> whole;  // an operand every chunk of a split product shares (Gemm)
};

template <typename T>
PackBuffers<T>& PackBuffersOfThisThread() {
  thread_local PackBuffers<T> buffers;
  return buffers;
}

// Eigen's blocking (cache block sizes and packing buffers) on this thread's buffers instead
// of memory allocated per product.
template <typename T>
class ReusedBlocking : public Eigen::internal::level3_blocking<T, T> {
 public:
  // For the row-major [m, n] product of depth k, which Eigen computes as its column-major
  // transpose: its rows are our columns.
  ReusedBlocking(Index m, Index n, Index k) {
    this->m_mc = n;
    this->m_nc = m;
    this->m_kc = k;
    Eigen::internal::computeProductBlockingSizes<T, T, 1>(this->m_kc, this->m_mc, this->m_nc, Index{1});
    PackBuffers<T>& buffers = PackBuffersOfThisThread<T>();
    this->m_blockA = buffers.lhs.Get(this->m_mc * this->m_kc);
    this->m_blockB = buffers.rhs.Get(this->m_kc * this->m_nc);
  }
};

// c += alpha * op(a) * op(b) by Eigen's blocked GEMM; op(x) is row-major x or, transposed, the
// column-major view of the same memory.
template <typename T, int kLhsOrder, int kRhsOrder>
void BlockedProduct(const GemmArgs<T>& g) {
  using Impl = Eigen::internal::general_matrix_matrix_product<Index, T, kLhsOrder, false, T, kRhsOrder, false,
                                                              Eigen::RowMajor, 1>;
  ReusedBlocking<T> blocking(g.m, g.n, g.k);
  Impl::run(g.m, g.n, g.k, g.a, g.lda, g.b, g.ldb, g.c, 1, g.ldc, g.alpha, blocking, nullptr);
}

template <typename T, int kOrder>
using MatrixView =
    Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, kOrder>, 0, Eigen::OuterStride<>>;
template <typename T>
using ColumnView = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>, 0, Eigen::InnerStride<>>;
template <typename T>
using ConstColumnView = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>, 0, Eigen::InnerStride<>>;

template <typename Dst, typename Product, typename T>
void Assign(Dst&& dst, const Product& product, bool accumulate, T alpha) {
  if (accumulate) {
    dst.noalias() += alpha * product;
  } else {
    dst.noalias() = alpha * product;
  }
}

// A product with a single output column or row: Eigen's matrix-vector kernels, which stream
// the matrix once instead of packing it.
template <typename T>
void MatrixVectorProduct(const GemmArgs<T>& g) {
  if (g.n == 1) {
    // c[:, 0] = op(a) * op(b)[:, 0]; column j of op(b) is b[j * ldb], or b[j] transposed.
    ConstColumnView<T> x(g.b, g.k, Eigen::InnerStride<>(g.transpose_b ? 1 : g.ldb));
    ColumnView<T> y(g.c, g.m, Eigen::InnerStride<>(g.ldc));
    if (g.transpose_a) {
      Assign(y, MatrixView<T, Eigen::ColMajor>(g.a, g.m, g.k, Eigen::OuterStride<>(g.lda)) * x, g.accumulate,
             g.alpha);
    } else {
      Assign(y, MatrixView<T, Eigen::RowMajor>(g.a, g.m, g.k, Eigen::OuterStride<>(g.lda)) * x, g.accumulate,
             g.alpha);
    }
    return;
  }
  // c[0, :]^T = op(b)^T * op(a)[0, :]^T; op(b)^T is b read the other way round.
  ConstColumnView<T> x(g.a, g.k, Eigen::InnerStride<>(g.transpose_a ? g.lda : 1));
  ColumnView<T> y(g.c, g.n, Eigen::InnerStride<>(1));
  if (g.transpose_b) {
    Assign(y, MatrixView<T, Eigen::RowMajor>(g.b, g.n, g.k, Eigen::OuterStride<>(g.ldb)) * x, g.accumulate,
           g.alpha);
  } else {
    Assign(y, MatrixView<T, Eigen::ColMajor>(g.b, g.n, g.k, Eigen::OuterStride<>(g.ldb)) * x, g.accumulate,
           g.alpha);
  }
}

#if FLOWTRAIN_HAS_AVX512_CODE
// float32 products on an AVX-512 micro-kernel (GotoBLAS's scheme): Eigen's gebp kernel,
// as GCC compiles it, reaches ~80% of the speed OpenBLAS gets from these cores; this one
// matches OpenBLAS (measured 100-108 GFLOP/s per core on W2, W3 and CNN shapes, Eigen 77-86).
// Blocks of depth kDepth of op(a) and op(b) are packed into panels of kRows rows and kCols
// columns (k-major, zero-padded), and each kRows x kCols tile of c is accumulated in 16
// registers: per step of k, two vector loads of b and kRows broadcasts of a feed 16 FMAs.
// Tiles over c's edges store through masks. Compiled for AVX-512 whatever the build targets,
// run only when CpuHasAvx512().
FLOWTRAIN_BEGIN_AVX512_CODE
namespace avx512 {

constexpr int64_t kRows = 8;        // rows of c per tile
constexpr int64_t kCols = 32;       // columns of c per tile: two 16-float vectors
constexpr int64_t kDepth = 512;     // k per packed block
constexpr int64_t kGroupRows = 64;  // rows of op(a) packed together (a multiple of kRows)
// Bytes of a packed block of op(b) that the rows of a group pass over before the next slice:
// with the group of op(a), well inside the 1-2 MB L2 of the cores this is tuned for.
constexpr int64_t kSliceBytes = 512 * 1024;

// Lanes [0, count) of a 16-float vector, clamped to [0, 16].
inline __mmask16 FirstLanes(int64_t count) {
  return static_cast<__mmask16>(count >= 16 ? 0xFFFF : count <= 0 ? 0 : (1u << count) - 1);
}

// c[i * ldc + j] (=, or += unless kStore) alpha * sum over kk < kc of a[kk * kRows + i] * b[kk * width + j]
// for i < rows and j < cols, where width = 16 * kVectors >= cols: a tile of kRows x width
// computed in registers, stored through masks where it hangs over c's edges. The epilogue
// (the last depth block's: bias[j] added, then relu) runs on the registers before the store.
struct Epilogue {
  float alpha = 1;
  const float* bias = nullptr;  // this tile's first column
  bool relu = false;
  const float* features = nullptr;  // this tile's top left (ReluGrad's features)
  int64_t ldf = 0;
};

// kEpilogue false (no alpha, bias, relu or features) compiles the plain store of the
// unfused products: with the epilogue's branches in it, GCC kept the accumulators in memory
// between the loop and the store.
template <int kVectors, bool kStore, bool kEpilogue>
// Inlined into Sgemm: a call per tile cost ~5% on products of depth 64.
[[gnu::always_inline]] inline void MicroKernel(int64_t kc, const float* a, const float* b, float* c,
                                               int64_t ldc, int64_t rows, int64_t cols,
                                               const Epilogue& epilogue) {
  if constexpr (kEpilogue && !kStore) {
    // Accumulating into a variable (the fused SGD update): its tile, a row apart in memory and
    // not in cache, is fetched while the products run instead of stalling the loads after.
    for (int i = 0; i < kRows; ++i) {
      if (i >= rows) break;
      for (int v = 0; v < kVectors; ++v)
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16 * v), _MM_HINT_T0);
    }
  }
  __m512 acc[kRows][kVectors];
  for (int i = 0; i < kRows; ++i) {
    for (int v = 0; v < kVectors; ++v) acc[i][v] = _mm512_setzero_ps();
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    __m512 bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = _mm512_load_ps(b + 16 * v);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      for (int v = 0; v < kVectors; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += kRows;
    b += 16 * kVectors;
  }
  __mmask16 mask[kVectors];
  for (int v = 0; v < kVectors; ++v) mask[v] = FirstLanes(cols - 16 * v);
  if constexpr (!kEpilogue) {
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      if (i >= rows) break;
      float* row = c + i * ldc;
      for (int v = 0; v < kVectors; ++v) {
        const __m512 sum =
            kStore ? acc[i][v] : _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], row + 16 * v), acc[i][v]);
        _mm512_mask_storeu_ps(row + 16 * v, mask[v], sum);
      }
    }
    return;
  }
  if (epilogue.alpha != 1.0f) {
    const __m512 alpha = _mm512_set1_ps(epilogue.alpha);
    for (int i = 0; i < kRows; ++i) {
      for (int v = 0; v < kVectors; ++v) acc[i][v] = _mm512_mul_ps(alpha, acc[i][v]);
    }
  }
  __m512 bias[kVectors];
  for (int v = 0; v < kVectors; ++v) {
    bias[v] = epilogue.bias != nullptr ? _mm512_maskz_loadu_ps(mask[v], epilogue.bias + 16 * v)
                                       : _mm512_setzero_ps();
  }
  const bool add_bias = epilogue.bias != nullptr;
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    if (i >= rows) break;
    float* row = c + i * ldc;
    for (int v = 0; v < kVectors; ++v) {
      __m512 sum =
          kStore ? acc[i][v] : _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], row + 16 * v), acc[i][v]);
      if (add_bias) sum = _mm512_add_ps(sum, bias[v]);
      // The zero-masking form: GCC 12 warns that _mm512_max_ps's undefined pass-through
      // "may be used uninitialized" when it is compiled under a target pragma.
      if (epilogue.relu) sum = _mm512_maskz_max_ps(0xFFFF, sum, _mm512_setzero_ps());
      if (epilogue.features != nullptr) {
        const __m512 f = _mm512_maskz_loadu_ps(mask[v], epilogue.features + i * epilogue.ldf + 16 * v);
        sum = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(f, _mm512_setzero_ps(), _CMP_GT_OQ), sum);
      }
      _mm512_mask_storeu_ps(row + 16 * v, mask[v], sum);
    }
  }
}

// Transposes the 8x8 block whose rows are r0..r7.
inline void Transpose8x8(__m256& r0, __m256& r1, __m256& r2, __m256& r3, __m256& r4, __m256& r5, __m256& r6,
                         __m256& r7) {
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r0 = _mm256_permute2f128_ps(s0, s4, 0x20);
  r1 = _mm256_permute2f128_ps(s1, s5, 0x20);
  r2 = _mm256_permute2f128_ps(s2, s6, 0x20);
  r3 = _mm256_permute2f128_ps(s3, s7, 0x20);
  r4 = _mm256_permute2f128_ps(s0, s4, 0x31);
  r5 = _mm256_permute2f128_ps(s1, s5, 0x31);
  r6 = _mm256_permute2f128_ps(s2, s6, 0x31);
  r7 = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// A panel from lines that run along k: dst[kk * width + j] = src[j * ld + kk] for j < lines,
// 0 for lines <= j < width (a multiple of 8). 8x8 blocks are transposed in registers.
void PackLines(const float* src, int64_t ld, int64_t lines, int64_t kc, int64_t width, float* dst) {
  for (int64_t j0 = 0; j0 < width; j0 += 8) {
    int64_t kk = 0;
    if (j0 + 8 <= lines) {
      const float* s = src + j0 * ld;
      for (; kk + 8 <= kc; kk += 8) {
        __m256 r0 = _mm256_loadu_ps(s + kk), r1 = _mm256_loadu_ps(s + ld + kk);
        __m256 r2 = _mm256_loadu_ps(s + 2 * ld + kk), r3 = _mm256_loadu_ps(s + 3 * ld + kk);
        __m256 r4 = _mm256_loadu_ps(s + 4 * ld + kk), r5 = _mm256_loadu_ps(s + 5 * ld + kk);
        __m256 r6 = _mm256_loadu_ps(s + 6 * ld + kk), r7 = _mm256_loadu_ps(s + 7 * ld + kk);
        Transpose8x8(r0, r1, r2, r3, r4, r5, r6, r7);
        float* d = dst + kk * width + j0;
        _mm256_storeu_ps(d, r0);
        _mm256_storeu_ps(d + width, r1);
        _mm256_storeu_ps(d + 2 * width, r2);
        _mm256_storeu_ps(d + 3 * width, r3);
        _mm256_storeu_ps(d + 4 * width, r4);
        _mm256_storeu_ps(d + 5 * width, r5);
        _mm256_storeu_ps(d + 6 * width, r6);
        _mm256_storeu_ps(d + 7 * width, r7);
      }
    }
    for (; kk < kc; ++kk) {  // the k tail, and lines past the end (zero padding)
      for (int64_t j = j0; j < j0 + 8; ++j) dst[kk * width + j] = j < lines ? src[j * ld + kk] : 0.0f;
    }
  }
}

constexpr int64_t kPrefetchLines = 8;

// Panels from lines that run across them, several side by side: line kk of src (src + kk * ld)
// spans `count` values, which go to panel p = j / width as dst[p * width * kc + kk * width +
// j % width], zero-padded to whole panels (width 8, 16 or 32). Each source line is read once
// from start to end: reading one panel's span of every line, then the next panel's, fetched
// every line again (lines lie a whole matrix row apart, so they evict one another in L1/L2).
void PackSpans(const float* src, int64_t ld, int64_t count, int64_t kc, int64_t width, float* dst) {
  const int64_t panels = (count + width - 1) / width;
  if (width == 8) {
    for (int64_t kk = 0; kk < kc; ++kk) {
      const float* s = src + kk * ld;
      float* d = dst + kk * 8;
      for (int64_t p = 0; p < panels; ++p) {
        if (count - 8 * p >= 8) {
          _mm256_store_ps(d + p * 8 * kc, _mm256_loadu_ps(s + 8 * p));
        } else {
          const __mmask8 valid = static_cast<__mmask8>(FirstLanes(count - 8 * p));
          _mm256_store_ps(d + p * 8 * kc, _mm256_maskz_loadu_ps(valid, s + 8 * p));
        }
      }
    }
    return;
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    const float* s = src + kk * ld;
    float* d = dst + kk * width;
    // Lines a matrix row apart (often a page or more) defeat the hardware prefetchers, which
    // follow streams within a page: fetch kPrefetchLines ahead by hand.
    const float* ahead = kk + kPrefetchLines < kc ? s + kPrefetchLines * ld : nullptr;
    for (int64_t p = 0; p < panels; ++p) {
      for (int64_t v = 0; v < width; v += 16) {
        const int64_t j = p * width + v;  // the vector's first column
        if (ahead != nullptr && j < count)
          _mm_prefetch(reinterpret_cast<const char*>(ahead + j), _MM_HINT_T0);
        float* out = d + p * width * kc + v;
        if (j + 16 <= count) {
          _mm512_store_ps(out, _mm512_loadu_ps(s + j));
        } else {
          _mm512_store_ps(out, _mm512_maskz_loadu_ps(FirstLanes(count - j), s + j));
        }
      }
    }
  }
}

// Rows [row, row + rows) of op(a) at depth [depth_begin, depth_begin + depth), as panels of
// kRows rows: panel p at dst + p * kRows * depth, as dst[kk * kRows + i] (zero for rows past
// the end).
void PackRowsOfA(const GemmArgs<float>& g, int64_t row, int64_t rows, int64_t depth_begin, int64_t depth,
                 float* dst) {
  if (g.transpose_a) {
    PackSpans(g.a + depth_begin * g.lda + row, g.lda, rows, depth, kRows, dst);
    return;
  }
  for (int64_t i0 = 0; i0 < rows; i0 += kRows) {
    PackLines(g.a + (row + i0) * g.lda + depth_begin, g.lda, std::min(kRows, rows - i0), depth, kRows,
              dst + i0 * depth);
  }
}

// Column panels are kCols wide, but for a last one of at most 16 columns (narrow outputs
// such as 10 classes), which is 16 wide and multiplied by the one-vector kernel.
int64_t PanelWidth(const GemmArgs<float>& g, int64_t j0) { return g.n - j0 > 16 ? kCols : int64_t{16}; }

// The block of op(b) at depth [depth_begin, depth_begin + depth), columns [first, end) (first
// a multiple of kCols; by default every column), as panels: the one at column j0 at
// dst + j0 * depth (every earlier panel is kCols wide; the last is PanelWidth wide).
void PackBlockOfB(const GemmArgs<float>& g, int64_t depth_begin, int64_t depth, float* dst, int64_t first = 0,
                  int64_t end = -1) {
  if (end < 0) end = g.n;
  if (!g.transpose_b) {
    // Whole kCols panels, then a narrower last one, each source line read once across them.
    const int64_t last = (g.n - 1) / kCols * kCols;  // the last panel's first column
    const int64_t wide_end = std::min(end, PanelWidth(g, last) == kCols ? g.n : last);
    const float* src = g.b + depth_begin * g.ldb;
    if (wide_end > first) PackSpans(src + first, g.ldb, wide_end - first, depth, kCols, dst + first * depth);
    const int64_t narrow = std::max(first, wide_end);
    if (end > narrow) PackSpans(src + narrow, g.ldb, end - narrow, depth, 16, dst + narrow * depth);
    return;
  }
  for (int64_t j0 = first; j0 < end; j0 += kCols) {
    PackLines(g.b + j0 * g.ldb + depth_begin, g.ldb, std::min(kCols, g.n - j0), depth, PanelWidth(g, j0),
              dst + j0 * depth);
  }
}

int64_t PaddedRows(int64_t m) { return (m + kRows - 1) / kRows * kRows; }
int64_t PaddedCols(int64_t n) { return (n + kCols - 1) / kCols * kCols; }

// A whole operand packed for a product split into chunks that all share it: op(a) (all rows,
// every depth block: block pc at dst + pc * PaddedRows(m), rows from i0 at + i0 * kc) when
// the chunks are column ranges, op(b) (block pc at dst + pc * PaddedCols(n), columns from j0
// at + j0 * kc) when they are row ranges. It is packed in pieces (a group of kGroupRows rows
// or kPieceCols columns of one depth block) that the threads claim in turn, so the threads
// share the packing instead of each packing it all.
class WholeOperand {
 public:
  static constexpr int64_t kPieceCols = 8 * kCols;

  WholeOperand(const GemmArgs<float>& g, bool of_a, float* dst)
      : g_(g),
        of_a_(of_a),
        dst_(dst),
        per_block_(of_a ? (g.m + kGroupRows - 1) / kGroupRows : (g.n + kPieceCols - 1) / kPieceCols),
        pieces_(per_block_ * ((g.k + kDepth - 1) / kDepth)) {}

  static int64_t Elements(const GemmArgs<float>& g, bool of_a) {
    return (of_a ? PaddedRows(g.m) : PaddedCols(g.n)) * g.k;
  }

  // Packs unclaimed pieces, then waits until the other threads' pieces are packed too (at
  // most the time of one piece: they are claimed only by threads already packing).
  const float* Packed() {
    for (int64_t p = next_.fetch_add(1, std::memory_order_relaxed); p < pieces_;
         p = next_.fetch_add(1, std::memory_order_relaxed)) {
      Pack(p);
      done_.fetch_add(1, std::memory_order_release);
    }
    for (int spins = 0; done_.load(std::memory_order_acquire) < pieces_; ++spins) {
      if (spins < 1024) {
        _mm_pause();
      } else {
        std::this_thread::yield();  // the packing thread lost its core (a loaded machine)
      }
    }
    return dst_;
  }

 private:
  void Pack(int64_t piece) const {
    const int64_t pc = piece / per_block_ * kDepth, kc = std::min(kDepth, g_.k - pc);
    if (of_a_) {
      const int64_t i0 = piece % per_block_ * kGroupRows;
      PackRowsOfA(g_, i0, std::min(kGroupRows, g_.m - i0), pc, kc, dst_ + pc * PaddedRows(g_.m) + i0 * kc);
    } else {
      const int64_t j0 = piece % per_block_ * kPieceCols;
      PackBlockOfB(g_, pc, kc, dst_ + pc * PaddedCols(g_.n), j0, std::min(g_.n, j0 + kPieceCols));
    }
  }

  const GemmArgs<float>& g_;
  const bool of_a_;
  float* const dst_;
  const int64_t per_block_, pieces_;
  std::atomic<int64_t> next_{0}, done_{0};
};

// c = op(a) * op(b) in GotoBLAS's loop order. Per depth block: the block of op(b) is packed
// (or taken from `whole_b`, a WholeOperand's copy); op(a) is packed kGroupRows rows at a time
// (or taken from `whole_a`, a WholeOperand's), and that group is multiplied with the block of op(b)
// a slice of columns at a time, so the slice (<= kSliceBytes) stays in L2 while every row
// panel of the group (each in L1 while in use) passes over it.
void Sgemm(const GemmArgs<float>& g, const float* whole_a, const float* whole_b) {
  const int64_t depth = std::min(kDepth, g.k);
  PackBuffers<float>& buffers = PackBuffersOfThisThread<float>();
  float* packed_b = whole_b != nullptr ? nullptr : buffers.rhs.Get(PaddedCols(g.n) * depth);
  float* packed_a = whole_a != nullptr ? nullptr : buffers.lhs.Get(kGroupRows * depth);
  const int64_t slice_cols = std::max<int64_t>(kCols, kSliceBytes / (4 * depth) / kCols * kCols);
  for (int64_t pc = 0; pc < g.k; pc += kDepth) {
    const int64_t kc = std::min(kDepth, g.k - pc);
    const float* b_block = packed_b;
    if (whole_b != nullptr) {
      b_block = whole_b + pc * PaddedCols(g.n);
    } else {
      PackBlockOfB(g, pc, kc, packed_b);
    }
    // The first block overwrites c unless the caller accumulates: no separate zeroing pass.
    const bool store = pc == 0 && !g.accumulate;
    // Every block scales its part by alpha; only the last adds the bias and clamps.
    const bool last_block = pc + kc >= g.k;
    Epilogue epilogue{
        .alpha = g.alpha, .bias = nullptr, .relu = last_block && g.relu, .features = nullptr, .ldf = g.ldf};
    const bool fused =
        g.alpha != 1.0f || (last_block && (g.bias != nullptr || g.relu || g.relu_features != nullptr));
    for (int64_t group = 0; group < g.m; group += kGroupRows) {
      const int64_t group_rows = std::min(kGroupRows, g.m - group);
      const float* a_group = packed_a;
      if (whole_a != nullptr) {
        a_group = whole_a + pc * PaddedRows(g.m) + group * kc;
      } else {
        PackRowsOfA(g, group, group_rows, pc, kc, packed_a);
      }
      for (int64_t slice = 0; slice < g.n; slice += slice_cols) {
        const int64_t slice_end = std::min(g.n, slice + slice_cols);
        for (int64_t i0 = 0; i0 < group_rows; i0 += kRows) {
          const int64_t rows = std::min(kRows, group_rows - i0);
          const float* a = a_group + i0 * kc;
          float* c_row = g.c + (group + i0) * g.ldc;
          for (int64_t j0 = slice; j0 < slice_end; j0 += kCols) {
            const int64_t cols = std::min(kCols, g.n - j0);
            const float* b = b_block + j0 * kc;
            epilogue.bias = last_block && g.bias != nullptr ? g.bias + j0 : nullptr;
            epilogue.features = last_block && g.relu_features != nullptr
                                    ? g.relu_features + (group + i0) * g.ldf + j0
                                    : nullptr;
            float* c_tile = c_row + j0;
            if (fused) {
              if (PanelWidth(g, j0) == kCols) {
                if (store) {
                  MicroKernel<2, true, true>(kc, a, b, c_tile, g.ldc, rows, cols, epilogue);
                } else {
                  MicroKernel<2, false, true>(kc, a, b, c_tile, g.ldc, rows, cols, epilogue);
                }
              } else if (store) {
                MicroKernel<1, true, true>(kc, a, b, c_tile, g.ldc, rows, cols, epilogue);
              } else {
                MicroKernel<1, false, true>(kc, a, b, c_tile, g.ldc, rows, cols, epilogue);
              }
            } else if (PanelWidth(g, j0) == kCols) {
              if (store) {
                MicroKernel<2, true, false>(kc, a, b, c_tile, g.ldc, rows, cols, epilogue);
              } else {
                MicroKernel<2, false, false>(kc, a, b, c_tile, g.ldc, rows, cols, epilogue);
              }
            } else if (store) {
              MicroKernel<1, true, false>(kc, a, b, c_tile, g.ldc, rows, cols, epilogue);
            } else {
              MicroKernel<1, false, false>(kc, a, b, c_tile, g.ldc, rows, cols, epilogue);
            }
          }
        }
      }
    }
  }
}

}  // namespace avx512
FLOWTRAIN_END_AVX512_CODE
#endif  // FLOWTRAIN_HAS_AVX512_CODE

}  // namespace

// The epilogue (bias, relu) as a pass over c, for the products computed by Eigen.
template <typename T>
void ApplyEpilogue(const GemmArgs<T>& g) {
  if (g.bias == nullptr && !g.relu && g.relu_features == nullptr) return;
  for (int64_t i = 0; i < g.m; ++i) {
    T* row = g.c + i * g.ldc;
    if (g.bias != nullptr) {
      for (int64_t j = 0; j < g.n; ++j) row[j] += g.bias[j];
    }
    if (g.relu) {
      for (int64_t j = 0; j < g.n; ++j) row[j] = std::max(row[j], T(0));
    }
    if (g.relu_features != nullptr) {
      const T* features = g.relu_features + i * g.ldf;
      for (int64_t j = 0; j < g.n; ++j) row[j] = features[j] > T(0) ? row[j] : T(0);
    }
  }
}

template <typename T>
void GemmOnThisThread(const GemmArgs<T>& g) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0 || g.n == 1 || g.m == 1) {
    if (g.k <= 0) {
      if (!g.accumulate) {
        for (int64_t i = 0; i < g.m; ++i) std::fill_n(g.c + i * g.ldc, g.n, T(0));
      }
    } else {
      MatrixVectorProduct(g);
    }
    ApplyEpilogue(g);
    return;
  }
#if FLOWTRAIN_HAS_AVX512_CODE
  if constexpr (std::is_same_v<T, float>) {
    if (CpuHasAvx512()) {
      avx512::Sgemm(g, nullptr, nullptr);
      return;
    }
  }
#endif
  if (!g.accumulate) {
    for (int64_t i = 0; i < g.m; ++i) std::fill_n(g.c + i * g.ldc, g.n, T(0));
  }
  constexpr int kRow = Eigen::RowMajor, kCol = Eigen::ColMajor;
  if (!g.transpose_a && !g.transpose_b) {
    BlockedProduct<T, kRow, kRow>(g);
  } else if (!g.transpose_a) {
    BlockedProduct<T, kRow, kCol>(g);
  } else if (!g.transpose_b) {
    BlockedProduct<T, kCol, kRow>(g);
  } else {
    BlockedProduct<T, kCol, kCol>(g);
  }
  ApplyEpilogue(g);
}

template <typename T>
void Gemm(OpKernelContext* ctx, const GemmArgs<T>& g) {
  if (g.m <= 0 || g.n <= 0) return;
  ThreadPool* pool = ctx->intra_op_pool();
  const int threads = pool == nullptr ? 1 : pool->NumThreads();
  // Split the bigger of op(a) and op(b) (the threads share the other, packed once): by row
  // panels of c, or by column panels, which are whole cache lines, so two threads never write
  // one line.
  const bool by_rows = g.m >= g.n;
  constexpr int64_t kRowUnit = 8, kColUnit = 32;
  const int64_t units = by_rows ? (g.m + kRowUnit - 1) / kRowUnit : (g.n + kColUnit - 1) / kColUnit;
  // A matrix-vector product streams its matrix once, at memory speed: about 8x the time per
  // flop of a blocked product, so worth splitting from 8x fewer flops.
  const bool matrix_vector = g.m == 1 || g.n == 1;
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                       (matrix_vector ? 8 : 1);
  const int shards = static_cast<int>(std::min<double>(
      {static_cast<double>(threads), static_cast<double>(units), flops / kMinFlopsPerShard}));
  if (shards <= 1) {
    GemmOnThisThread(g);
    return;
  }
  // Chunks claimed one at a time, several per thread: a thread the machine delays (other
  // processes share the cores) leaves its remaining chunks to the others instead of holding
  // up the product, as a fixed split would.
  const int64_t chunks = std::min<int64_t>(units, 4 * shards);
  std::atomic<int64_t> next_chunk{0};
#if FLOWTRAIN_HAS_AVX512_CODE
  // float32 on the AVX-512 kernel: the operand every chunk shares is packed once, by the
  // threads together, into the calling thread's buffer (it outlives the shards); a small one
  // (under kMinSharedPackBytes) each thread packs for itself.
  bool avx512_kernel = false, share_packing = false;
  std::optional<avx512::WholeOperand> shared;
  if constexpr (std::is_same_v<T, float>) {
    avx512_kernel = !matrix_vector && g.k > 0 && CpuHasAvx512();
    const int64_t elements = avx512_kernel ? avx512::WholeOperand::Elements(g, !by_rows) : 0;
    share_packing = avx512_kernel && elements * static_cast<int64_t>(sizeof(float)) >= kMinSharedPackBytes;
    if (share_packing) shared.emplace(g, !by_rows, PackBuffersOfThisThread<float>().whole.Get(elements));
  }
#endif
  ParallelShards(ctx, shards, [&](int) {
    const T* packed = nullptr;  // the shared operand, packed (together or by this thread)
    for (int64_t chunk = next_chunk.fetch_add(1, std::memory_order_relaxed); chunk < chunks;
         chunk = next_chunk.fetch_add(1, std::memory_order_relaxed)) {
      const auto [begin, end] = ShardRange(units, static_cast<int>(chunks), static_cast<int>(chunk));
      GemmArgs<T> part = g;
      if (by_rows) {
        const int64_t first = begin * kRowUnit;
        part.m = std::min(g.m, end * kRowUnit) - first;
        part.a = g.transpose_a ? g.a + first : g.a + first * g.lda;
        part.c = g.c + first * g.ldc;
        if (g.relu_features != nullptr) part.relu_features = g.relu_features + first * g.ldf;
      } else {
        const int64_t first = begin * kColUnit;
        part.n = std::min(g.n, end * kColUnit) - first;
        part.b = g.transpose_b ? g.b + first * g.ldb : g.b + first;
        part.c = g.c + first;
        if (g.bias != nullptr) part.bias = g.bias + first;
        if (g.relu_features != nullptr) part.relu_features = g.relu_features + first;
      }
#if FLOWTRAIN_HAS_AVX512_CODE
      if constexpr (std::is_same_v<T, float>) {
        if (avx512_kernel) {
          if (packed == nullptr && share_packing) packed = shared->Packed();
          if (packed == nullptr) {
            avx512::WholeOperand own(
                g, !by_rows,
                PackBuffersOfThisThread<float>().whole.Get(avx512::WholeOperand::Elements(g, !by_rows)));
            packed = own.Packed();
          }
          avx512::Sgemm(part, by_rows ? nullptr : packed, by_rows ? packed : nullptr);
          continue;
        }
      }
#endif
      GemmOnThisThread(part);
    }
  });
}

MatMulShape CheckMatMulShape(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  if (a.dims() != 2 || b.dims() != 2) {
    InvalidArgument("In[0] and In[1] must be matrices: In[0]: ", a.shape().DebugString(),
                    ", In[1]: ", b.shape().DebugString());
  }
  const MatMulShape s{.m = a.dim_size(transpose_a ? 1 : 0),
                      .n = b.dim_size(transpose_b ? 0 : 1),
                      .k = a.dim_size(transpose_a ? 0 : 1),
                      .transpose_a = transpose_a,
                      .transpose_b = transpose_b};
  if (s.k != b.dim_size(transpose_b ? 1 : 0) || a.dtype() != b.dtype()) {
    InvalidArgument("Matrix size-incompatible: In[0]: ", a.shape().DebugString(),
                    ", In[1]: ", b.shape().DebugString());
  }
  return s;
}

template void GemmOnThisThread<float>(const GemmArgs<float>&);
template void GemmOnThisThread<double>(const GemmArgs<double>&);
template void Gemm<float>(OpKernelContext*, const GemmArgs<float>&);
template void Gemm<double>(OpKernelContext*, const GemmArgs<double>&);

}  // namespace flowtrain
