// Eigen views of a Tensor's buffer, for kernels. Kept apart from tensor.h because Eigen's
// tensor module is heavy to compile; include it only in kernel translation units.
//
//   auto x = EigenFlat<float>(input);          // Eigen::TensorMap, rank 1
//   auto m = EigenMatrix<float>(weights);      // rank 2, row-major
//   y.device(device) = x * x;
#ifndef FLOWTRAIN_CORE_TENSOR_EIGEN_H_
#define FLOWTRAIN_CORE_TENSOR_EIGEN_H_

#include <unsupported/Eigen/CXX11/Tensor>

#include "flowtrain/core/tensor.h"

namespace flowtrain {

template <typename T, int N>
using EigenTensorMap =
    Eigen::TensorMap<Eigen::Tensor<T, N, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Aligned>;

template <typename T>
EigenTensorMap<T, 1> EigenFlat(const Tensor& t) {
  return EigenTensorMap<T, 1>(t.data<T>(), t.NumElements());
}

template <typename T>
EigenTensorMap<T, 0> EigenScalar(const Tensor& t) {
  return EigenTensorMap<T, 0>(&t.scalar<T>());
}

// Rank-N view; the tensor must have exactly N dimensions.
template <typename T, int N>
EigenTensorMap<T, N> EigenTensor(const Tensor& t) {
  if (t.dims() != N) {
    InvalidArgument("Expected a rank-", N, " tensor, got shape ", t.shape().DebugString());
  }
  Eigen::array<Eigen::DenseIndex, N> dims;
  for (int i = 0; i < N; ++i) dims[i] = t.dim_size(i);
  return EigenTensorMap<T, N>(t.data<T>(), dims);
}

template <typename T>
EigenTensorMap<T, 2> EigenMatrix(const Tensor& t) {
  return EigenTensor<T, 2>(t);
}

// Views the tensor as [prod(dims[0..n-2]), dims[n-1]] (a scalar or vector as one row).
template <typename T>
EigenTensorMap<T, 2> EigenFlatInnerDims(const Tensor& t) {
  const int64_t inner = t.dims() == 0 ? 1 : t.dim_size(t.dims() - 1);
  const int64_t outer = inner == 0 ? 0 : t.NumElements() / inner;
  return EigenTensorMap<T, 2>(t.data<T>(), outer, inner);
}

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_TENSOR_EIGEN_H_
