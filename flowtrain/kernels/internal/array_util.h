// Helpers for kernels that move elements without arithmetic (slicing, concatenation,
// transposition, selection): element copies that work for every dtype including strings,
// reading integer index tensors, and the row-major strides of a shape.
//
//   CopyElements(input, 10, *out, 0, 5);          // out[0..5) = input[10..15)
//   std::vector<int64_t> perm = ReadIndices(ctx->input(1));
#ifndef FLOWTRAIN_KERNELS_INTERNAL_ARRAY_UTIL_H_
#define FLOWTRAIN_KERNELS_INTERNAL_ARRAY_UTIL_H_

#include <cstdint>
#include <vector>

#include "flowtrain/core/tensor.h"

namespace flowtrain {

// Copies `count` elements from src[src_offset...] to dst[dst_offset...] (same dtype).
void CopyElements(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count);

// The values of an int32/int64 (or uint8) tensor, widened.
std::vector<int64_t> ReadIndices(const Tensor& t);
int64_t ReadIndex(const Tensor& t, int64_t i);

// Row-major strides (in elements) of `shape`.
DimVector RowMajorStrides(const TensorShape& shape);

// Sets every element of a numeric, bool or string tensor to zero / false / "".
void SetZero(Tensor& t);

}  // namespace flowtrain

#endif  // FLOWTRAIN_KERNELS_INTERNAL_ARRAY_UTIL_H_
