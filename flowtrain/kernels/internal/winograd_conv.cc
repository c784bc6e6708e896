#include "flowtrain/kernels/internal/winograd_conv.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "flowtrain/core/internal/cpu_features.h"
#include "flowtrain/core/error.h"
#include "flowtrain/framework/work_sharder.h"

#if FLOWTRAIN_HAS_AVX512_CODE
#include <immintrin.h>
#endif

namespace flowtrain {
namespace {

// TF_ENABLE_WINOGRAD_NONFUSED=0 (or false) turns the Winograd convolutions off, as in TF.
bool Enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("TF_ENABLE_WINOGRAD_NONFUSED");
    if (value == nullptr) return true;
    const std::string_view v(value);
    return !(v == "0" || v == "false" || v == "False" || v == "FALSE");
  }();
  return enabled;
}

#if FLOWTRAIN_HAS_AVX512_CODE

// Everything up to the public functions is compiled for AVX-512 (the transforms' vectors are
// one register each); the public functions run it only when CpuHasAvx512().
FLOWTRAIN_BEGIN_AVX512_CODE
namespace avx512 {

// Every supported filter size uses 6x6 input patches: F(2x2, 5x5) (2x2 outputs per tile)
// and F(4x4, 3x3) (4x4 outputs), 36 transformed positions each.
constexpr int kInTile = 6;
constexpr int kPositions = kInTile * kInTile;
// Channels one transform call handles, as one AVX-512 vector (or two AVX2 ones).
constexpr int kLanes = 16;

// kLanes floats as one value (GCC/Clang vector extension: one AVX-512 register, or two AVX
// ones). The transforms below are written on it: loops over lanes with run-time strides are
// left scalar by the compilers.
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float)), aligned(alignof(float)), may_alias));

inline Lanes Load(const float* p) { return *reinterpret_cast<const Lanes*>(p); }
inline void Store(float* p, Lanes v) { *reinterpret_cast<Lanes*>(p) = v; }

// out[i * os] = sum_s B^T[i][s] * in[s * is], kLanes lanes each.
inline void ApplyBt(const float* in, int64_t is, float* out, int64_t os) {
  const Lanes d0 = Load(in), d1 = Load(in + is), d2 = Load(in + 2 * is), d3 = Load(in + 3 * is),
              d4 = Load(in + 4 * is), d5 = Load(in + 5 * is);
  Store(out, 4.0f * d0 - 5.0f * d2 + d4);
  Store(out + os, (d3 + d4) - 4.0f * (d1 + d2));
  Store(out + 2 * os, (d4 - d3) + 4.0f * (d1 - d2));
  Store(out + 3 * os, (d4 - d2) + 2.0f * (d3 - d1));
  Store(out + 4 * os, (d4 - d2) + 2.0f * (d1 - d3));
  Store(out + 5 * os, 4.0f * d1 - 5.0f * d3 + d5);
}

// The transforms of F(m x m, r x r), m + r - 1 = 6: Cook-Toom at the points 0, 1, -1, 2, -2
// and infinity (derived with sympy by solving sum_j A^T[i][j] G[j][k] B^T[j][s] = [s == i + k]
// for B given A and G; winograd_conv_test.cc checks the convolutions they give):
//   A^T[i][j] = p_j^i (the last column: 1 in the last row, 0 above),
//   G[j][k] = p_j^k / prod_{l != j} (p_j - p_l) (the last row: 1 in the last column, 0 before),
//   B^T = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
//          [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]] for both sizes.
// B^T and A^T are applied as explicit sums (ApplyBt above, ApplyAt), G (fractions) as a table.
struct F2x2With5x5 {
  static constexpr int kFilter = 5, kOut = 2;
  static constexpr double kG[kInTile][kFilter] = {
      {1.0 / 4, 0, 0, 0, 0},
      {-1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6},
      {-1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6},
      {1.0 / 24, 1.0 / 12, 1.0 / 6, 1.0 / 3, 2.0 / 3},
      {1.0 / 24, -1.0 / 12, 1.0 / 6, -1.0 / 3, 2.0 / 3},
      {0, 0, 0, 0, 1},
  };

