// Array ops: constants, placeholders and shape manipulation, with TF's op names and default
// node names.
//
//   Output c = ops::Const(3.0f);                                   // "Const"
//   Output v = ops::Const<float>({1, 2, 3, 4}, TensorShape({2, 2}));
//   Output x = ops::Placeholder(DT_FLOAT, {-1, 64}, "images");
//   Output r = ops::Reshape(x, {-1, 8, 8});
#ifndef FLOWTRAIN_OPS_ARRAY_OPS_H_
#define FLOWTRAIN_OPS_ARRAY_OPS_H_

#include <initializer_list>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

Output Const(const Tensor& value, std::string_view name = "Const");

template <typename T>
  requires(std::is_arithmetic_v<T> || std::is_same_v<T, std::string>)
Output Const(const T& value, std::string_view name = "Const") {
  return Const(Tensor::Scalar<T>(value), name);
}
inline Output Const(const char* value, std::string_view name = "Const") {
  return Const(Tensor::Scalar<std::string>(value), name);
}
template <typename T>
Output Const(std::initializer_list<T> values, std::string_view name = "Const") {
  return Const(Tensor::FromVector<T>(std::vector<T>(values)), name);
}
template <typename T>
Output Const(const std::vector<T>& values, const TensorShape& shape,
             std::string_view name = "Const") {
  return Const(Tensor::FromVector<T>(values, shape), name);
}

// A value that must be fed; `shape` may have unknown dimensions (-1) or unknown rank.
Output Placeholder(DataType dtype, const PartialTensorShape& shape = PartialTensorShape::Unknown(),
                   std::string_view name = "Placeholder");
Output PlaceholderWithDefault(Output input, const PartialTensorShape& shape,
                              std::string_view name = "PlaceholderWithDefault");
Output Identity(Output input, std::string_view name = "Identity");
Output Reshape(Output tensor, Output shape, std::string_view name = "Reshape");
Output Reshape(Output tensor, const std::vector<int64_t>& shape, std::string_view name = "Reshape");
Output Shape(Output input, DataType out_type = DT_INT32, std::string_view name = "Shape");
// tf.stack: packs rank-R tensors into one rank-(R+1) tensor along `axis`.
Output Pack(const std::vector<Output>& values, int64_t axis = 0, std::string_view name = "stack");
// Removes dimensions of size 1 (all of them, or those in `axis`).
Output Squeeze(Output input, const std::vector<int64_t>& axis = {}, std::string_view name = "Squeeze");
Output GatherV2(Output params, Output indices, Output axis, std::string_view name = "GatherV2");
// Coordinates of true elements, as int64 [num_true, rank].
Output Where(Output condition, std::string_view name = "Where");
// A tensor of shape `dims` (a 1-D int tensor) filled with the scalar `value`.
Output Fill(Output dims, Output value, std::string_view name = "Fill");
Output ZerosLike(Output x, std::string_view name = "zeros_like");
Output OnesLike(Output x, std::string_view name = "ones_like");
// `input` broadcast to `shape` (numpy rules).
Output BroadcastTo(Output input, Output shape, std::string_view name = "BroadcastTo");
// tf.boolean_mask for a 1-D mask over the first dimension of `tensor`.
Output BooleanMask(Output tensor, Output mask, std::string_view name = "boolean_mask");

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_ARRAY_OPS_H_
