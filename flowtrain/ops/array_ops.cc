#include "flowtrain/ops/array_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain {
namespace {

void ConstShape(InferenceContext& c) { c.set_output(0, c.node().constant_value()->shape()); }

void PlaceholderShape(InferenceContext& c) { shape_fns::ShapeFromShapeAttr(c); }

void PlaceholderWithDefaultShape(InferenceContext& c) {
  const PartialTensorShape shape = c.GetAttr<PartialTensorShape>("shape");
  if (!shape.IsCompatibleWith(c.input(0))) {
    InvalidArgument("Default input shape ", c.input(0).DebugString(),
                    " is not compatible with the placeholder shape ", shape.DebugString());
  }
  c.set_output(0, shape);
}

void ReshapeShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  PartialTensorShape target = c.InputAsShape(1);
  if (target.unknown_rank()) {
    c.set_output(0, target);
    return;
  }
  int unknown_index = -1;
  int64_t known_product = 1;
  for (int i = 0; i < target.dims(); ++i) {
    if (target.dim_size(i) < 0) {
      if (unknown_index >= 0 && c.input_tensor(1) != nullptr) {
        InvalidArgument("Cannot infer multiple unknown dimensions in shape ", target.DebugString());
      }
      unknown_index = i;
    } else {
      known_product = CheckedMultiplySizes(known_product, target.dim_size(i), "Reshape",
                                           StrCat("shape ", target.DebugString(), " up to size ", i));
    }
  }
  const int64_t in_elements = in.num_elements();
  if (in_elements >= 0 && c.input_tensor(1) != nullptr) {
    if (unknown_index >= 0) {
      if (known_product == 0 || in_elements % known_product != 0) {
        InvalidArgument("Cannot reshape a tensor with ", in_elements, " elements to shape ",
                        target.DebugString());
      }
      DimVector dims(target.dim_sizes());
      dims[unknown_index] = in_elements / known_product;
      target = PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
    } else if (known_product != in_elements) {
      InvalidArgument("Cannot reshape a tensor with ", in_elements, " elements to shape ",
                      target.DebugString(), " (", known_product, " elements)");
    }
  }
  c.set_output(0, target);
}

void ShapeShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  c.set_output(0, in.unknown_rank() ? PartialTensorShape({-1}) : PartialTensorShape({in.dims()}));
}

void PackShape(InferenceContext& c) {
  PartialTensorShape merged = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) merged = c.Merge(merged, c.input(i));
  if (merged.unknown_rank()) {
    c.set_output(0, merged);
    return;
  }
  int64_t axis = c.GetAttr<int64_t>("axis");
  const int rank = merged.dims() + 1;
  if (axis < -rank || axis >= rank) {
    InvalidArgument("Invalid axis: ", axis, "; must be in [", -rank, ",", rank, ")");
  }
  if (axis < 0) axis += rank;
  DimVector dims(merged.dim_sizes());
  dims.insert(dims.begin() + axis, c.num_inputs());
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void SqueezeShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  if (in.unknown_rank()) {
    c.set_output(0, in);
    return;
  }
  std::vector<int64_t> axes = c.GetAttr<std::vector<int64_t>>("squeeze_dims");
  for (int64_t& a : axes) {
    if (a < -in.dims() || a >= in.dims()) {
      InvalidArgument("Tried to squeeze dim index ", a, " for tensor with ", in.dims(), " dimensions.");
    }
    if (a < 0) a += in.dims();
  }
  DimVector dims;
  for (int i = 0; i < in.dims(); ++i) {
    const bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    const int64_t d = in.dim_size(i);
    if (listed) {
      if (d > 1) InvalidArgument("Can not squeeze dim[", i, "], expected a dimension of 1, got ", d);
      continue;
    }
    if (axes.empty() && d == 1) continue;
    if (axes.empty() && d < 0) {
      c.set_output(0, PartialTensorShape::Unknown());
      return;
    }
    dims.push_back(d);
  }
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void GatherV2Shape(InferenceContext& c) {
  const PartialTensorShape& params = c.input(0);
  const PartialTensorShape& indices = c.input(1);
  const Tensor* axis_tensor = c.input_tensor(2);
  if (params.unknown_rank() || indices.unknown_rank() || axis_tensor == nullptr) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  int64_t axis =
      axis_tensor->dtype() == DT_INT32 ? axis_tensor->scalar<int32_t>() : axis_tensor->scalar<int64_t>();
  if (axis < -params.dims() || axis >= params.dims()) {
    InvalidArgument("Shape must be at least rank ", axis + 1, " but is rank ", params.dims());
  }
  if (axis < 0) axis += params.dims();
  DimVector dims;
  for (int i = 0; i < axis; ++i) dims.push_back(params.dim_size(i));
  for (int64_t d : indices.dim_sizes()) dims.push_back(d);
  for (int i = static_cast<int>(axis) + 1; i < params.dims(); ++i) dims.push_back(params.dim_size(i));
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void WhereShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  c.set_output(0, PartialTensorShape({-1, in.unknown_rank() ? -1 : in.dims()}));
}

}  // namespace