  // out[i * os] = sum_s A^T[i][s] * in[s * is] (6 inputs, 2 outputs).
  static void ApplyAt(const float* in, int64_t is, float* out, int64_t os) {
    const Lanes m0 = Load(in), m1 = Load(in + is), m2 = Load(in + 2 * is), m3 = Load(in + 3 * is),
                m4 = Load(in + 4 * is), m5 = Load(in + 5 * is);
    Store(out, m0 + (m1 + m2) + (m3 + m4));
    Store(out + os, (m1 - m2) + 2.0f * (m3 - m4) + m5);
  }

  // out[a * os] = sum_i A[a][i] * in[i * is], the transpose of ApplyAt (2 inputs, 6
  // outputs), for the output gradient in the filter gradient.
  static void ApplyA(const float* in, int64_t is, float* out, int64_t os) {
    const Lanes y0 = Load(in), y1 = Load(in + is);
    Store(out, y0);
    Store(out + os, y0 + y1);
    Store(out + 2 * os, y0 - y1);
    Store(out + 3 * os, y0 + 2.0f * y1);
    Store(out + 4 * os, y0 - 2.0f * y1);
    Store(out + 5 * os, y1);
  }
};

struct F4x4With3x3 {
  static constexpr int kFilter = 3, kOut = 4;
  static constexpr double kG[kInTile][kFilter] = {
      {1.0 / 4, 0, 0},
      {-1.0 / 6, -1.0 / 6, -1.0 / 6},
      {-1.0 / 6, 1.0 / 6, -1.0 / 6},
      {1.0 / 24, 1.0 / 12, 1.0 / 6},
      {1.0 / 24, -1.0 / 12, 1.0 / 6},
      {0, 0, 1},
  };

  // A^T = [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]].
  static void ApplyAt(const float* in, int64_t is, float* out, int64_t os) {
    const Lanes m0 = Load(in), m1 = Load(in + is), m2 = Load(in + 2 * is), m3 = Load(in + 3 * is),
                m4 = Load(in + 4 * is), m5 = Load(in + 5 * is);
    const Lanes sum12 = m1 + m2, diff12 = m1 - m2, sum34 = m3 + m4, diff34 = m3 - m4;
    Store(out, m0 + sum12 + sum34);
    Store(out + os, diff12 + 2.0f * diff34);
    Store(out + 2 * os, sum12 + 4.0f * sum34);
    Store(out + 3 * os, diff12 + 8.0f * diff34 + m5);
  }

  static void ApplyA(const float* in, int64_t is, float* out, int64_t os) {
    const Lanes y0 = Load(in), y1 = Load(in + is), y2 = Load(in + 2 * is), y3 = Load(in + 3 * is);
    const Lanes even = y0 + y2, odd = y1 + y3;
    Store(out, y0);
    Store(out + os, even + odd);
    Store(out + 2 * os, even - odd);
    Store(out + 3 * os, y0 + 2.0f * y1 + 4.0f * y2 + 8.0f * y3);
    Store(out + 4 * os, y0 - 2.0f * y1 + 4.0f * y2 - 8.0f * y3);
    Store(out + 5 * os, y3);
  }
};

// acc + x * b, fused (ISO C++ mode does not contract a * b + c).
inline Lanes MultiplyAdd(float x, Lanes b, Lanes acc) {
  return reinterpret_cast<Lanes>(
      _mm512_fmadd_ps(_mm512_set1_ps(x), reinterpret_cast<__m512>(b), reinterpret_cast<__m512>(acc)));
}

// The products of the 36 positions: c[r, 0:kVecs*kLanes] (+)= sum_k a(r, k) * b[k, same],
// for r < kRows, with a(r, k) = a[r * a_row + k * a_step] (so a's [rows, depth] matrix may be
// stored either way round) and b, c row-major. kRows x kVecs accumulators stay in registers;
// each step loads one row of b and broadcasts one element of a per row. The operands need no
// packing: a block's V and M rows, and U's rows, are already whole vectors wide.
template <int kRows, int kVecs>
void ProductTile(int64_t depth, const float* a, int64_t a_row, int64_t a_step, const float* b, int64_t ldb,
                 float* c, int64_t ldc, bool accumulate) {
  Lanes acc[kRows][kVecs];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < kVecs; ++j) acc[r][j] = accumulate ? Load(c + r * ldc + j * kLanes) : Lanes{};
  }
  for (int64_t k = 0; k < depth; ++k) {
    Lanes row[kVecs];
#pragma GCC unroll 4
    for (int j = 0; j < kVecs; ++j) row[j] = Load(b + k * ldb + j * kLanes);
    const float* column = a + k * a_step;
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const float x = column[r * a_row];
#pragma GCC unroll 4
      for (int j = 0; j < kVecs; ++j) acc[r][j] = MultiplyAdd(x, row[j], acc[r][j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < kVecs; ++j) Store(c + r * ldc + j * kLanes, acc[r][j]);
  }
}

