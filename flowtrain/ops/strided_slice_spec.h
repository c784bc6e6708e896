// StridedSliceSpec: TF's rules for turning StridedSlice's sparse specification (begin, end,
// strides and the five masks) into one (begin, stride, size) per input dimension and the final
// output shape. Shared by the op's shape function (with a partial input shape) and by the
// StridedSlice/StridedSliceGrad kernels (with a known one), so both report the same errors.
//
//   StridedSliceSpec spec = ResolveStridedSlice(TensorShape({4, 5}), {1, 0}, {3, 0}, {1, 1},
//                                               {.end_mask = 2, .shrink_axis_mask = 0});
//   // spec.final_shape == [2,5]; spec.begin == {1, 0}; spec.size == {2, 5}
#ifndef FLOWTRAIN_OPS_STRIDED_SLICE_SPEC_H_
#define FLOWTRAIN_OPS_STRIDED_SLICE_SPEC_H_

#include <cstdint>
#include <vector>

#include "flowtrain/core/tensor_shape.h"

namespace flowtrain {

struct StridedSliceMasks {
  int64_t begin_mask = 0;
  int64_t end_mask = 0;
  int64_t ellipsis_mask = 0;
  int64_t new_axis_mask = 0;
  int64_t shrink_axis_mask = 0;
};

struct StridedSliceSpec {
  // One entry per input dimension: the first index taken, the step, and how many are taken
  // (size -1 where the input dimension is unknown).
  std::vector<int64_t> begin, stride, size;
  // The output: `size` with shrunk dimensions removed and new axes (1) inserted.
  PartialTensorShape final_shape = PartialTensorShape::Unknown();
  // True when the slice takes every element in order (the output is the input reshaped).
  bool is_identity = false;
};

// Throws InvalidArgument (TF's messages) for mismatched spec lengths, zero strides, several
// ellipses, too many indices and out-of-range shrink indices. `input` must have known rank.
StridedSliceSpec ResolveStridedSlice(const PartialTensorShape& input, const std::vector<int64_t>& begin,
                                     const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                                     const StridedSliceMasks& masks);

}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_STRIDED_SLICE_SPEC_H_
