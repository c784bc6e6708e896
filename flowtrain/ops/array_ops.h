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
#include "flowtrain/ops/strided_slice_spec.h"

namespace flowtrain::ops {

Output Const(const Tensor& value, std::string_view name = "Const");

// A vector of sizes or indices as a constant: int32 (what TF makes of Python ints) when every
// value fits, else int64 rather than truncating (a Tile multiple of 2^62 is not 0).
Tensor IndexVector(const std::vector<int64_t>& values);

template <typename T>
requires(std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) Output
    Const(const T& value, std::string_view name = "Const") {
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
Output Const(const std::vector<T>& values, const TensorShape& shape, std::string_view name = "Const") {
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
// The distinct values of the vector x in order of first appearance (y), and where each
// element's value is in y (idx): TF's Unique.
std::pair<Output, Output> Unique(Output x, DataType out_idx = DT_INT32, std::string_view name = "Unique");
// merged[indices[m][i], ...] = data[m][i, ...], TF's DynamicStitch.
Output DynamicStitch(const std::vector<Output>& indices, const std::vector<Output>& data,
                     std::string_view name = "DynamicStitch");
// The same as TF's ParallelDynamicStitch (what tf.nn.embedding_lookup stitches with).
Output ParallelDynamicStitch(const std::vector<Output>& indices, const std::vector<Output>& data,
                             std::string_view name = "ParallelDynamicStitch");
// TF's DynamicPartition: output p holds the slices data[i, ...] with partitions[i] == p, in
// order. A partition outside [0, num_partitions) fails the run with InvalidArgument.
std::vector<Output> DynamicPartition(Output data, Output partitions, int num_partitions,
                                     std::string_view name = "DynamicPartition");
// [start, start + delta, ...) below `limit` (above it for a negative delta); TF's Range.
Output Range(Output start, Output limit, Output delta, std::string_view name = "Range");
// The shape of each input, as one op (TF's ShapeN).
std::vector<Output> ShapeN(const std::vector<Output>& inputs, DataType out_type = DT_INT32,
                           std::string_view name = "ShapeN");
// The offset at which each of `shapes` starts in their concatenation along `concat_dim`.
std::vector<Output> ConcatOffset(Output concat_dim, const std::vector<Output>& shapes,
                                 std::string_view name = "ConcatOffset");
Output ZerosLike(Output x, std::string_view name = "zeros_like");
Output OnesLike(Output x, std::string_view name = "ones_like");
// `input` broadcast to `shape` (numpy rules).
Output BroadcastTo(Output input, Output shape, std::string_view name = "BroadcastTo");
// tf.boolean_mask for a 1-D mask over the first dimension of `tensor`.
Output BooleanMask(Output tensor, Output mask, std::string_view name = "boolean_mask");

// tf.stop_gradient: the input, through which no gradient flows.
Output StopGradient(Output input, std::string_view name = "StopGradient");
// Number of elements, and number of dimensions, as scalars.
Output Size(Output input, DataType out_type = DT_INT32, std::string_view name = "Size");
Output Rank(Output input, std::string_view name = "Rank");
// Inserts a dimension of size 1 at `axis` (negative counts from the end, -1 appends).
Output ExpandDims(Output input, Output axis, std::string_view name = "ExpandDims");
Output ExpandDims(Output input, int64_t axis, std::string_view name = "ExpandDims");

// Joining and cutting. Concat with one value is Identity, as tf.concat.
//   Output c = ops::Concat({a, b}, 1);                   // "concat"
//   std::vector<Output> parts = ops::Split(x, 3, 1);     // three equal parts along axis 1
//   Output row = ops::StridedSlice(x, {1}, {2}, {1}, {.shrink_axis_mask = 1});   // x[1]
Output Concat(const std::vector<Output>& values, int64_t axis, std::string_view name = "concat");
Output ConcatV2(const std::vector<Output>& values, Output axis, std::string_view name = "ConcatV2");
std::vector<Output> Split(Output value, int64_t num_split, int64_t axis = 0, std::string_view name = "split");
std::vector<Output> Split(Output axis, Output value, int64_t num_split, std::string_view name = "Split");
// Parts of the given sizes along `axis`; one size may be -1 (the rest).
std::vector<Output> SplitV(Output value, const std::vector<int64_t>& size_splits, int64_t axis = 0,
                           std::string_view name = "split");
std::vector<Output> SplitV(Output value, Output size_splits, Output axis, int64_t num_split,
                           std::string_view name = "SplitV");
// `size` -1 takes everything after `begin` in that dimension.
Output Slice(Output input, Output begin, Output size, std::string_view name = "Slice");
Output Slice(Output input, const std::vector<int64_t>& begin, const std::vector<int64_t>& size,
             std::string_view name = "Slice");
// Python's x[begin:end:stride, ...] (masks as TF's; empty `strides` means all 1).
Output StridedSlice(Output input, Output begin, Output end, Output strides,
                    const StridedSliceMasks& masks = {}, std::string_view name = "StridedSlice");
Output StridedSlice(Output input, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                    const std::vector<int64_t>& strides = {}, const StridedSliceMasks& masks = {},
                    std::string_view name = "strided_slice");
// The gradient of StridedSlice: `dy` scattered into zeros of `shape`.
Output StridedSliceGrad(Output shape, Output begin, Output end, Output strides, Output dy,
                        const StridedSliceMasks& masks = {}, std::string_view name = "StridedSliceGrad");
// tf.unstack: `num` tensors along `axis` (Unstack infers num from the static shape).
std::vector<Output> Unpack(Output value, int64_t num, int64_t axis = 0, std::string_view name = "Unpack");
std::vector<Output> Unstack(Output value, int64_t axis = 0, std::string_view name = "unstack");

// Rearranging. An empty `perm` reverses the dimensions, as tf.transpose.
Output Transpose(Output x, Output perm, std::string_view name = "transpose");
Output Transpose(Output x, const std::vector<int64_t>& perm = {}, std::string_view name = "transpose");
Output InvertPermutation(Output x, std::string_view name = "InvertPermutation");
Output Tile(Output input, Output multiples, std::string_view name = "Tile");
Output Tile(Output input, const std::vector<int64_t>& multiples, std::string_view name = "Tile");
// tf.gather with a constant axis.
Output Gather(Output params, Output indices, int64_t axis = 0, std::string_view name = "GatherV2");

// tf.one_hot: `depth`-long vectors of off_value with on_value at each index (inserted at
// `axis`, -1 = last); out-of-range indices give all off_value.
Output OneHot(Output indices, Output depth, Output on_value, Output off_value, int64_t axis = -1,
              std::string_view name = "one_hot");
Output OneHot(Output indices, int64_t depth, DataType dtype = DT_FLOAT, int64_t axis = -1,
              std::string_view name = "one_hot");
// TF1 tf.where(condition, x, y): `condition` has x's shape, or is a scalar, or a vector over
// x's first dimension. SelectV2 broadcasts all three (tf.where in TF2).
Output Select(Output condition, Output x, Output y, std::string_view name = "Select");
Output SelectV2(Output condition, Output x, Output y, std::string_view name = "SelectV2");
// output[i, ...] = sum of data[j..., ...] over j with segment_ids[j...] == i; negative ids
// are dropped.
Output UnsortedSegmentSum(Output data, Output segment_ids, Output num_segments,
                          std::string_view name = "UnsortedSegmentSum");

// Brace-list spellings of the functions above. They exist because a two-element list starting
// with 0, as in Transpose(x, {0, 1}), would otherwise also match Output's (Node*, int)
// constructor; an initializer_list parameter wins that overload resolution.
inline Output Slice(Output input, std::initializer_list<int64_t> begin, std::initializer_list<int64_t> size,
                    std::string_view name = "Slice") {
  return Slice(input, std::vector<int64_t>(begin), std::vector<int64_t>(size), name);
}
inline Output StridedSlice(Output input, std::initializer_list<int64_t> begin,
                           std::initializer_list<int64_t> end, std::initializer_list<int64_t> strides = {},
                           const StridedSliceMasks& masks = {}, std::string_view name = "strided_slice") {
  return StridedSlice(input, std::vector<int64_t>(begin), std::vector<int64_t>(end),
                      std::vector<int64_t>(strides), masks, name);
}
inline std::vector<Output> SplitV(Output value, std::initializer_list<int64_t> size_splits, int64_t axis = 0,
                                  std::string_view name = "split") {
  return SplitV(value, std::vector<int64_t>(size_splits), axis, name);
}
inline Output Transpose(Output x, std::initializer_list<int64_t> perm, std::string_view name = "transpose") {
  return Transpose(x, std::vector<int64_t>(perm), name);
}
inline Output Tile(Output input, std::initializer_list<int64_t> multiples, std::string_view name = "Tile") {
  return Tile(input, std::vector<int64_t>(multiples), name);
}

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_ARRAY_OPS_H_