// Rows per tile for kVecs vectors of columns: about 24 accumulators of the 32 registers.
constexpr int kMaxVecs = 4;
constexpr int TileRows(int vecs) { return vecs >= 4 ? 6 : vecs == 3 ? 8 : 12; }

using ProductTileFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*,
                               int64_t, bool);

template <int kVecs, int... kRows>
constexpr std::array<ProductTileFn, sizeof...(kRows)> ProductTiles(std::integer_sequence<int, kRows...>) {
  return {&ProductTile<kRows + 1, kVecs>...};
}

// c [rows, cols] (+)= a(rows, depth) * b [depth, cols], as ProductTile; cols a multiple of
// kLanes.
void Product(int64_t rows, int64_t cols, int64_t depth, const float* a, int64_t a_row, int64_t a_step,
             const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  static constexpr auto kTiles1 = ProductTiles<1>(std::make_integer_sequence<int, TileRows(1)>());
  static constexpr auto kTiles2 = ProductTiles<2>(std::make_integer_sequence<int, TileRows(2)>());
  static constexpr auto kTiles3 = ProductTiles<3>(std::make_integer_sequence<int, TileRows(3)>());
  static constexpr auto kTiles4 = ProductTiles<4>(std::make_integer_sequence<int, TileRows(4)>());
  static constexpr const ProductTileFn* kTiles[kMaxVecs] = {kTiles1.data(), kTiles2.data(), kTiles3.data(),
                                                            kTiles4.data()};
  for (int64_t j0 = 0; j0 < cols; j0 += kMaxVecs * kLanes) {
    const int vecs = static_cast<int>(std::min<int64_t>(kMaxVecs, (cols - j0) / kLanes));
    const int tile_rows = TileRows(vecs);
    for (int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
      const int64_t n = std::min<int64_t>(tile_rows, rows - r0);
      kTiles[vecs - 1][n - 1](depth, a + r0 * a_row, a_row, a_step, b + j0, ldb, c + r0 * ldc + j0, ldc,
                              accumulate);
    }
  }
}