FT_REGISTER_OP("Const")
    .Output("output: dtype")
    .Attr("value: tensor")
    .Attr("dtype: type")
    .SetShapeFn(ConstShape);

FT_REGISTER_OP("Placeholder")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape = <unknown>")
    .SetShapeFn(PlaceholderShape);

FT_REGISTER_OP("PlaceholderWithDefault")
    .Input("input: dtype")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .SetShapeFn(PlaceholderWithDefaultShape);

FT_REGISTER_OP("Identity")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape);

// Forwards a list of tensors of any types; the runtime's function lowering names one after
// each inlined call so the call's outputs stay fetchable by its name (TF's does the same).
FT_REGISTER_OP("IdentityN")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: list(type) >= 1")
    .SetShapeFn([](InferenceContext& c) {
      for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(i));
    });

FT_REGISTER_OP("Reshape")
    .Input("tensor: T")
    .Input("shape: Tshape")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tshape: {int32, int64} = DT_INT32")
    .SetShapeFn(ReshapeShape);

FT_REGISTER_OP("Shape")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(ShapeShape);

FT_REGISTER_OP("Pack")
    .Input("values: N * T")
    .Output("output: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("axis: int = 0")
    .SetShapeFn(PackShape);

FT_REGISTER_OP("Squeeze")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("squeeze_dims: list(int) = []")
    .SetShapeFn(SqueezeShape);

FT_REGISTER_OP("GatherV2")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Input("axis: Taxis")
    .Output("output: Tparams")
    .Attr("batch_dims: int = 0")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .Attr("Taxis: {int32, int64}")
    .SetShapeFn(GatherV2Shape);

FT_REGISTER_OP("Where")
    .Input("input: T")
    .Output("index: int64")
    .Attr("T: {bool, float, double, int32, int64, uint8, int8, int16} = DT_BOOL")
    .SetShapeFn(WhereShape);

namespace ops {

Output Const(const Tensor& value, std::string_view name) {
  if (!value.IsInitialized()) InvalidArgument("Const '", name, "' needs an initialized tensor");
  return NodeBuilder("Const", name).Attr("value", value).Attr("dtype", value.dtype()).Finalize();
}

Output Placeholder(DataType dtype, const PartialTensorShape& shape, std::string_view name) {
  return NodeBuilder("Placeholder", name).Attr("dtype", dtype).Attr("shape", shape).Finalize();
}

Output PlaceholderWithDefault(Output input, const PartialTensorShape& shape, std::string_view name) {
  return NodeBuilder("PlaceholderWithDefault", name)
      .Input(input)
      .Attr("dtype", input.dtype())
      .Attr("shape", shape)
      .Finalize();
}

Output Identity(Output input, std::string_view name) {
  return NodeBuilder("Identity", name).Input(input).Finalize();
}

Output Reshape(Output tensor, Output shape, std::string_view name) {
  return NodeBuilder("Reshape", name).Input(tensor).Input(shape).Finalize();
}

Tensor IndexVector(const std::vector<int64_t>& values) {
  const bool fits = std::all_of(values.begin(), values.end(), [](int64_t v) {
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  });
  if (!fits) return Tensor::FromVector<int64_t>(values);
  return Tensor::FromVector<int32_t>(std::vector<int32_t>(values.begin(), values.end()));
}

Output Reshape(Output tensor, const std::vector<int64_t>& shape, std::string_view name) {
  OpNameScope scope(*tensor.graph(), name);
  Output shape_const = Const(IndexVector(shape), "shape");
  scope.Exit();
  return NodeBuilder("Reshape", scope.op_name()).ExactName().Input(tensor).Input(shape_const).Finalize();
}

Output Shape(Output input, DataType out_type, std::string_view name) {
  return NodeBuilder("Shape", name).Input(input).Attr("out_type", out_type).Finalize();
}

Output Pack(const std::vector<Output>& values, int64_t axis, std::string_view name) {
  if (values.empty()) InvalidArgument("Pack '", name, "' needs at least one value");
  return NodeBuilder("Pack", name).Input(values).Attr("axis", axis).Finalize();
}

Output Squeeze(Output input, const std::vector<int64_t>& axis, std::string_view name) {
  return NodeBuilder("Squeeze", name).Input(input).Attr("squeeze_dims", axis).Finalize();
}

Output GatherV2(Output params, Output indices, Output axis, std::string_view name) {
  return NodeBuilder("GatherV2", name).Input(params).Input(indices).Input(axis).Finalize();
}

Output Where(Output condition, std::string_view name) {
  return NodeBuilder("Where", name).Input(condition).Finalize();
}

Output BooleanMask(Output tensor, Output mask, std::string_view name) {
  Graph& g = *tensor.graph();
  auto scope = g.NameScope(name);
  Output indices = Squeeze(Where(mask), {1});
  return GatherV2(tensor, indices, Const(int32_t{0}, "GatherV2/axis"));
}

}  // namespace ops
}  // namespace flowtrain

