// Gradients of the array ops of array_ops.cc.
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain {
namespace {

using Grads = std::vector<Output>;

Grads Passthrough(const Operation&, const Grads& dy) { return {dy[0]}; }

Grads ReshapeGrad(const Operation& op, const Grads& dy) {
  return {ops::Reshape(dy[0], ops::Shape(op.input(0))), Output()};
}

Grads SqueezeGrad(const Operation& op, const Grads& dy) {
  return {ops::Reshape(dy[0], ops::Shape(op.input(0)))};
}

Grads BroadcastToGrad(const Operation& op, const Grads& dy) {
  const Output input = op.input(0);
  Output input_shape = ops::Shape(input);
  Operation args = ops::BroadcastGradientArgs(input_shape, op.input(1));
  return {ops::Reshape(ops::Sum(dy[0], args.output(0), /*keep_dims=*/true), input_shape), Output()};
}

Grads FillGrad(const Operation&, const Grads& dy) { return {Output(), ops::ReduceSum(dy[0], {}, false)}; }

}  // namespace

FT_REGISTER_GRADIENT("Identity", Passthrough);
// Identity passes a sparse gradient on as it is (the read of a reference variable is one).
FT_REGISTER_SPARSE_GRADIENT("Identity", [](const Operation&, const std::vector<ops::GradientValue>& dy) {
  return std::vector<ops::GradientValue>{dy[0]};
});
FT_REGISTER_GRADIENT("PlaceholderWithDefault", Passthrough);
FT_REGISTER_GRADIENT("Reshape", ReshapeGrad);
FT_REGISTER_GRADIENT("Squeeze", SqueezeGrad);
FT_REGISTER_GRADIENT("BroadcastTo", BroadcastToGrad);
FT_REGISTER_GRADIENT("Fill", FillGrad);
FT_REGISTER_NO_GRADIENT("Const");
FT_REGISTER_NO_GRADIENT("Placeholder");
FT_REGISTER_NO_GRADIENT("Shape");
FT_REGISTER_NO_GRADIENT("ShapeN");
FT_REGISTER_NO_GRADIENT("ConcatOffset");
FT_REGISTER_NO_GRADIENT("Range");
FT_REGISTER_NO_GRADIENT("Unique");
FT_REGISTER_NO_GRADIENT("ZerosLike");
FT_REGISTER_NO_GRADIENT("OnesLike");
FT_REGISTER_NO_GRADIENT("Where");
FT_REGISTER_NO_GRADIENT("VariableV2");
FT_REGISTER_NO_GRADIENT("Assign");
FT_REGISTER_NO_GRADIENT("AssignAdd");
FT_REGISTER_NO_GRADIENT("AssignSub");
FT_REGISTER_NO_GRADIENT("IsVariableInitialized");

}  // namespace flowtrain

// ---- Gradients of ExpandDims, Transpose, Tile, Slice, StridedSlice, ConcatV2, Split,
// ---- SplitV, Pack, Unpack, Select, SelectV2, GatherV2, UnsortedSegmentSum ----

