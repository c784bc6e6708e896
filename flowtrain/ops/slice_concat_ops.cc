// Ops that cut tensors apart or join them: Slice, StridedSlice (+ its gradient op), ConcatV2,
// Split, SplitV and Unpack. Builder functions are declared in array_ops.h.
#include <numeric>
#include <optional>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/strided_slice_spec.h"

namespace flowtrain {
namespace {

// The values of input i when it is a constant integer scalar or vector.
std::optional<std::vector<int64_t>> ConstInts(InferenceContext& c, int i) {
  const Tensor* t = c.input_tensor(i);
  if (t == nullptr) return std::nullopt;
  std::vector<int64_t> v(t->NumElements());
  for (int64_t k = 0; k < t->NumElements(); ++k) {
    v[k] = t->dtype() == DT_INT32 ? t->flat<int32_t>()[k] : t->flat<int64_t>()[k];
  }
  return v;
}

PartialTensorShape MakeShape(const DimVector& dims) {
  return PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
}

// Normalizes `axis` into [0, rank); TF's message for the concat family otherwise.
int64_t CanonicalAxis(int64_t axis, int rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    InvalidArgument(what, ": Expected axis in the range [", -rank, ", ", rank, "), but got ", axis);
  }
  return axis < 0 ? axis + rank : axis;
}

void SliceShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const auto begin = ConstInts(c, 1);
  const auto size = ConstInts(c, 2);
  if (begin && size && begin->size() != size->size()) {
    InvalidArgument("Expected begin and size arguments to be 1-D tensors of the same size, but got ",
                    begin->size(), " and ", size->size());
  }
  const int rank = in.unknown_rank() ? (begin ? static_cast<int>(begin->size()) : -1) : in.dims();
  if (!in.unknown_rank() && begin && static_cast<int>(begin->size()) != rank) {
    InvalidArgument("Expected begin argument to have ", rank, " elements, but got ", begin->size());
  }
  if (rank < 0) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  DimVector dims(rank, -1);
  for (int d = 0; d < rank; ++d) {
    const int64_t dim = in.unknown_rank() ? -1 : in.dim_size(d);
    const int64_t b = begin ? (*begin)[d] : -1;
    const int64_t s = size ? (*size)[d] : -1;
    if (begin && (b < 0 || (dim >= 0 && b > dim))) {
      InvalidArgument("Expected begin[", d, "] in [0, ", dim, "], but got ", b);
    }
    if (size && s < -1) InvalidArgument("Expected size[", d, "] >= -1, but got ", s);
    if (size && s >= 0) {
      if (begin && dim >= 0 && b + s > dim) {
        InvalidArgument("Expected size[", d, "] in [0, ", dim - b, "], but got ", s);
      }
      dims[d] = s;
    } else if (size && begin && dim >= 0) {
      dims[d] = dim - b;  // -1: everything after begin
    }
  }
  c.set_output(0, MakeShape(dims));
}

StridedSliceMasks MasksOf(const InferenceContext& c) {
  return {c.GetAttr<int64_t>("begin_mask"), c.GetAttr<int64_t>("end_mask"),
          c.GetAttr<int64_t>("ellipsis_mask"), c.GetAttr<int64_t>("new_axis_mask"),
          c.GetAttr<int64_t>("shrink_axis_mask")};
}

void StridedSliceShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const auto begin = ConstInts(c, 1);
  const auto end = ConstInts(c, 2);
  const auto strides = ConstInts(c, 3);
  if (in.unknown_rank() || !begin || !end || !strides) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  c.set_output(0, ResolveStridedSlice(in, *begin, *end, *strides, MasksOf(c)).final_shape);
}

void StridedSliceGradShape(InferenceContext& c) { c.set_output(0, c.InputAsShape(0)); }