int64_t RoundUp(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// The output's side x side tiles, numbered image by image, row-major within an image.
struct TileGrid {
  TileGrid(const WinogradConvDims& d, int64_t side)
      : side(side),
        rows((d.out_rows + side - 1) / side),
        cols((d.out_cols + side - 1) / side),
        total(d.batch * rows * cols) {}
  int64_t image(int64_t t) const { return t / (rows * cols); }
  int64_t out_row(int64_t t) const { return t / cols % rows * side; }
  int64_t out_col(int64_t t) const { return t % cols * side; }

  int64_t side, rows, cols, total;
};

// Bytes of transformed tiles (input and output side) a block keeps: they stay in L2 across
// the 36 products and the transforms around them.
constexpr int64_t kBlockBytes = 1 << 19;

// How a call lays out its transformed data: a block of `tiles` tiles is, per position, a
// [tiles, in] matrix V (row stride ld_in) and a [tiles, out] matrix M (row stride ld_out);
// the strides round channels up to whole transform vectors.
struct BlockLayout {
  BlockLayout(const WinogradConvDims& d, const TileGrid& grid)
      : ld_in(RoundUp(d.in_depth, kLanes)), ld_out(RoundUp(d.out_depth, kLanes)) {
    const int64_t per_tile = kPositions * (ld_in + ld_out) * int64_t{sizeof(float)};
    tiles =
        std::clamp<int64_t>(kBlockBytes / per_tile / 8 * 8, 8, std::max<int64_t>(RoundUp(grid.total, 8), 8));
    blocks = (grid.total + tiles - 1) / tiles;
  }
  // Elements between consecutive positions' matrices of a block of `block_tiles` tiles: one
  // vector more than they take, so that the 36 rows a tile's transform reads or writes do not
  // all fall into the same cache sets (a power-of-two stride, 4 KiB for 32 tiles of 32
  // channels, made them evict each other).
  int64_t v_stride(int64_t block_tiles) const { return block_tiles * ld_in + kLanes; }
  int64_t m_stride(int64_t block_tiles) const { return block_tiles * ld_out + kLanes; }
  int64_t v_size() const { return kPositions * v_stride(tiles); }
  int64_t m_size() const { return kPositions * m_stride(tiles); }

  int64_t ld_in, ld_out, tiles, blocks;
};

// What a thread keeps scratch memory for, from call to call (fresh pages are slow to touch on
// these machines): its blocks' transformed tiles, and as the thread calling a kernel, the
// transformed filter, the turned filter of the input gradient, the filter gradient's partials.
enum class Scratch { kTiles, kFilter, kTurnedFilter, kPartials, kCount };

// At least `elements` floats of this thread's scratch for `use`, 64-byte aligned.
float* ThreadScratch(Scratch use, int64_t elements) {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  struct Buffer {
    std::unique_ptr<float, Free> data;
    int64_t capacity = 0;
  };
  thread_local Buffer buffers[static_cast<int>(Scratch::kCount)];
  Buffer& buffer = buffers[static_cast<int>(use)];
  if (elements > buffer.capacity) {
    buffer.data.reset(
        static_cast<float*>(std::aligned_alloc(64, RoundUp(elements * int64_t{sizeof(float)}, 64))));
    buffer.capacity = buffer.data == nullptr ? 0 : elements;
    if (buffer.data == nullptr) throw std::bad_alloc();
  }
  return buffer.data.get();
}

// Threads worth using for a call of `macs` multiply-adds (after the transforms).
int ShardsFor(ThreadPool* pool, int64_t macs, int64_t blocks) {
  const int64_t threads = pool == nullptr ? 1 : std::max(pool->NumThreads(), 1);
  return static_cast<int>(
      std::clamp<int64_t>(std::min(threads, macs / (1 << 20)), 1, std::max<int64_t>(blocks, 1)));
}

// v[p * stride + c] (p = 6 * row + col, c < ld_in) = B^T x B for the 6x6 input patch x under
// tile t, channel by channel; x is zero outside the input.
void TransformInputTile(const WinogradConvDims& d, const TileGrid& grid, const float* input, int64_t t,
                        float* v, int64_t stride) {
  alignas(64) float patch[kPositions][kLanes];
  alignas(64) float rows[kPositions][kLanes];
  const int64_t n = grid.image(t);
  const int64_t ih0 = grid.out_row(t) - d.pad_rows, iw0 = grid.out_col(t) - d.pad_cols;
  const bool inside = ih0 >= 0 && ih0 + kInTile <= d.in_rows && iw0 >= 0 && iw0 + kInTile <= d.in_cols;
  const int64_t row_stride = d.in_cols * d.in_depth;
  // The patch's top-left pixel, maybe outside the input (an offset: no pointer may point there).
  const int64_t corner = ((n * d.in_rows + ih0) * d.in_cols + iw0) * d.in_depth;
  for (int64_t c0 = 0; c0 < d.in_depth; c0 += kLanes) {
    const int64_t width = std::min<int64_t>(kLanes, d.in_depth - c0);
    if (inside && width == kLanes) {  // B^T along the rows straight from the input
      for (int col = 0; col < kInTile; ++col) {
        ApplyBt(input + corner + col * d.in_depth + c0, row_stride, rows[col], kInTile * kLanes);
      }
    } else {
      for (int r = 0; r < kInTile; ++r) {
        const int64_t ih = ih0 + r;
        for (int col = 0; col < kInTile; ++col) {
          const int64_t iw = iw0 + col;
          float* dst = patch[r * kInTile + col];
          if (ih < 0 || ih >= d.in_rows || iw < 0 || iw >= d.in_cols) {
            Store(dst, Lanes{});
          } else if (width == kLanes) {
            Store(dst, Load(input + corner + r * row_stride + col * d.in_depth + c0));
          } else {
            Store(dst, Lanes{});
            std::copy_n(input + corner + r * row_stride + col * d.in_depth + c0, width, dst);
          }
        }
      }
      for (int col = 0; col < kInTile; ++col)
        ApplyBt(patch[col], kInTile * kLanes, rows[col], kInTile * kLanes);
    }
    for (int i = 0; i < kInTile; ++i)
      ApplyBt(rows[i * kInTile], kLanes, v + i * kInTile * stride + c0, stride);
  }
}

// The outputs of tile t = A^T m A, m[p * stride + c] its 36 transformed products; writes
// the outputs inside the image.
template <typename F>
void TransformOutputTile(const WinogradConvDims& d, const TileGrid& grid, const float* m, int64_t stride,
                         int64_t t, float* output) {
  alignas(64) float rows[F::kOut * kInTile][kLanes];
  alignas(64) float y[F::kOut * F::kOut][kLanes];
  const int64_t n = grid.image(t), oh0 = grid.out_row(t), ow0 = grid.out_col(t);
  for (int64_t c0 = 0; c0 < d.out_depth; c0 += kLanes) {
    const int64_t width = std::min<int64_t>(kLanes, d.out_depth - c0);
    for (int col = 0; col < kInTile; ++col)
      F::ApplyAt(m + col * stride + c0, kInTile * stride, rows[col], kInTile * kLanes);
    for (int i = 0; i < F::kOut; ++i) F::ApplyAt(rows[i * kInTile], kLanes, y[i * F::kOut], kLanes);
    for (int i = 0; i < F::kOut; ++i) {
      if (oh0 + i >= d.out_rows) break;
      for (int j = 0; j < F::kOut; ++j) {
        if (ow0 + j >= d.out_cols) break;
        float* dst = output + ((n * d.out_rows + oh0 + i) * d.out_cols + ow0 + j) * d.out_depth + c0;
        if (width == kLanes) {
          Store(dst, Load(y[i * F::kOut + j]));
        } else {
          std::copy_n(y[i * F::kOut + j], width, dst);
        }
      }
    }
  }
}

// z[p * stride + c] (c < ld_out) = A g A^T for the output gradient g of tile t (zero for
// outputs past the image's edge).
template <typename F>
void TransformGradTile(const WinogradConvDims& d, const TileGrid& grid, const float* grad, int64_t t,
                       float* z, int64_t stride) {
  alignas(64) float g[F::kOut * F::kOut][kLanes];
  alignas(64) float rows[kInTile * F::kOut][kLanes];
  const int64_t n = grid.image(t), oh0 = grid.out_row(t), ow0 = grid.out_col(t);
  for (int64_t c0 = 0; c0 < d.out_depth; c0 += kLanes) {
    const int64_t width = std::min<int64_t>(kLanes, d.out_depth - c0);
    for (int i = 0; i < F::kOut; ++i) {
      for (int j = 0; j < F::kOut; ++j) {
        float* dst = g[i * F::kOut + j];
        Store(dst, Lanes{});
        if (oh0 + i < d.out_rows && ow0 + j < d.out_cols) {
          const float* src = grad + ((n * d.out_rows + oh0 + i) * d.out_cols + ow0 + j) * d.out_depth + c0;
          if (width == kLanes) {
            Store(dst, Load(src));
          } else {
            std::copy_n(src, width, dst);
          }
        }
      }
    }
    for (int j = 0; j < F::kOut; ++j) F::ApplyA(g[j], F::kOut * kLanes, rows[j], F::kOut * kLanes);
    for (int a = 0; a < kInTile; ++a)
      F::ApplyA(rows[a * F::kOut], kLanes, z + a * kInTile * stride + c0, stride);
  }
}

// u[p][ci][co] = (G w G^T)[p] for the input channels ci in [ci_begin, ci_end) of the HWIO
// filter w, in float64; u's rows are ld_out >= out_depth wide, zero past out_depth.
template <typename F>
void TransformFilter(const float* filter, int64_t in_depth, int64_t out_depth, int64_t ld_out,
                     int64_t ci_begin, int64_t ci_end, float* u) {
  constexpr int kR = F::kFilter;
  std::vector<double> half(kInTile * kR * out_depth);  // (G w)[a][fc], a row of channels
  for (int64_t ci = ci_begin; ci < ci_end; ++ci) {
    std::fill(half.begin(), half.end(), 0.0);
    for (int a = 0; a < kInTile; ++a) {
      for (int fr = 0; fr < kR; ++fr) {
        if (F::kG[a][fr] == 0) continue;
        for (int fc = 0; fc < kR; ++fc) {
          const float* w = filter + ((fr * kR + fc) * in_depth + ci) * out_depth;
          double* h = half.data() + (a * kR + fc) * out_depth;
          for (int64_t co = 0; co < out_depth; ++co) h[co] += F::kG[a][fr] * w[co];
        }
      }
    }
    for (int a = 0; a < kInTile; ++a) {
      for (int b = 0; b < kInTile; ++b) {
        float* dst = u + ((a * kInTile + b) * in_depth + ci) * ld_out;
        for (int64_t co = 0; co < out_depth; ++co) {
          double sum = 0;
          for (int fc = 0; fc < kR; ++fc) sum += half[(a * kR + fc) * out_depth + co] * F::kG[b][fc];
          dst[co] = static_cast<float>(sum);
        }
        std::fill(dst + out_depth, dst + ld_out, 0.0f);
      }
    }
  }
}

template <typename F>
void Conv2D(ThreadPool* pool, const WinogradConvDims& d, const float* input, const float* filter,
            float* output) {
  const TileGrid grid(d, F::kOut);
  if (grid.total == 0 || d.out_depth == 0) return;
  const BlockLayout layout(d, grid);
  const int shards = ShardsFor(pool, grid.total * kPositions * d.in_depth * d.out_depth, layout.blocks);
  float* u = ThreadScratch(Scratch::kFilter, kPositions * d.in_depth * layout.ld_out);
  ClaimRuns(pool, shards, d.in_depth, shards, [&](int, int64_t first, int64_t last, int64_t) {
    TransformFilter<F>(filter, d.in_depth, d.out_depth, layout.ld_out, first, last, u);
  });
  ClaimRuns(pool, shards, layout.blocks, RunsFor(shards, layout.blocks),
            [&](int, int64_t first, int64_t last, int64_t) {
              float* v = ThreadScratch(Scratch::kTiles, layout.v_size() + layout.m_size());
              float* m = v + layout.v_size();
              for (int64_t b = first; b < last; ++b) {
                const int64_t t0 = b * layout.tiles;
                const int64_t tiles = std::min(layout.tiles, grid.total - t0);
                const int64_t v_stride = layout.v_stride(tiles), m_stride = layout.m_stride(tiles);
                for (int64_t t = 0; t < tiles; ++t)
                  TransformInputTile(d, grid, input, t0 + t, v + t * layout.ld_in, v_stride);
                for (int p = 0; p < kPositions; ++p) {
                  Product(tiles, layout.ld_out, d.in_depth, v + p * v_stride, layout.ld_in, 1,
                          u + p * d.in_depth * layout.ld_out, layout.ld_out, m + p * m_stride, layout.ld_out,
                          false);
                }
                for (int64_t t = 0; t < tiles; ++t)
                  TransformOutputTile<F>(d, grid, m + t * layout.ld_out, m_stride, t0 + t, output);
              }
            });
}

template <typename F>
void Conv2DBackpropInput(ThreadPool* pool, const WinogradConvDims& d, const float* filter,
                         const float* out_backprop, float* in_backprop) {
  // For stride 1 and r x r filters, in_backprop[ih] = sum_f out_backprop[ih + pad - f] w[f]
  //   = sum_f' out_backprop[ih - (r - 1 - pad) + f'] w[r - 1 - f']:
  // the forward convolution of out_backprop with the filter turned 180 degrees, its in and
  // out channels swapped, padded by r - 1 - pad.
  constexpr int64_t kR = F::kFilter;
  float* turned = ThreadScratch(Scratch::kTurnedFilter, kR * kR * d.in_depth * d.out_depth);
  for (int64_t fr = 0; fr < kR; ++fr) {
    for (int64_t fc = 0; fc < kR; ++fc) {
      const float* src = filter + ((kR - 1 - fr) * kR + (kR - 1 - fc)) * d.in_depth * d.out_depth;
      float* dst = turned + (fr * kR + fc) * d.in_depth * d.out_depth;
      for (int64_t ci = 0; ci < d.in_depth; ++ci) {
        for (int64_t co = 0; co < d.out_depth; ++co) dst[co * d.in_depth + ci] = src[ci * d.out_depth + co];
      }
    }
  }
  const WinogradConvDims swapped{.batch = d.batch,
                                 .in_rows = d.out_rows,
                                 .in_cols = d.out_cols,
                                 .in_depth = d.out_depth,
                                 .out_rows = d.in_rows,
                                 .out_cols = d.in_cols,
                                 .out_depth = d.in_depth,
                                 .pad_rows = kR - 1 - d.pad_rows,
                                 .pad_cols = kR - 1 - d.pad_cols,
                                 .filter_size = kR};
  Conv2D<F>(pool, swapped, out_backprop, turned, in_backprop);
}

template <typename F>
void Conv2DBackpropFilter(ThreadPool* pool, const WinogradConvDims& d, const float* input,
                          const float* out_backprop, float* filter_backprop) {
  constexpr int kR = F::kFilter;
  const TileGrid grid(d, F::kOut);
  if (grid.total == 0 || d.in_depth == 0 || d.out_depth == 0) {
    std::fill_n(filter_backprop, kR * kR * d.in_depth * d.out_depth, 0.0f);
    return;
  }
  const BlockLayout layout(d, grid);
  const int64_t size = kPositions * d.in_depth * layout.ld_out;  // one transformed gradient
  const int shards = ShardsFor(pool, grid.total * kPositions * d.in_depth * d.out_depth, layout.blocks);
  // Each run sums its tiles' products into a partial of its own, added in run order at the
  // end, so the result does not depend on which thread ran which run. Four runs per thread
  // let a thread the machine delays leave work to the others, unless the partials would
  // take over 64 MB (hundreds of channels on both sides): then one run per thread.
  constexpr int64_t kMaxPartialElements = int64_t{1} << 24;
  const int64_t runs =
      shards <= 1 ? 1
                  : std::min<int64_t>(
                        layout.blocks,
                        std::max<int64_t>(shards, std::min<int64_t>(4 * shards, kMaxPartialElements / size)));
  float* partials = ThreadScratch(Scratch::kPartials, runs * size);
  ClaimRuns(pool, shards, layout.blocks, runs, [&](int, int64_t first, int64_t last, int64_t run) {
    float* v = ThreadScratch(Scratch::kTiles, layout.v_size() + layout.m_size());
    float* z = v + layout.v_size();
    float* acc = partials + run * size;
    for (int64_t b = first; b < last; ++b) {
      const int64_t t0 = b * layout.tiles;
      const int64_t tiles = std::min(layout.tiles, grid.total - t0);
      const int64_t v_stride = layout.v_stride(tiles), z_stride = layout.m_stride(tiles);
      for (int64_t t = 0; t < tiles; ++t) {
        TransformInputTile(d, grid, input, t0 + t, v + t * layout.ld_in, v_stride);
        TransformGradTile<F>(d, grid, out_backprop, t0 + t, z + t * layout.ld_out, z_stride);
      }
      for (int p = 0; p < kPositions; ++p) {
        Product(d.in_depth, layout.ld_out, tiles, v + p * v_stride, 1, layout.ld_in, z + p * z_stride,
                layout.ld_out, acc + p * d.in_depth * layout.ld_out, layout.ld_out, b != first);
      }
    }
  });
  // filter_backprop[fr][fc] = sum_{a,b} G[a][fr] P[a][b] G[b][fc], P the sum of the partials,
  // in float64, split over the input channels.
  ClaimRuns(pool, shards, d.in_depth, shards, [&](int, int64_t first, int64_t last, int64_t) {
    std::vector<double> total(kPositions * d.out_depth);   // P[a][b] of one input channel
    std::vector<double> half(kR * kInTile * d.out_depth);  // (G^T P)[fr][b]
    for (int64_t ci = first; ci < last; ++ci) {
      std::fill(total.begin(), total.end(), 0.0);
      for (int64_t run = 0; run < runs; ++run) {
        for (int p = 0; p < kPositions; ++p) {
          const float* partial = partials + run * size + (p * d.in_depth + ci) * layout.ld_out;
          double* sum = total.data() + p * d.out_depth;
          for (int64_t co = 0; co < d.out_depth; ++co) sum[co] += partial[co];
        }
      }
      std::fill(half.begin(), half.end(), 0.0);
      for (int fr = 0; fr < kR; ++fr) {
        for (int a = 0; a < kInTile; ++a) {
          if (F::kG[a][fr] == 0) continue;
          for (int b = 0; b < kInTile; ++b) {
            const double* src = total.data() + (a * kInTile + b) * d.out_depth;
            double* dst = half.data() + (fr * kInTile + b) * d.out_depth;
            for (int64_t co = 0; co < d.out_depth; ++co) dst[co] += F::kG[a][fr] * src[co];
          }
        }
      }
      for (int fr = 0; fr < kR; ++fr) {
        for (int fc = 0; fc < kR; ++fc) {
          float* dst = filter_backprop + ((fr * kR + fc) * d.in_depth + ci) * d.out_depth;
          for (int64_t co = 0; co < d.out_depth; ++co) {
            double sum = 0;
            for (int b = 0; b < kInTile; ++b)
              sum += half[(fr * kInTile + b) * d.out_depth + co] * F::kG[b][fc];
            dst[co] = static_cast<float>(sum);
          }
        }
      }
    }
  });
}

// One of the public functions for d's filter size, 3 or 5.
template <template <typename> class Fn, typename... Args>
void ForFilterSize(const WinogradConvDims& d, Args... args) {
  FT_REQUIRE(d.filter_size == 3 || d.filter_size == 5, "Winograd convolutions take 3x3 or 5x5 filters, not ",
             d.filter_size, "x", d.filter_size);
  if (d.filter_size == 5) {
    Fn<F2x2With5x5>::Run(d, args...);
  } else {
    Fn<F4x4With3x3>::Run(d, args...);
  }
}

template <typename F>
struct ForwardFn {
  static void Run(const WinogradConvDims& d, ThreadPool* pool, const float* input, const float* filter,
                  float* out) {
    Conv2D<F>(pool, d, input, filter, out);
  }
};
template <typename F>
struct BackpropInputFn {
  static void Run(const WinogradConvDims& d, ThreadPool* pool, const float* filter, const float* grad,
                  float* out) {
    Conv2DBackpropInput<F>(pool, d, filter, grad, out);
  }
};
template <typename F>
struct BackpropFilterFn {
  static void Run(const WinogradConvDims& d, ThreadPool* pool, const float* input, const float* grad,
                  float* out) {
    Conv2DBackpropFilter<F>(pool, d, input, grad, out);
  }
};

}  // namespace avx512
FLOWTRAIN_END_AVX512_CODE
#endif  // FLOWTRAIN_HAS_AVX512_CODE