namespace flowtrain {
namespace {

using Grads = std::vector<Output>;

// Gradients of a multi-output op, with zeros standing in for outputs that got none.
std::vector<Output> DenseGrads(const Operation& op, const Grads& dy) {
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(dy[i] ? dy[i] : ops::ZerosLike(op.output(i)));
  return out;
}

StridedSliceMasks MasksOf(const Operation& op) {
  return {op.GetAttr<int64_t>("begin_mask"), op.GetAttr<int64_t>("end_mask"),
          op.GetAttr<int64_t>("ellipsis_mask"), op.GetAttr<int64_t>("new_axis_mask"),
          op.GetAttr<int64_t>("shrink_axis_mask")};
}

// `axis` (a scalar that may be negative) made non-negative for a tensor of rank Rank(x).
Output NonNegativeAxis(const Output& axis, const Output& x) {
  if (const Tensor* t = axis.node()->constant_value(); t != nullptr && !x.shape().unknown_rank()) {
    int64_t a = t->dtype() == DT_INT32 ? t->scalar<int32_t>() : t->scalar<int64_t>();
    if (a < 0) a += x.shape().dims();
    return ops::Const(static_cast<int32_t>(a));
  }
  Output a = axis.dtype() == DT_INT32 ? axis : ops::Cast(axis, DT_INT32);
  return ops::Select(ops::Less(a, ops::Const(int32_t{0})), a + ops::Rank(x), a);
}

Grads ConcatGrad(const Operation& op, const Grads& dy) {
  const int n = op.num_inputs() - 1;
  Output axis = NonNegativeAxis(op.input(n), op.input(0));
  std::vector<Output> sizes;
  for (int i = 0; i < n; ++i)
    sizes.push_back(ops::GatherV2(ops::Shape(op.input(i)), axis, ops::Const(int32_t{0})));
  Grads grads = ops::SplitV(dy[0], ops::Pack(sizes), axis, n);
  grads.push_back(Output());
  return grads;
}

Output ConcatOrIdentity(const std::vector<Output>& values, const Output& axis) {
  return values.size() == 1 ? ops::Identity(values[0]) : ops::ConcatV2(values, axis);
}

Grads TileGrad(const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const PartialTensorShape& shape = x.shape();
  if (shape.unknown_rank()) Unimplemented("Gradient of Tile '", op.name(), "' needs an input of known rank");
  // Viewing dy as [m0, s0, m1, s1, ...] and summing over the m's folds every copy back.
  Output multiples = op.input(1);
  Output split_shape = ops::Reshape(
      ops::Transpose(ops::Pack({multiples, ops::Shape(x, multiples.dtype())}), std::vector<int64_t>{1, 0}),
      {-1});
  std::vector<int64_t> axes;
  for (int d = 0; d < shape.dims(); ++d) axes.push_back(2 * d);
  if (axes.empty()) return {dy[0], Output()};
  return {ops::ReduceSum(ops::Reshape(dy[0], split_shape), axes), Output()};
}

Grads SliceGrad(const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output begin = op.input(1);
  Output end = begin + ops::Shape(op.output(0), begin.dtype());
  return {ops::StridedSliceGrad(ops::Shape(x, begin.dtype()), begin, end, ops::OnesLike(begin), dy[0]),
          Output(), Output()};
}

Grads StridedSliceGradient(const Operation& op, const Grads& dy) {
  const Output begin = op.input(1);
  return {ops::StridedSliceGrad(ops::Shape(op.input(0), begin.dtype()), begin, op.input(2), op.input(3),
                                dy[0], MasksOf(op)),
          Output(), Output(), Output()};
}

// The gradient of StridedSliceGrad with respect to dy is the slice it scattered.
Grads StridedSliceGradGradient(const Operation& op, const Grads& dy) {
  return {Output(), Output(), Output(), Output(),
          ops::StridedSlice(dy[0], op.input(1), op.input(2), op.input(3), MasksOf(op))};
}

// `grad` (with the broadcast shape of `out`) summed back to the shape of `x`.
Output SumToShapeOf(const Output& grad, const Output& x, const Output& out) {
  if (x.shape().IsFullyDefined() && x.shape().IsIdenticalTo(out.shape())) return grad;
  Output sx = ops::Shape(x);
  Operation args = ops::BroadcastGradientArgs(sx, ops::Shape(out));
  return ops::Reshape(ops::Sum(grad, args.output(0)), sx);
}

Grads SelectGrad(const Operation& op, const Grads& dy) {
  Output zeros = ops::ZerosLike(dy[0]);
  return {Output(), ops::Select(op.input(0), dy[0], zeros), ops::Select(op.input(0), zeros, dy[0])};
}

Grads SelectV2Grad(const Operation& op, const Grads& dy) {
  Output zeros = ops::ZerosLike(dy[0]);
  const Output out = op.output(0);
  return {Output(), SumToShapeOf(ops::SelectV2(op.input(0), dy[0], zeros), op.input(1), out),
          SumToShapeOf(ops::SelectV2(op.input(0), zeros, dy[0]), op.input(2), out)};
}

// GatherV2: sparse along axis 0 (ops::GatherRowsGradient); along another axis, dense: the rows of dy
// summed into the gathered positions.
std::vector<ops::GradientValue> GatherV2Grad(const Operation& op,
                                             const std::vector<ops::GradientValue>& grads) {
  const Output params = op.input(0);
  const Output indices = op.input(1);
  const Output dy = ops::ToDense(grads[0]);
  const Tensor* axis_tensor = op.input(2).node()->constant_value();
  if (axis_tensor == nullptr) Unimplemented("Gradient of GatherV2 '", op.name(), "' needs a constant axis");
  int64_t axis =
      axis_tensor->dtype() == DT_INT32 ? axis_tensor->scalar<int32_t>() : axis_tensor->scalar<int64_t>();
  Output params_shape = ops::Shape(params);
  if (axis == 0) return {ops::GatherRowsGradient(params_shape, indices, dy), Output(), Output()};
  Output flat_indices = ops::Reshape(indices, {-1});
  Output minus_one = ops::Const(Tensor::FromVector<int32_t>({-1}));
  const int rp = params.shape().dims();
  const int ri = indices.shape().dims();
  if (params.shape().unknown_rank() || indices.shape().unknown_rank()) {
    Unimplemented("Gradient of GatherV2 '", op.name(), "' along axis ", axis,
                  " needs params and indices of known rank");
  }
  if (axis < 0) axis += rp;
  // Move the indices' dimensions of dy to the front, sum into segments, move back.
  std::vector<int64_t> perm;
  for (int d = 0; d < ri; ++d) perm.push_back(axis + d);
  for (int d = 0; d < axis; ++d) perm.push_back(d);
  for (int d = static_cast<int>(axis) + ri; d < rp - 1 + ri; ++d) perm.push_back(d);
  Output moved = ops::Transpose(dy, perm);
  Output outer = ops::StridedSlice(params_shape, {0}, {axis}, {1});
  Output inner = ops::StridedSlice(params_shape, {axis + 1}, {0}, {1}, {.end_mask = 1});
  Output values = ops::Reshape(moved, ops::ConcatV2({minus_one, outer, inner}, ops::Const(int32_t{0})));
  Output rows = ops::StridedSlice(params_shape, {axis}, {axis + 1}, {1}, {.shrink_axis_mask = 1});
  Output summed = ops::UnsortedSegmentSum(values, flat_indices, rows);
  std::vector<int64_t> back;
  for (int d = 1; d <= axis; ++d) back.push_back(d);
  back.push_back(0);
  for (int d = static_cast<int>(axis) + 1; d < rp; ++d) back.push_back(d);
  return {ops::Transpose(summed, back), Output(), Output()};
}

// UnsortedSegmentSum: each data element receives its segment's gradient; dropped (negative)
// ids receive zero.
Grads UnsortedSegmentSumGrad(const Operation& op, const Grads& dy) {
  const Output data = op.input(0);
  const Output ids = op.input(1);
  Output zero_id = ops::ZerosLike(ids);
  Output gathered = ops::GatherV2(dy[0], ops::Maximum(ids, zero_id), ops::Const(int32_t{0}));
  // The mask, shaped ids.shape + [1] * (rank(data) - rank(ids)), broadcasts over rows.
  Output ones = ops::Fill(ops::ExpandDims(ops::Rank(data) - ops::Rank(ids), 0), ops::Const(int32_t{1}));
  Output mask = ops::Reshape(ops::GreaterEqual(ids, zero_id),
                             ops::ConcatV2({ops::Shape(ids), ones}, ops::Const(int32_t{0})));
  return {ops::SelectV2(mask, gathered, ops::ZerosLike(gathered)), Output(), Output()};
}

}  // namespace

FT_REGISTER_GRADIENT("ExpandDims", [](const Operation& op, const Grads& dy) {
  return Grads{ops::Reshape(dy[0], ops::Shape(op.input(0))), Output()};
});
FT_REGISTER_GRADIENT("Transpose", [](const Operation& op, const Grads& dy) {
  return Grads{ops::Transpose(dy[0], ops::InvertPermutation(op.input(1))), Output()};
});
FT_REGISTER_GRADIENT("Tile", TileGrad);
FT_REGISTER_GRADIENT("Slice", SliceGrad);
FT_REGISTER_GRADIENT("StridedSlice", StridedSliceGradient);
FT_REGISTER_GRADIENT("StridedSliceGrad", StridedSliceGradGradient);
FT_REGISTER_GRADIENT("ConcatV2", ConcatGrad);
FT_REGISTER_GRADIENT("Split", [](const Operation& op, const Grads& dy) {
  return Grads{Output(), ConcatOrIdentity(DenseGrads(op, dy), op.input(0))};
});
FT_REGISTER_GRADIENT("SplitV", [](const Operation& op, const Grads& dy) {
  return Grads{ConcatOrIdentity(DenseGrads(op, dy), op.input(2)), Output(), Output()};
});
FT_REGISTER_GRADIENT("Pack", [](const Operation& op, const Grads& dy) {
  return ops::Unpack(dy[0], op.num_inputs(), op.GetAttr<int64_t>("axis"));
});
FT_REGISTER_GRADIENT("Unpack", [](const Operation& op, const Grads& dy) {
  return Grads{ops::Pack(DenseGrads(op, dy), op.GetAttr<int64_t>("axis"))};
});
FT_REGISTER_GRADIENT("Select", SelectGrad);
FT_REGISTER_GRADIENT("SelectV2", SelectV2Grad);
// Reversing the same prefixes again puts each gradient back where its input came from.
FT_REGISTER_GRADIENT("ReverseSequence", [](const Operation& op, const Grads& dy) {
  Output dx = NodeBuilder("ReverseSequence", "ReverseSequence")
                  .Input(dy[0])
                  .Input(op.input(1))
                  .Attr("seq_dim", op.GetAttr<int64_t>("seq_dim"))
                  .Attr("batch_dim", op.GetAttr<int64_t>("batch_dim"))
                  .Finalize();
  return Grads{dx, Output()};
});
FT_REGISTER_SPARSE_GRADIENT("GatherV2", GatherV2Grad);
FT_REGISTER_GRADIENT("UnsortedSegmentSum", UnsortedSegmentSumGrad);
// TF's _DynamicStitchGrads: each data input gets the rows of the gradient its indices name
// (a row later inputs overwrote gets the gradient too, as in TF); indices get none.
Grads DynamicStitchGrad(const Operation& op, const Grads& dy) {
  const int n = op.num_inputs() / 2;
  Grads grads(static_cast<size_t>(2 * n));
  for (int i = 0; i < n; ++i) {
    grads[n + i] = ops::GatherV2(dy[0], op.input(i), ops::Const(int32_t{0}));
  }
  return grads;
}
FT_REGISTER_GRADIENT("DynamicStitch", DynamicStitchGrad);
FT_REGISTER_GRADIENT("ParallelDynamicStitch", DynamicStitchGrad);
// TF's _DynamicPartitionGrads: the elements' positions are partitioned as the data was, and
// the partitions' gradients stitched back at them (zeros for a partition without one).
Grads DynamicPartitionGrad(const Operation& op, const Grads& dy) {
  const Output data = op.input(0);
  const Output partitions = op.input(1);
  Output positions =
      ops::Reshape(ops::Range(ops::Const(int32_t{0}), ops::Size(partitions), ops::Const(int32_t{1})),
                   ops::Shape(partitions));
  const std::vector<Output> partitioned_positions =
      ops::DynamicPartition(positions, partitions, static_cast<int>(op.GetAttr<int64_t>("num_partitions")));
  Output stitched = ops::DynamicStitch(partitioned_positions, DenseGrads(op, dy));
  return {ops::Reshape(stitched, ops::Shape(data)), Output()};
}
FT_REGISTER_GRADIENT("DynamicPartition", DynamicPartitionGrad);
FT_REGISTER_NO_GRADIENT("StopGradient");
FT_REGISTER_NO_GRADIENT("Size");
FT_REGISTER_NO_GRADIENT("Rank");
FT_REGISTER_NO_GRADIENT("InvertPermutation");
FT_REGISTER_NO_GRADIENT("OneHot");

}  // namespace flowtrain
