// Pieces the float32/float64 kernels share (nn, convolution and pooling, optimizer updates,
// unary math): Eigen array views of tensor memory, the float/double dtype dispatch, and
// vectorized elementwise loops for what Eigen's array expressions leave scalar (select()).
//
//   DispatchFloat(x.dtype(), *this, [&]<typename T>() {
//     ArrayMap<T>(y->data<T>(), n) = ConstArrayMap<T>(x.data<T>(), n).max(T(0));
//   });
//
// Include only in kernel translation units (it pulls in Eigen/Core).
#ifndef FLOWTRAIN_KERNELS_INTERNAL_FLOAT_KERNEL_UTIL_H_
#define FLOWTRAIN_KERNELS_INTERNAL_FLOAT_KERNEL_UTIL_H_

#include <cstdint>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Calls fn.template operator()<T>() for float and double; other dtypes are an error naming
// the kernel.
template <typename Fn>
void DispatchFloat(DataType dtype, const OpKernel& kernel, Fn&& fn) {
  switch (BaseType(dtype)) {
    case DT_FLOAT:
      fn.template operator()<float>();
      return;
    case DT_DOUBLE:
      fn.template operator()<double>();
      return;
    default:
      InvalidArgument(kernel.type_string(), " '", kernel.name(), "' has no CPU kernel for ",
                      DataTypeString(dtype));
  }
}

// InvalidArgument naming the kernel unless `a` and `b` have one shape.
inline void CheckSameShape(const Tensor& a, const Tensor& b, const OpKernel& kernel) {
  if (a.shape() != b.shape()) {
    InvalidArgument(kernel.type_string(), ": inputs must have the same shape, got ", a.shape().DebugString(),
                    " and ", b.shape().DebugString());
  }
}

// out[i] = fn(a[i], b[i]) for i in [0, n), a SIMD packet at a time: fn is called with
// Eigen packets (use Eigen::internal::pcmp_lt, pselect, pmul, ...) and, for the tail, with
// packets of one element (Eigen's scalar fallbacks of the same functions).
template <typename T, typename Fn>
void ZipPackets(const T* a, const T* b, T* out, int64_t n, const Fn& fn) {
  namespace ei = Eigen::internal;
  using Packet = typename ei::packet_traits<T>::type;
  constexpr int64_t kSize = ei::packet_traits<T>::size;
  int64_t i = 0;
  for (; i + kSize <= n; i += kSize) {
    ei::pstoreu(out + i, fn(ei::ploadu<Packet>(a + i), ei::ploadu<Packet>(b + i)));
  }
  for (; i < n; ++i) out[i] = fn(a[i], b[i]);
}

}  // namespace flowtrain

#endif  // FLOWTRAIN_KERNELS_INTERNAL_FLOAT_KERNEL_UTIL_H_