namespace flowtrain {
namespace {

void FillShape(InferenceContext& c) { c.set_output(0, c.InputAsShape(0)); }

double ScalarAsDouble(const Tensor& t) {
  switch (t.dtype()) {
    case DT_INT32:
      return t.scalar<int32_t>();
    case DT_INT64:
      return static_cast<double>(t.scalar<int64_t>());
    case DT_FLOAT:
      return t.scalar<float>();
    case DT_DOUBLE:
      return t.scalar<double>();
    default:
      InvalidArgument("Range: unsupported dtype ", DataTypeString(t.dtype()));
  }
}

// Range's length when start, limit and delta are constants: ceil((limit - start) / delta)
// (TF's formula, integer-exact for integer types), else unknown.
void RangeShape(InferenceContext& c) {
  for (int i = 0; i < 3; ++i) c.WithRank(c.input(i), 0);
  const Tensor* start = c.input_tensor(0);
  const Tensor* limit = c.input_tensor(1);
  const Tensor* delta = c.input_tensor(2);
  if (start == nullptr || limit == nullptr || delta == nullptr) {
    c.set_output(0, PartialTensorShape({-1}));
    return;
  }
  const double s = ScalarAsDouble(*start), l = ScalarAsDouble(*limit), d = ScalarAsDouble(*delta);
  if (d == 0) InvalidArgument("Requires delta != 0: ", d);
  if (d > 0 ? s > l : s < l) {
    InvalidArgument("Requires start ", d > 0 ? "<=" : ">=", " limit when delta ", d > 0 ? "> 0" : "< 0", ": ",
                    s, "/", l);
  }
  int64_t n = 0;
  if (start->dtype() == DT_INT32 || start->dtype() == DT_INT64) {
    // Exact in uint64 (the doubles above lose int64 precision, and limit - start can overflow).
    const auto value = [](const Tensor& t) {
      return t.dtype() == DT_INT32 ? int64_t{t.flat<int32_t>()[0]} : t.flat<int64_t>()[0];
    };
    const auto abs_diff = [](int64_t a, int64_t b) {
      return a > b ? uint64_t(a) - uint64_t(b) : uint64_t(b) - uint64_t(a);
    };
    const uint64_t span = abs_diff(value(*limit), value(*start)), step = abs_diff(value(*delta), 0);
    const uint64_t size = span / step + (span % step != 0);
    if (size > uint64_t(std::numeric_limits<int64_t>::max())) {
      InvalidArgument("Range: size of (", value(*limit), " - ", value(*start), ") / ", value(*delta), " = ",
                      size, " overflows int64");
    }
    n = static_cast<int64_t>(size);
  } else {
    const double size = std::ceil(std::abs((l - s) / d));
    if (!(size < 0x1p63)) {
      InvalidArgument("Range: size of (", l, " - ", s, ") / ", d, " = ", size, " overflows int64");
    }
    n = static_cast<int64_t>(size);
  }
  c.set_output(0, PartialTensorShape({n}));
}

void UniqueShape(InferenceContext& c) {
  c.set_output(0, PartialTensorShape({-1}));
  c.set_output(1, c.WithRank(c.input(0), 1));
}

// [max index + 1] + data's shape past its indices' rank, the first dimension unknown.
void DynamicStitchShape(InferenceContext& c) {
  const int n = c.num_inputs() / 2;
  const PartialTensorShape& indices = c.input(0);
  const PartialTensorShape& data = c.input(n);
  if (indices.unknown_rank() || data.unknown_rank()) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  DimVector dims = {-1};
  for (int d = indices.dims(); d < data.dims(); ++d) dims.push_back(data.dim_size(d));
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void ShapeNShape(InferenceContext& c) {
  for (int i = 0; i < c.num_inputs(); ++i) {
    const PartialTensorShape& in = c.input(i);
    c.set_output(i, in.unknown_rank() ? PartialTensorShape({-1}) : PartialTensorShape({in.dims()}));
  }
}

void ConcatOffsetShape(InferenceContext& c) {
  c.WithRank(c.input(0), 0);
  for (int i = 1; i < c.num_inputs(); ++i) c.set_output(i - 1, c.WithRank(c.input(i), 1));
}

void BroadcastToShape(InferenceContext& c) {
  const PartialTensorShape target = c.InputAsShape(1);
  // Checks compatibility where both are known; the result has the target's shape.
  shape_fns::BroadcastShapes(c.input(0), target);
  c.set_output(0, target);
}

}  // namespace

// The distinct values of a vector in order of first appearance, and for each element the
// position of its value among them (TF's Unique; Adagrad and friends deduplicate sparse
// gradients with it).
FT_REGISTER_OP("Unique")
    .Input("x: T")
    .Output("y: T")
    .Output("idx: out_idx")
    .Attr("T: type")
    .Attr("out_idx: {int32, int64} = DT_INT32")
    .SetShapeFn(UniqueShape);

// merged[indices[m][i], ...] = data[m][i, ...]; later inputs win where indices repeat
// (TF's DynamicStitch, which TF's gradient of Mean/Sum builds its shapes with).
FT_REGISTER_OP("DynamicStitch")
    .Input("indices: N * int32")
    .Input("data: N * T")
    .Output("merged: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .SetShapeFn(DynamicStitchShape);
// The same, TF's variant that may run in parallel (embedding_lookup stitches with it).
FT_REGISTER_OP("ParallelDynamicStitch")
    .Input("indices: N * int32")
    .Input("data: N * T")
    .Output("merged: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .SetShapeFn(DynamicStitchShape);

// outputs[p] = the slices data[i, ...] whose partitions[i] is p, in order (TF's
// DynamicPartition); partitions' shape is a prefix of data's.
FT_REGISTER_OP("DynamicPartition")
    .Input("data: T")
    .Input("partitions: int32")
    .Output("outputs: num_partitions * T")
    .Attr("num_partitions: int >= 1")
    .Attr("T: type")
    .SetShapeFn([](InferenceContext& c) {
      const PartialTensorShape& data = c.input(0);
      const PartialTensorShape& partitions = c.input(1);
      PartialTensorShape out = PartialTensorShape::Unknown();
      if (!data.unknown_rank() && !partitions.unknown_rank()) {
        std::vector<int64_t> dims = {-1};
        for (int d = partitions.dims(); d < data.dims(); ++d) dims.push_back(data.dim_size(d));
        out = PartialTensorShape(std::span<const int64_t>(dims));
      }
      for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, out);
    });

// TF's Range: [start, start + delta, ...) up to (not including) limit.
FT_REGISTER_OP("Range")
    .Input("start: Tidx")
    .Input("limit: Tidx")
    .Input("delta: Tidx")
    .Output("output: Tidx")
    .Attr("Tidx: {float, double, int32, int64} = DT_INT32")
    .SetShapeFn(RangeShape);

// The shapes of N tensors at once (TF's ShapeN, which its gradients of Conv2D use).
FT_REGISTER_OP("ShapeN")
    .Input("input: N * T")
    .Output("output: N * out_type")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(ShapeNShape);

// Where each input of a ConcatV2 along concat_dim starts (TF's ConcatOffset, which the
// gradient of ConcatV2 slices with).
FT_REGISTER_OP("ConcatOffset")
    .Input("concat_dim: int32")
    .Input("shape: N * shape_type")
    .Output("offset: N * shape_type")
    .Attr("N: int >= 2")
    .Attr("shape_type: {int32, int64} = DT_INT32")
    .SetShapeFn(ConcatOffsetShape);

FT_REGISTER_OP("Fill")
    .Input("dims: index_type")
    .Input("value: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("index_type: {int32, int64} = DT_INT32")
    .SetShapeFn(FillShape);

FT_REGISTER_OP("ZerosLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape);
FT_REGISTER_OP("OnesLike").Input("x: T").Output("y: T").Attr("T: type").SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("BroadcastTo")
    .Input("input: T")
    .Input("shape: Tidx")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn(BroadcastToShape);

namespace ops {

Output Fill(Output dims, Output value, std::string_view name) {
  return NodeBuilder("Fill", name).Input(dims).Input(value).Finalize();
}
std::pair<Output, Output> Unique(Output x, DataType out_idx, std::string_view name) {
  Operation op = NodeBuilder("Unique", name).Input(x).Attr("out_idx", out_idx).Finalize();
  return {op.output(0), op.output(1)};
}
Output DynamicStitch(const std::vector<Output>& indices, const std::vector<Output>& data,
                     std::string_view name) {
  if (indices.size() != data.size() || indices.empty()) {
    InvalidArgument("DynamicStitch '", name, "' needs as many data as indices tensors (at least one), got ",
                    indices.size(), " and ", data.size());
  }
  return NodeBuilder("DynamicStitch", name).Input(indices).Input(data).Finalize();
}
Output ParallelDynamicStitch(const std::vector<Output>& indices, const std::vector<Output>& data,
                             std::string_view name) {
  if (indices.size() != data.size() || indices.empty()) {
    InvalidArgument("ParallelDynamicStitch '", name,
                    "' needs as many data as indices tensors (at least one), got ", indices.size(), " and ",
                    data.size());
  }
  return NodeBuilder("ParallelDynamicStitch", name).Input(indices).Input(data).Finalize();
}
std::vector<Output> DynamicPartition(Output data, Output partitions, int num_partitions,
                                     std::string_view name) {
  if (num_partitions < 1)
    InvalidArgument("DynamicPartition '", name, "': num_partitions must be >= 1, got ", num_partitions);
  Operation op = NodeBuilder("DynamicPartition", name)
                     .Input(data)
                     .Input(partitions)
                     .Attr("num_partitions", int64_t{num_partitions})
                     .Finalize();
  std::vector<Output> outputs;
  for (int i = 0; i < num_partitions; ++i) outputs.push_back(op.output(i));
  return outputs;
}
Output Range(Output start, Output limit, Output delta, std::string_view name) {
  return NodeBuilder("Range", name).Input(start).Input(limit).Input(delta).Finalize();
}
std::vector<Output> ShapeN(const std::vector<Output>& inputs, DataType out_type, std::string_view name) {
  Node* node = NodeBuilder("ShapeN", name).Input(inputs).Attr("out_type", out_type).Finalize().node();
  std::vector<Output> outs;
  for (int i = 0; i < node->num_outputs(); ++i) outs.emplace_back(node, i);
  return outs;
}
std::vector<Output> ConcatOffset(Output concat_dim, const std::vector<Output>& shapes,
                                 std::string_view name) {
  Node* node = NodeBuilder("ConcatOffset", name).Input(concat_dim).Input(shapes).Finalize().node();
  std::vector<Output> outs;
  for (int i = 0; i < node->num_outputs(); ++i) outs.emplace_back(node, i);
  return outs;
}
Output ZerosLike(Output x, std::string_view name) {
  return NodeBuilder("ZerosLike", name).Input(x).Finalize();
}
Output OnesLike(Output x, std::string_view name) { return NodeBuilder("OnesLike", name).Input(x).Finalize(); }
Output BroadcastTo(Output input, Output shape, std::string_view name) {
  return NodeBuilder("BroadcastTo", name).Input(input).Input(shape).Finalize();
}

}  // namespace ops
}  // namespace flowtrain

// ---- StopGradient, Size, Rank, ExpandDims, Transpose, InvertPermutation, Tile, OneHot,
// ---- Select, SelectV2, UnsortedSegmentSum ----

namespace flowtrain {
namespace {

std::optional<std::vector<int64_t>> ConstIntInput(InferenceContext& c, int i) {
  const Tensor* t = c.input_tensor(i);
  if (t == nullptr) return std::nullopt;
  std::vector<int64_t> v(t->NumElements());
  for (int64_t k = 0; k < t->NumElements(); ++k) {
    v[k] = t->dtype() == DT_INT32   ? t->flat<int32_t>()[k]
           : t->dtype() == DT_UINT8 ? t->flat<uint8_t>()[k]
                                    : t->flat<int64_t>()[k];
  }
  return v;
}

PartialTensorShape ShapeOf(const DimVector& dims) {
  return PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
}

void ExpandDimsShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const auto dim = ConstIntInput(c, 1);
  if (dim && dim->size() != 1) {
    InvalidArgument("'dim' input must be a tensor with a single value, got ", dim->size(), " values");
  }
  if (in.unknown_rank() || !dim) {
    c.set_output(0, in.unknown_rank() ? PartialTensorShape::Unknown()
                                      : PartialTensorShape::UnknownOfRank(in.dims() + 1));
    return;
  }
  int64_t d = (*dim)[0];
  if (d < -in.dims() - 1 || d > in.dims()) {
    InvalidArgument("Tried to expand dim index ", d, " for tensor with ", in.dims(), " dimensions.");
  }
  if (d < 0) d += in.dims() + 1;
  DimVector dims(in.dim_sizes());
  dims.insert(dims.begin() + d, 1);
  c.set_output(0, ShapeOf(dims));
}

// Checks that `perm` is a permutation of [0, rank); TF's kernel messages.
void CheckPermutation(const std::vector<int64_t>& perm, int rank) {
  if (static_cast<int>(perm.size()) != rank) {
    InvalidArgument("transpose expects a vector of size ", rank, ". But input(1) is a vector of size ",
                    perm.size());
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank) InvalidArgument(p, " is out of range [0 .. ", rank, ")");
    if (seen[p]) InvalidArgument(p, " is duplicated in the input.");
    seen[p] = true;
  }
}

void TransposeShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const auto perm = ConstIntInput(c, 1);
  if (in.unknown_rank()) {
    const PartialTensorShape& perm_shape = c.input(1);
    c.set_output(0, perm && perm_shape.dims() == 1
                        ? PartialTensorShape::UnknownOfRank(static_cast<int>(perm->size()))
                        : PartialTensorShape::Unknown());
    return;
  }
  if (!perm) {
    c.set_output(0, PartialTensorShape::UnknownOfRank(in.dims()));
    return;
  }
  CheckPermutation(*perm, in.dims());
  DimVector dims;
  for (int64_t p : *perm) dims.push_back(in.dim_size(static_cast<int>(p)));
  c.set_output(0, ShapeOf(dims));
}

void TileShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const auto multiples = ConstIntInput(c, 1);
  if (in.unknown_rank()) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  if (!multiples) {
    c.set_output(0, PartialTensorShape::UnknownOfRank(in.dims()));
    return;
  }
  if (static_cast<int>(multiples->size()) != in.dims()) {
    InvalidArgument("Expected multiples argument to be a vector of length ", in.dims(), " but got length ",
                    multiples->size());
  }
  DimVector dims;
  for (int d = 0; d < in.dims(); ++d) {
    const int64_t m = (*multiples)[d];
    if (m < 0) InvalidArgument("Expected multiples[", d, "] >= 0, but got ", m);
    dims.push_back(in.dim_size(d) < 0
                       ? (m == 0 ? 0 : -1)
                       : CheckedMultiplySizes(in.dim_size(d), m, "Tile",
                                              StrCat("input dimension ", d, " times multiples[", d, "]")));
  }
  if (std::find(dims.begin(), dims.end(), -1) == dims.end()) CheckedNumElements(dims, "Tile");
  c.set_output(0, ShapeOf(dims));
}

void OneHotShape(InferenceContext& c) {
  const PartialTensorShape& indices = c.input(0);
  const int64_t axis = c.GetAttr<int64_t>("axis");
  if (axis < -1)
    InvalidArgument("Expected axis to be -1 or between [0, rank(indices)]. But received: ", axis);
  const auto depth = ConstIntInput(c, 1);
  if (depth && (*depth)[0] < 0) InvalidArgument("depth must be non-negative, got: ", (*depth)[0]);
  c.WithRank(c.input(2), 0);
  c.WithRank(c.input(3), 0);
  if (indices.unknown_rank()) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  if (axis > indices.dims()) {
    InvalidArgument("Expected axis to be -1 or between [0, ", indices.dims(), "]. But received: ", axis);
  }
  DimVector dims(indices.dim_sizes());
  dims.insert(axis == -1 ? dims.end() : dims.begin() + axis, depth ? (*depth)[0] : -1);
  c.set_output(0, ShapeOf(dims));
}

// TF1 Select: `condition` has the shape of t and e, or is a scalar, or a vector over their
// first dimension.
void SelectShape(InferenceContext& c) {
  const PartialTensorShape data = c.Merge(c.input(1), c.input(2));
  const PartialTensorShape& cond = c.input(0);
  if (!cond.unknown_rank() && !data.unknown_rank() && cond.dims() != 0) {
    if (cond.dims() == 1 && data.dims() > 1) {
      c.MergeDims(cond.dim_size(0), data.dim_size(0));
    } else {
      c.Merge(cond, data);
    }
  }
  c.set_output(0, data);
}

void SelectV2Shape(InferenceContext& c) {
  c.set_output(0, shape_fns::BroadcastShapes(c.input(0), shape_fns::BroadcastShapes(c.input(1), c.input(2))));
}

void UnsortedSegmentSumShape(InferenceContext& c) {
  const PartialTensorShape& data = c.input(0);
  const PartialTensorShape& ids = c.input(1);
  const auto num = ConstIntInput(c, 2);
  c.WithRank(c.input(2), 0);
  if (num && (*num)[0] < 0) InvalidArgument("num_segments must be non-negative, got ", (*num)[0]);
  if (data.unknown_rank() || ids.unknown_rank()) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  bool prefix = ids.dims() <= data.dims();
  for (int d = 0; prefix && d < ids.dims(); ++d) {
    prefix = ids.dim_size(d) < 0 || data.dim_size(d) < 0 || ids.dim_size(d) == data.dim_size(d);
  }
  if (!prefix) {
    InvalidArgument("data.shape = ", data.DebugString(),
                    " does not start with segment_ids.shape = ", ids.DebugString());
  }
  DimVector dims{num ? (*num)[0] : -1};
  for (int d = ids.dims(); d < data.dims(); ++d) dims.push_back(data.dim_size(d));
  c.set_output(0, ShapeOf(dims));
}

}  // namespace

FT_REGISTER_OP("StopGradient")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("Size")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("Rank")
    .Input("input: T")
    .Output("output: int32")
    .Attr("T: type")
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("ExpandDims")
    .Input("input: T")
    .Input("dim: Tdim")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tdim: {int32, int64} = DT_INT32")
    .SetShapeFn(ExpandDimsShape);

FT_REGISTER_OP("Transpose")
    .Input("x: T")
    .Input("perm: Tperm")
    .Output("y: T")
    .Attr("T: type")
    .Attr("Tperm: {int32, int64} = DT_INT32")
    .SetShapeFn(TransposeShape);

FT_REGISTER_OP("InvertPermutation")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext& c) { c.set_output(0, c.WithRank(c.input(0), 1)); });

