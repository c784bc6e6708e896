// Stacking and splitting tensors along a new first dimension: what queues' DequeueMany and
// EnqueueMany and the dataset Batch transformation do to their elements.
//
//   Tensor batch = batch_util::Stack({a, b, c}, "Batch");    // [3, ...shape of a]
//   Tensor row = batch_util::Unstack(batch)[1];               // shares batch's buffer
//   Tensor padded = batch_util::PadAndStack({x, y}, {-1, 4}, "PaddingFIFOQueue");
#ifndef FLOWTRAIN_FRAMEWORK_INTERNAL_BATCH_UTIL_H_
#define FLOWTRAIN_FRAMEWORK_INTERNAL_BATCH_UTIL_H_

#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"

namespace flowtrain::batch_util {

// Stacks tensors of one dtype and shape; InvalidArgument naming `what` if shapes differ.
// `dtype` and `element_shape` describe the result when `elements` is empty.
Tensor Stack(const std::vector<Tensor>& elements, std::string_view what, DataType dtype = DT_INVALID,
             const TensorShape& element_shape = {});
// Splits dimension 0; the rows share `batch`'s buffer.
std::vector<Tensor> Unstack(const Tensor& batch);
// Stacks tensors of one rank, padding each to the largest size of every dimension (or to
// the size given in `padded_shape` where it is not -1) with zeros or empty strings, or with
// `padding_value` (a scalar of the elements' dtype) when given.
Tensor PadAndStack(const std::vector<Tensor>& elements, const PartialTensorShape& padded_shape,
                   std::string_view what, const Tensor* padding_value = nullptr);

}  // namespace flowtrain::batch_util

#endif  // FLOWTRAIN_FRAMEWORK_INTERNAL_BATCH_UTIL_H_