// One of the AVX-512 functions for d's filter size: refused on other CPUs, where
// WinogradConvApplies is false.
template <template <typename> class Fn, typename... Args>
void RunForFilterSize(const WinogradConvDims& d, Args... args) {
  FT_REQUIRE(CpuHasAvx512(),
             "Winograd convolutions need AVX-512, which this CPU lacks (or FLOWTRAIN_MAX_CPU_ISA "
             "excludes): call them only where WinogradConvApplies");
#if FLOWTRAIN_HAS_AVX512_CODE
  avx512::ForFilterSize<Fn>(d, args...);
#endif
}

}  // namespace

bool WinogradConvApplies(int64_t filter_rows, int64_t filter_cols, int64_t in_depth, int64_t out_depth) {
  // Measured (bench/conv_bench, 64 images, 5x5 SAME): with 8 channels on a side Winograd and
  // im2col tie (thin products, the transforms' share grows); from 16 -> 16 channels on,
  // Winograd takes 1.5-2.3x less time (14x14 and 28x28 images, 7x7 images with 32-64).
  constexpr int64_t kMinDepth = 16;
  return filter_rows == filter_cols && (filter_rows == 3 || filter_rows == 5) && in_depth >= kMinDepth &&
         out_depth >= kMinDepth && CpuHasAvx512() && Enabled();
}

void WinogradConv2D(ThreadPool* pool, const WinogradConvDims& d, const float* input, const float* filter,
                    float* output) {
  RunForFilterSize<avx512::ForwardFn>(d, pool, input, filter, output);
}

void WinogradConv2DBackpropInput(ThreadPool* pool, const WinogradConvDims& d, const float* filter,
                                 const float* out_backprop, float* in_backprop) {
  RunForFilterSize<avx512::BackpropInputFn>(d, pool, filter, out_backprop, in_backprop);
}

void WinogradConv2DBackpropFilter(ThreadPool* pool, const WinogradConvDims& d, const float* input,
                                  const float* out_backprop, float* filter_backprop) {
  RunForFilterSize<avx512::BackpropFilterFn>(d, pool, input, out_backprop, filter_backprop);
}

}  // namespace flowtrain