// ConcatV2: inputs 0..N-1 are the values, input N the axis.
void ConcatV2Shape(InferenceContext& c) {
  const int n = c.num_inputs() - 1;
  int rank = -1;
  for (int i = 0; i < n; ++i) {
    const PartialTensorShape& s = c.input(i);
    if (s.unknown_rank()) continue;
    if (rank >= 0 && s.dims() != rank) {
      InvalidArgument("Shape must be rank ", rank, " but is rank ", s.dims());
    }
    rank = s.dims();
  }
  const auto axis_value = ConstInts(c, n);
  if (rank < 0) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  if (rank == 0) InvalidArgument("Can't concatenate scalars (use tf.stack instead)");
  if (!axis_value) {
    // Every dimension may be the concatenated one; only the rank is known.
    c.set_output(0, PartialTensorShape::UnknownOfRank(rank));
    return;
  }
  const int64_t axis = CanonicalAxis((*axis_value)[0], rank, "ConcatOp");
  DimVector dims(rank, -1);
  int64_t total = 0;
  bool first = true;
  for (int i = 0; i < n; ++i) {
    const PartialTensorShape& s = c.input(i);
    if (s.unknown_rank()) {
      total = -1;
      continue;
    }
    for (int d = 0; d < rank; ++d) {
      if (d == axis) continue;
      if (first || dims[d] < 0) {
        dims[d] = s.dim_size(d);
      } else if (s.dim_size(d) >= 0 && s.dim_size(d) != dims[d]) {
        InvalidArgument("Dimension ", d, " in both shapes must be equal, but are ", dims[d], " and ",
                        s.dim_size(d), ". Shapes are ", c.input(0).DebugString(), " and ", s.DebugString(),
                        ".");
      }
    }
    first = false;
    if (total >= 0) {
      total = s.dim_size(axis) < 0
                  ? -1
                  : CheckedAddSizes(total, s.dim_size(axis), "ConcatV2", "size along the axis");
    }
  }
  dims[axis] = total;
  c.set_output(0, MakeShape(dims));
}

void SplitShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(1);
  const int64_t num_split = c.GetAttr<int64_t>("num_split");
  const auto axis_value = ConstInts(c, 0);
  PartialTensorShape out = PartialTensorShape::Unknown();
  if (!in.unknown_rank()) {
    out = PartialTensorShape::UnknownOfRank(in.dims());
    if (axis_value) {
      const int64_t axis = CanonicalAxis((*axis_value)[0], in.dims(), "Split");
      DimVector dims(in.dim_sizes());
      if (dims[axis] >= 0) {
        if (dims[axis] % num_split != 0) {
          InvalidArgument("Dimension size must be evenly divisible by ", num_split, " but is ", dims[axis]);
        }
        dims[axis] /= num_split;
      }
      out = MakeShape(dims);
    }
  }
  for (int i = 0; i < num_split; ++i) c.set_output(i, out);
}

void SplitVShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const int64_t num_split = c.GetAttr<int64_t>("num_split");
  auto sizes = ConstInts(c, 1);
  const auto axis_value = ConstInts(c, 2);
  if (sizes && static_cast<int64_t>(sizes->size()) != num_split) {
    InvalidArgument("Length of size_splits should be equal to num_split, but got ", sizes->size(), " and ",
                    num_split);
  }
  if (in.unknown_rank() || !axis_value || !sizes) {
    const PartialTensorShape out =
        in.unknown_rank() ? PartialTensorShape::Unknown() : PartialTensorShape::UnknownOfRank(in.dims());
    for (int i = 0; i < num_split; ++i) c.set_output(i, out);
    return;
  }
  const int64_t axis = CanonicalAxis((*axis_value)[0], in.dims(), "SplitV");
  const int64_t dim = in.dim_size(axis);
  int unknown = -1;
  int64_t known_sum = 0;
  for (int i = 0; i < num_split; ++i) {
    if ((*sizes)[i] == -1) {
      if (unknown >= 0)
        InvalidArgument("Only one dimensions can have a value of -1. Second one found at dimension ", i);
      unknown = i;
    } else if ((*sizes)[i] < 0) {
      InvalidArgument("size_splits[", i, "] must be >= -1, got ", (*sizes)[i]);
    } else {
      known_sum += (*sizes)[i];
    }
  }
  if (dim >= 0 && ((unknown < 0 && known_sum != dim) || (unknown >= 0 && known_sum > dim))) {
    InvalidArgument(
        "Determined shape must either match input shape along split_dim exactly if "
        "fully specified, or be less than the size of the input along split_dim if "
        "not fully specified.  Got: ",
        known_sum);
  }
  if (unknown >= 0) (*sizes)[unknown] = dim >= 0 ? dim - known_sum : -1;
  for (int i = 0; i < num_split; ++i) {
    DimVector dims(in.dim_sizes());
    dims[axis] = (*sizes)[i];
    c.set_output(i, MakeShape(dims));
  }
}

void UnpackShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const int64_t num = c.GetAttr<int64_t>("num");
  PartialTensorShape out = PartialTensorShape::Unknown();
  if (!in.unknown_rank()) {
    const int64_t axis = CanonicalAxis(c.GetAttr<int64_t>("axis"), in.dims(), "Unpack");
    if (in.dim_size(axis) >= 0 && in.dim_size(axis) != num) {
      InvalidArgument("Dimension must be ", num, " but is ", in.dim_size(axis));
    }
    DimVector dims(in.dim_sizes());
    dims.erase(dims.begin() + axis);
    out = MakeShape(dims);
  }
  for (int i = 0; i < num; ++i) c.set_output(i, out);
}

}  // namespace

FT_REGISTER_OP("Slice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("size: Index")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Index: {int32, int64}")
    .SetShapeFn(SliceShape);

#define FT_STRIDED_SLICE_MASK_ATTRS   \
  .Attr("begin_mask: int = 0")        \
      .Attr("end_mask: int = 0")      \
      .Attr("ellipsis_mask: int = 0") \
      .Attr("new_axis_mask: int = 0") \
      .Attr("shrink_axis_mask: int = 0")

FT_REGISTER_OP("StridedSlice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("end: Index")
    .Input("strides: Index")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Index: {int32, int64}") FT_STRIDED_SLICE_MASK_ATTRS.SetShapeFn(StridedSliceShape);

FT_REGISTER_OP("StridedSliceGrad")
    .Input("shape: Index")
    .Input("begin: Index")
    .Input("end: Index")
    .Input("strides: Index")
    .Input("dy: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Index: {int32, int64}") FT_STRIDED_SLICE_MASK_ATTRS.SetShapeFn(StridedSliceGradShape);
#undef FT_STRIDED_SLICE_MASK_ATTRS

FT_REGISTER_OP("ConcatV2")
    .Input("values: N * T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("N: int >= 2")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn(ConcatV2Shape);

FT_REGISTER_OP("Split")
    .Input("split_dim: int32")
    .Input("value: T")
    .Output("output: num_split * T")
    .Attr("num_split: int >= 1")
    .Attr("T: type")
    .SetShapeFn(SplitShape);

FT_REGISTER_OP("SplitV")
    .Input("value: T")
    .Input("size_splits: Tlen")
    .Input("split_dim: int32")
    .Output("output: num_split * T")
    .Attr("num_split: int >= 1")
    .Attr("T: type")
    .Attr("Tlen: {int32, int64} = DT_INT64")
    .SetShapeFn(SplitVShape);

FT_REGISTER_OP("Unpack")
    .Input("value: T")
    .Output("output: num * T")
    .Attr("num: int >= 0")
    .Attr("T: type")
    .Attr("axis: int = 0")
    .SetShapeFn(UnpackShape);

namespace ops {
namespace {

std::vector<Output> AllOutputs(const Operation& op) {
  std::vector<Output> outs;
  for (int i = 0; i < op.num_outputs(); ++i) outs.push_back(op.output(i));
  return outs;
}

Output IndexConst(const std::vector<int64_t>& values, std::string_view name) {
  return Const(IndexVector(values), name);
}

NodeBuilder& SetMasks(NodeBuilder& b, const StridedSliceMasks& m) {
  return b.Attr("begin_mask", m.begin_mask)
      .Attr("end_mask", m.end_mask)
      .Attr("ellipsis_mask", m.ellipsis_mask)
      .Attr("new_axis_mask", m.new_axis_mask)
      .Attr("shrink_axis_mask", m.shrink_axis_mask);
}

}  // namespace

Output Slice(Output input, Output begin, Output size, std::string_view name) {
  return NodeBuilder("Slice", name).Input(input).Input(begin).Input(size).Finalize();
}

Output Slice(Output input, const std::vector<int64_t>& begin, const std::vector<int64_t>& size,
             std::string_view name) {
  OpNameScope scope(*input.graph(), name);
  Output b = IndexConst(begin, "begin");
  Output s = IndexConst(size, "size");
  scope.Exit();
  return NodeBuilder("Slice", scope.op_name()).ExactName().Input(input).Input(b).Input(s).Finalize();
}

Output StridedSlice(Output input, Output begin, Output end, Output strides, const StridedSliceMasks& masks,
                    std::string_view name) {
  NodeBuilder b("StridedSlice", name);
  b.Input(input).Input(begin).Input(end).Input(strides);
  return SetMasks(b, masks).Finalize();
}

Output StridedSlice(Output input, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                    const std::vector<int64_t>& strides, const StridedSliceMasks& masks,
                    std::string_view name) {
  OpNameScope scope(*input.graph(), name);
  Output b = IndexConst(begin, "stack");
  Output e = IndexConst(end, "stack_1");
  Output s = IndexConst(strides.empty() ? std::vector<int64_t>(begin.size(), 1) : strides, "stack_2");
  scope.Exit();
  NodeBuilder builder("StridedSlice", scope.op_name());
  builder.ExactName().Input(input).Input(b).Input(e).Input(s);
  return SetMasks(builder, masks).Finalize();
}

Output StridedSliceGrad(Output shape, Output begin, Output end, Output strides, Output dy,
                        const StridedSliceMasks& masks, std::string_view name) {
  NodeBuilder b("StridedSliceGrad", name);
  b.Input(shape).Input(begin).Input(end).Input(strides).Input(dy);
  return SetMasks(b, masks).Finalize();
}

Output ConcatV2(const std::vector<Output>& values, Output axis, std::string_view name) {
  return NodeBuilder("ConcatV2", name).Input(values).Input(axis).Finalize();
}

Output Concat(const std::vector<Output>& values, int64_t axis, std::string_view name) {
  if (values.empty()) InvalidArgument("concat '", name, "' needs at least one value");
  if (values.size() == 1) return Identity(values[0], name);
  OpNameScope scope(*values[0].graph(), name);
  Output a = Const(static_cast<int32_t>(axis), "axis");
  scope.Exit();
  return NodeBuilder("ConcatV2", scope.op_name()).ExactName().Input(values).Input(a).Finalize();
}

std::vector<Output> Split(Output axis, Output value, int64_t num_split, std::string_view name) {
  return AllOutputs(
      NodeBuilder("Split", name).Input(axis).Input(value).Attr("num_split", num_split).Finalize());
}

std::vector<Output> Split(Output value, int64_t num_split, int64_t axis, std::string_view name) {
  OpNameScope scope(*value.graph(), name);
  Output a = Const(static_cast<int32_t>(axis), "split_dim");
  scope.Exit();
  return AllOutputs(NodeBuilder("Split", scope.op_name())
                        .ExactName()
                        .Input(a)
                        .Input(value)
                        .Attr("num_split", num_split)
                        .Finalize());
}

std::vector<Output> SplitV(Output value, Output size_splits, Output axis, int64_t num_split,
                           std::string_view name) {
  return AllOutputs(NodeBuilder("SplitV", name)
                        .Input(value)
                        .Input(size_splits)
                        .Input(axis)
                        .Attr("num_split", num_split)
                        .Finalize());
}

std::vector<Output> SplitV(Output value, const std::vector<int64_t>& size_splits, int64_t axis,
                           std::string_view name) {
  OpNameScope scope(*value.graph(), name);
  Output sizes = Const(Tensor::FromVector<int64_t>(size_splits), "Const");
  Output a = Const(static_cast<int32_t>(axis), "split_dim");
  scope.Exit();
  return AllOutputs(NodeBuilder("SplitV", scope.op_name())
                        .ExactName()
                        .Input(value)
                        .Input(sizes)
                        .Input(a)
                        .Attr("num_split", static_cast<int64_t>(size_splits.size()))
                        .Finalize());
}

std::vector<Output> Unpack(Output value, int64_t num, int64_t axis, std::string_view name) {
  return AllOutputs(NodeBuilder("Unpack", name).Input(value).Attr("num", num).Attr("axis", axis).Finalize());
}

std::vector<Output> Unstack(Output value, int64_t axis, std::string_view name) {
  const PartialTensorShape& shape = value.shape();
  if (shape.unknown_rank()) InvalidArgument("Cannot infer num from shape ", shape.DebugString());
  const int64_t a = CanonicalAxis(axis, shape.dims(), "unstack");
  if (shape.dim_size(a) < 0) InvalidArgument("Cannot infer num from shape ", shape.DebugString());
  return Unpack(value, shape.dim_size(a), axis, name);
}

}  // namespace ops
}  // namespace flowtrain
