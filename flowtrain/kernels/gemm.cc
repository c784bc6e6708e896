#include "flowtrain/kernels/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>

#include <Eigen/Core>

#include "flowtrain/kernels/work_sharder.h"

namespace flowtrain {
namespace {

using Eigen::Index;

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

// Eigen's packed copies of the current blocks of both operands, one pair per thread: a
// thread runs one product at a time, and the buffers' pages stay mapped from step to step
// (first-touching fresh pages is slow on these machines).
template <typename T>
struct PackBuffers {
  PackBuffer<T> lhs, rhs;
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

// c += op(a) * op(b) by Eigen's blocked GEMM; op(x) is row-major x or, transposed, the
// column-major view of the same memory.
template <typename T, int kLhsOrder, int kRhsOrder>
void BlockedProduct(const GemmArgs<T>& g) {
  using Impl = Eigen::internal::general_matrix_matrix_product<Index, T, kLhsOrder, false, T, kRhsOrder,
                                                              false, Eigen::RowMajor, 1>;
  ReusedBlocking<T> blocking(g.m, g.n, g.k);
  Impl::run(g.m, g.n, g.k, g.a, g.lda, g.b, g.ldb, g.c, 1, g.ldc, T(1), blocking, nullptr);
}

template <typename T, int kOrder>
using MatrixView = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, kOrder>, 0, Eigen::OuterStride<>>;
template <typename T>
using ColumnView = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>, 0, Eigen::InnerStride<>>;
template <typename T>
using ConstColumnView = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>, 0, Eigen::InnerStride<>>;

template <typename Dst, typename Product>
void Assign(Dst&& dst, const Product& product, bool accumulate) {
  if (accumulate) {
    dst.noalias() += product;
  } else {
    dst.noalias() = product;
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
      Assign(y, MatrixView<T, Eigen::ColMajor>(g.a, g.m, g.k, Eigen::OuterStride<>(g.lda)) * x, g.accumulate);
    } else {
      Assign(y, MatrixView<T, Eigen::RowMajor>(g.a, g.m, g.k, Eigen::OuterStride<>(g.lda)) * x, g.accumulate);
    }
    return;
  }
  // c[0, :]^T = op(b)^T * op(a)[0, :]^T; op(b)^T is b read the other way round.
  ConstColumnView<T> x(g.a, g.k, Eigen::InnerStride<>(g.transpose_a ? g.lda : 1));
  ColumnView<T> y(g.c, g.n, Eigen::InnerStride<>(1));
  if (g.transpose_b) {
    Assign(y, MatrixView<T, Eigen::RowMajor>(g.b, g.n, g.k, Eigen::OuterStride<>(g.ldb)) * x, g.accumulate);
  } else {
    Assign(y, MatrixView<T, Eigen::ColMajor>(g.b, g.n, g.k, Eigen::OuterStride<>(g.ldb)) * x, g.accumulate);
  }
}

}  // namespace

template <typename T>
void GemmOnThisThread(const GemmArgs<T>& g) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0 || g.n == 1 || g.m == 1) {
    if (g.k <= 0) {
      if (!g.accumulate) {
        for (int64_t i = 0; i < g.m; ++i) std::fill_n(g.c + i * g.ldc, g.n, T(0));
      }
      return;
    }
    MatrixVectorProduct(g);
    return;
  }
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
}

template <typename T>
void Gemm(OpKernelContext* ctx, const GemmArgs<T>& g) {
  if (g.m <= 0 || g.n <= 0) return;
  ThreadPool* pool = ctx->intra_op_pool();
  const int threads = pool == nullptr ? 1 : pool->NumThreads();
  // Split the bigger of op(a) and op(b) (each thread packs all of the other): by rows of c,
  // or by columns in whole cache lines, so two threads never write one line.
  const bool by_rows = g.m >= g.n;
  constexpr int64_t kLine = 64 / sizeof(T);
  const int64_t units = by_rows ? g.m : (g.n + kLine - 1) / kLine;
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  const int shards = static_cast<int>(std::min<double>({static_cast<double>(threads), static_cast<double>(units),
                                                        flops / kMinFlopsPerShard}));
  if (shards <= 1) {
    GemmOnThisThread(g);
    return;
  }
  ParallelShards(ctx, shards, [&](int s) {
    const auto [begin, end] = ShardRange(units, shards, s);
    GemmArgs<T> part = g;
    if (by_rows) {
      part.m = end - begin;
      part.a = g.transpose_a ? g.a + begin : g.a + begin * g.lda;
      part.c = g.c + begin * g.ldc;
    } else {
      const int64_t first = begin * kLine;
      part.n = std::min(g.n, end * kLine) - first;
      part.b = g.transpose_b ? g.b + first * g.ldb : g.b + first;
      part.c = g.c + first;
    }
    GemmOnThisThread(part);
  });
}

template void GemmOnThisThread<float>(const GemmArgs<float>&);
template void GemmOnThisThread<double>(const GemmArgs<double>&);
template void Gemm<float>(OpKernelContext*, const GemmArgs<float>&);
template void Gemm<double>(OpKernelContext*, const GemmArgs<double>&);

}  // namespace flowtrain
