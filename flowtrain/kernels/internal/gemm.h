// Matrix products for the float32/float64 kernels (MatMul, BatchMatMul, the convolutions):
// a blocked GEMM on packing buffers each thread keeps from call to call, so a training step
// allocates nothing for its products, and a product worth splitting is cut into one
// contiguous block of the output per intra-op thread, each computed single-threaded. (Eigen's
// own multi-threaded product is slower at the batch sizes of training steps and allocates on
// every call.) float32 runs on an AVX-512 micro-kernel where the CPU has AVX-512 (chosen at
// run time: CpuHasAvx512), float64 and other CPUs on Eigen's GEMM; that code lives in gemm.cc only, so
// kernels that multiply matrices compile fast.
//
//   // out[m, n] = a[m, k] * b[n, k]^T, all row-major:
//   Gemm<float>(ctx, {.m = m, .n = n, .k = k, .a = a, .lda = k, .b = b, .ldb = k,
//                     .transpose_b = true, .c = out, .ldc = n});
#ifndef FLOWTRAIN_KERNELS_INTERNAL_GEMM_H_
#define FLOWTRAIN_KERNELS_INTERNAL_GEMM_H_

#include <cstdint>

#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {

// c[m, n] = alpha * op(a) * op(b) (or += with `accumulate`), every matrix row-major with the
// given leading dimension (elements between consecutive rows as stored). op(a) is a [m, k]
// view: `a` itself ([m, k], lda >= k) or, with transpose_a, the transpose of a stored [k, m]
// (lda >= m). Likewise op(b) is [k, n]: `b` or, with transpose_b, the transpose of a stored
// [n, k]. `c` must not overlap `a` or `b`.
//
// An epilogue runs on each tile of c while it is still in registers (fused kernels: TF's
// _FusedMatMul, a weight gradient applied straight to its variable, ReluGrad of a product):
// `bias` ([n]) is added to every row, then `relu` clamps at zero, then c is zeroed where
// `relu_features` ([m, n], leading dimension ldf) is not positive. With accumulate, c's old
// value is added before the epilogue: c = relu(c + alpha * op(a) * op(b) + bias).
//
//   // var -= lr * x^T * dy, without materialising the gradient:
//   Gemm<float>(ctx, {..., .transpose_a = true, ..., .c = var, .ldc = n, .accumulate = true,
//                     .alpha = -lr});
template <typename T>
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const T* a = nullptr;
  int64_t lda = 0;
  bool transpose_a = false;
  const T* b = nullptr;
  int64_t ldb = 0;
  bool transpose_b = false;
  T* c = nullptr;
  int64_t ldc = 0;
  bool accumulate = false;
  T alpha = T(1);
  const T* bias = nullptr;  // [n], added after the product; nullptr: none
  bool relu = false;
  const T* relu_features = nullptr;  // [m, n]: c kept where > 0, else 0; nullptr: none
  int64_t ldf = 0;
};

// The product of a MatMul node's inputs with its transpose flags: [m, k] x [k, n].
struct MatMulShape {
  int64_t m, n, k;
  bool transpose_a, transpose_b;

  // The GemmArgs of out[m, n] = op(a) * op(b), row-major; callers add the epilogue.
  template <typename T>
  GemmArgs<T> Args(const Tensor& a, const Tensor& b, T* out) const {
    return {.m = m,
            .n = n,
            .k = k,
            .a = a.data<T>(),
            .lda = a.dim_size(1),
            .transpose_a = transpose_a,
            .b = b.data<T>(),
            .ldb = b.dim_size(1),
            .transpose_b = transpose_b,
            .c = out,
            .ldc = n};
  }
};

// Checks a and b as TF's MatMul does: InvalidArgument unless both are matrices whose inner
// dimensions (after the transposes) match.
MatMulShape CheckMatMulShape(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b);

// The product on the calling thread (for kernels that already split their work).
template <typename T>
void GemmOnThisThread(const GemmArgs<T>& args);

// The product split over ctx's intra-op pool when it is large enough to gain from it.
template <typename T>
void Gemm(OpKernelContext* ctx, const GemmArgs<T>& args);

extern template void GemmOnThisThread<float>(const GemmArgs<float>&);
extern template void GemmOnThisThread<double>(const GemmArgs<double>&);
extern template void Gemm<float>(OpKernelContext*, const GemmArgs<float>&);
extern template void Gemm<double>(OpKernelContext*, const GemmArgs<double>&);

}  // namespace flowtrain

#endif  // FLOWTRAIN_KERNELS_INTERNAL_GEMM_H_