FT_REGISTER_OP("Tile")
    .Input("input: T")
    .Input("multiples: Tmultiples")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tmultiples: {int32, int64} = DT_INT32")
    .SetShapeFn(TileShape);

FT_REGISTER_OP("OneHot")
    .Input("indices: TI")
    .Input("depth: int32")
    .Input("on_value: T")
    .Input("off_value: T")
    .Output("output: T")
    .Attr("axis: int = -1")
    .Attr("T: type")
    .Attr("TI: {uint8, int32, int64} = DT_INT64")
    .SetShapeFn(OneHotShape);

FT_REGISTER_OP("Select")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(SelectShape);

FT_REGISTER_OP("ReverseSequence")
    .Input("input: T")
    .Input("seq_lengths: Tlen")
    .Output("output: T")
    .Attr("seq_dim: int")
    .Attr("batch_dim: int = 0")
    .Attr("T: type")
    .Attr("Tlen: {int32, int64} = DT_INT64")
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("SelectV2")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(SelectV2Shape);

FT_REGISTER_OP("UnsortedSegmentSum")
    .Input("data: T")
    .Input("segment_ids: Tindices")
    .Input("num_segments: Tnumsegments")
    .Output("output: T")
    .Attr("T: {bfloat16, half, float, double, uint8, int8, int16, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .Attr("Tnumsegments: {int32, int64} = DT_INT32")
    .SetShapeFn(UnsortedSegmentSumShape);

namespace ops {

Output StopGradient(Output input, std::string_view name) {
  return NodeBuilder("StopGradient", name).Input(input).Finalize();
}

Output Size(Output input, DataType out_type, std::string_view name) {
  return NodeBuilder("Size", name).Input(input).Attr("out_type", out_type).Finalize();
}

Output Rank(Output input, std::string_view name) { return NodeBuilder("Rank", name).Input(input).Finalize(); }

Output ExpandDims(Output input, Output axis, std::string_view name) {
  return NodeBuilder("ExpandDims", name).Input(input).Input(axis).Finalize();
}

Output ExpandDims(Output input, int64_t axis, std::string_view name) {
  OpNameScope scope(*input.graph(), name);
  Output a = Const(static_cast<int32_t>(axis), "dim");
  scope.Exit();
  return NodeBuilder("ExpandDims", scope.op_name()).ExactName().Input(input).Input(a).Finalize();
}

Output Transpose(Output x, Output perm, std::string_view name) {
  return NodeBuilder("Transpose", name).Input(x).Input(perm).Finalize();
}

Output Transpose(Output x, const std::vector<int64_t>& perm, std::string_view name) {
  std::vector<int32_t> p(perm.begin(), perm.end());
  if (perm.empty()) {
    // TF's default: reverse the dimensions.
    if (x.shape().unknown_rank()) InvalidArgument("transpose '", name, "' without perm needs a known rank");
    for (int d = x.shape().dims() - 1; d >= 0; --d) p.push_back(d);
  }
  OpNameScope scope(*x.graph(), name);
  Output perm_const = Const(Tensor::FromVector<int32_t>(p), "perm");
  scope.Exit();
  return NodeBuilder("Transpose", scope.op_name()).ExactName().Input(x).Input(perm_const).Finalize();
}

Output InvertPermutation(Output x, std::string_view name) {
  return NodeBuilder("InvertPermutation", name).Input(x).Finalize();
}

Output Tile(Output input, Output multiples, std::string_view name) {
  return NodeBuilder("Tile", name).Input(input).Input(multiples).Finalize();
}

Output Tile(Output input, const std::vector<int64_t>& multiples, std::string_view name) {
  OpNameScope scope(*input.graph(), name);
  Output m = Const(IndexVector(multiples), "multiples");
  scope.Exit();
  return NodeBuilder("Tile", scope.op_name()).ExactName().Input(input).Input(m).Finalize();
}

Output OneHot(Output indices, Output depth, Output on_value, Output off_value, int64_t axis,
              std::string_view name) {
  return NodeBuilder("OneHot", name)
      .Input(indices)
      .Input(depth)
      .Input(on_value)
      .Input(off_value)
      .Attr("axis", axis)
      .Finalize();
}

Output OneHot(Output indices, int64_t depth, DataType dtype, int64_t axis, std::string_view name) {
  OpNameScope scope(*indices.graph(), name);
  Output d = Const(static_cast<int32_t>(depth), "depth");
  Output on = Cast(Const(1.0, "on_value"), dtype, "on_value/Cast");
  Output off = Cast(Const(0.0, "off_value"), dtype, "off_value/Cast");
  scope.Exit();
  return NodeBuilder("OneHot", scope.op_name())
      .ExactName()
      .Input(indices)
      .Input(d)
      .Input(on)
      .Input(off)
      .Attr("axis", axis)
      .Finalize();
}

Output Select(Output condition, Output x, Output y, std::string_view name) {
  return NodeBuilder("Select", name).Input(condition).Input(x).Input(y).Finalize();
}

Output SelectV2(Output condition, Output x, Output y, std::string_view name) {
  return NodeBuilder("SelectV2", name).Input(condition).Input(x).Input(y).Finalize();
}

Output UnsortedSegmentSum(Output data, Output segment_ids, Output num_segments, std::string_view name) {
  return NodeBuilder("UnsortedSegmentSum", name)
      .Input(data)
      .Input(segment_ids)
      .Input(num_segments)
      .Finalize();
}

Output Gather(Output params, Output indices, int64_t axis, std::string_view name) {
  OpNameScope scope(*params.graph(), name);
  Output a = Const(static_cast<int32_t>(axis), "axis");
  scope.Exit();
  return NodeBuilder("GatherV2", scope.op_name())
      .ExactName()
      .Input(params)
      .Input(indices)
      .Input(a)
      .Finalize();
}

}  // namespace ops
}  // namespace flowtrain
