// GemmOnThisThread against a float64 reference: every transpose combination, sizes around
// the tile and packing-block edges (8 x 32 tiles, depth blocks of 512, groups of 64 rows,
// slices of columns), leading dimensions wider than the matrices, accumulation, the
// matrix-vector shapes, and the epilogue (alpha, bias, relu) of the fused kernels.
#include "flowtrain/kernels/internal/gemm.h"

#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

namespace flowtrain {
namespace {

// What a fused kernel adds to the product: c = relu(c + alpha * op(a) * op(b) + bias), then
// zeroed where ReluGrad's features are not positive.
struct Epilogue {
  double alpha = 1;
  bool bias = false;
  bool relu = false;
  bool relu_grad = false;
};

template <typename T>
void CheckProduct(int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b, bool accumulate,
                  uint64_t seed, Epilogue epilogue = {}) {
  SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
               (transpose_a ? " A^T" : "") + (transpose_b ? " B^T" : "") + (accumulate ? " +=" : "") +
               " alpha " + std::to_string(epilogue.alpha) + (epilogue.bias ? " +bias" : "") +
               (epilogue.relu ? " relu" : "") + (epilogue.relu_grad ? " relu_grad" : ""));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  // Stored shapes, with 3 columns of slack in every leading dimension.
  const int64_t a_rows = transpose_a ? k : m, a_cols = transpose_a ? m : k;
  const int64_t b_rows = transpose_b ? n : k, b_cols = transpose_b ? k : n;
  const int64_t lda = a_cols + 3, ldb = b_cols + 3, ldc = n + 3;
  std::vector<T> a(a_rows * lda), b(b_rows * ldb), c(m * ldc), bias(n), features(m * ldc);
  for (T& v : a) v = static_cast<T>(dist(rng));
  for (T& v : b) v = static_cast<T>(dist(rng));
  for (T& v : c) v = static_cast<T>(dist(rng));
  for (T& v : bias) v = static_cast<T>(dist(rng));
  for (T& v : features) v = static_cast<T>(dist(rng));
  const std::vector<T> c_before = c;
  GemmOnThisThread<T>({.m = m,
                       .n = n,
                       .k = k,
                       .a = a.data(),
                       .lda = lda,
                       .transpose_a = transpose_a,
                       .b = b.data(),
                       .ldb = ldb,
                       .transpose_b = transpose_b,
                       .c = c.data(),
                       .ldc = ldc,
                       .accumulate = accumulate,
                       .alpha = static_cast<T>(epilogue.alpha),
                       .bias = epilogue.bias ? bias.data() : nullptr,
                       .relu = epilogue.relu,
                       .relu_features = epilogue.relu_grad ? features.data() : nullptr,
                       .ldf = ldc});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double product = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = transpose_a ? a[p * lda + i] : a[i * lda + p];
        const double y = transpose_b ? b[j * ldb + p] : b[p * ldb + j];
        product += x * y;
        magnitude += std::abs(x * y);
      }
      double expected = (accumulate ? static_cast<double>(c_before[i * ldc + j]) : 0.0) +
                        epilogue.alpha * product + (epilogue.bias ? static_cast<double>(bias[j]) : 0.0);
      if (epilogue.relu) expected = std::max(expected, 0.0);
      if (epilogue.relu_grad && features[i * ldc + j] <= 0) expected = 0;
      magnitude = std::abs(epilogue.alpha) * magnitude + 2;
      const double tolerance = (std::is_same_v<T, float> ? 1e-5 : 1e-13) * (magnitude + 1);
      if (epilogue.relu) {
        ASSERT_GE(c[i * ldc + j], T(0)) << "at (" << i << ", " << j << ")";
      }
      ASSERT_NEAR(c[i * ldc + j], expected, tolerance) << "at (" << i << ", " << j << ")";
    }
    for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], c_before[i * ldc + j]) << "slack written";
  }
}

TEST(GemmTest, MatchesReferenceAcrossShapesAndLayouts) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1},    {8, 32, 16},    {7, 33, 9},   {17, 65, 3},  {64, 256, 40},
                          {9, 31, 513}, {40, 70, 1030}, {3, 100, 20}, {100, 3, 20}, {2, 2, 0}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (bool acc : {false, true}) {
          CheckProduct<float>(s.m, s.n, s.k, ta, tb, acc, seed++);
          CheckProduct<double>(s.m, s.n, s.k, ta, tb, acc, seed++);
        }
      }
    }
  }
}

// Products spanning several row groups of op(a) (64 rows, the last one partial) and several
// column slices of a packed block of op(b) (kept to 512 KB: 256 columns at depth 512, 512 at
// depth 256), with a last column panel of 16 or of 32 columns.
TEST(GemmTest, MatchesReferenceAcrossRowGroupsAndColumnSlices) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{130, 300, 600}, {72, 530, 256}, {65, 1040, 520}};
  uint64_t seed = 200;
  for (const Shape& s : shapes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        CheckProduct<float>(s.m, s.n, s.k, ta, tb, /*accumulate=*/s.m == 72, seed++);
      }
    }
  }
}

// alpha scales every depth block's part (k = 1030: three blocks, accumulating into c as
// the fused SGD update does); bias, relu and ReluGrad's mask are applied once, after the
// last block.
TEST(GemmTest, EpilogueScalesAddsBiasAndClamps) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{7, 33, 9}, {40, 70, 1030}, {130, 300, 600}, {300, 1, 50}, {1, 300, 50}, {5, 6, 0}};
  const Epilogue epilogues[] = {{.alpha = -0.1},
                                {.alpha = 1, .bias = true},
                                {.alpha = 1, .bias = true, .relu = true},
                                {.alpha = 2.5, .relu = true},
                                {.alpha = 1, .relu_grad = true},
                                {.alpha = -0.5, .bias = true, .relu_grad = true}};
  uint64_t seed = 300;
  for (const Shape& s : shapes) {
    for (const Epilogue& e : epilogues) {
      for (bool acc : {false, true}) {
        CheckProduct<float>(s.m, s.n, s.k, true, false, acc, seed++, e);
        CheckProduct<float>(s.m, s.n, s.k, false, s.k % 2 == 0, acc, seed++, e);
        CheckProduct<double>(s.m, s.n, s.k, false, false, acc, seed++, e);
      }
    }
  }
}

TEST(GemmTest, MatrixVectorShapes) {
  uint64_t seed = 100;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CheckProduct<float>(300, 1, 50, ta, tb, false, seed++);
      CheckProduct<float>(1, 300, 50, ta, tb, true, seed++);
      CheckProduct<double>(1, 1, 70, ta, tb, false, seed++);
    }
  }
}

}  // namespace
}  // namespace flowtrain
