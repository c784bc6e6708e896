#include "flowtrain/ops/math_ops.h"

#include "flowtrain/ops/array_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {
namespace {

void MatMulShape(InferenceContext& c) {
  const PartialTensorShape a = c.WithRank(c.input(0), 2);
  const PartialTensorShape b = c.WithRank(c.input(1), 2);
  const bool ta = c.GetAttr<bool>("transpose_a");
  const bool tb = c.GetAttr<bool>("transpose_b");
  const int64_t m = a.dim_size(ta ? 1 : 0);
  const int64_t k_a = a.dim_size(ta ? 0 : 1);
  const int64_t k_b = b.dim_size(tb ? 1 : 0);
  const int64_t n = b.dim_size(tb ? 0 : 1);
  c.MergeDims(k_a, k_b);
  c.set_output(0, PartialTensorShape({m, n}));
}

Output Binary(std::string_view op, Output x, Output y, std::string_view name) {
  return NodeBuilder(op, name).Input(x).Input(y).Finalize();
}

}  // namespace

#define FT_BINARY_CWISE_OP(Name, Types) \
  FT_REGISTER_OP(Name)                  \
      .Input("x: T")                    \
      .Input("y: T")                    \
      .Output("z: T")                   \
      .Attr("T: " Types)                \
      .SetShapeFn(shape_fns::BroadcastBinaryOpShape)

#define FT_NUMBER_TYPES "{bfloat16, half, float, double, uint8, int8, int16, int32, int64}"
FT_BINARY_CWISE_OP("Add", "{bfloat16, half, float, double, uint8, int8, int16, int32, int64, string}");
FT_BINARY_CWISE_OP("AddV2", FT_NUMBER_TYPES).SetIsCommutative();
FT_BINARY_CWISE_OP("Sub", FT_NUMBER_TYPES);
FT_BINARY_CWISE_OP("Mul", FT_NUMBER_TYPES).SetIsCommutative();
FT_BINARY_CWISE_OP("RealDiv", FT_NUMBER_TYPES);
FT_BINARY_CWISE_OP("FloorDiv", FT_NUMBER_TYPES);
// TF1's Div: RealDiv for floats, division rounding toward zero for integers (tf.compat.v1.div).
FT_BINARY_CWISE_OP("Div", FT_NUMBER_TYPES);
// Division rounding toward zero, for floats too (trunc(x / y)).
FT_BINARY_CWISE_OP("TruncateDiv", FT_NUMBER_TYPES);
// The remainder of TruncateDiv (C's % and fmod: its sign is x's); Mod is the older name.
FT_BINARY_CWISE_OP("TruncateMod", "{bfloat16, half, float, double, int32, int64}");
FT_BINARY_CWISE_OP("Mod", "{bfloat16, half, float, double, int32, int64}");
FT_BINARY_CWISE_OP("Maximum", "{bfloat16, half, float, double, int32, int64}");
FT_BINARY_CWISE_OP("Minimum", "{bfloat16, half, float, double, int32, int64}");
// TF's FloorMod: the remainder of floor division, x - floor(x / y) * y (its sign is y's).
FT_BINARY_CWISE_OP("FloorMod", "{bfloat16, half, float, double, uint8, int8, int16, int32, int64}");
// TF's DivNoNan: x / y, and 0 where y is 0.
FT_BINARY_CWISE_OP("DivNoNan", "{bfloat16, half, float, double}");

FT_REGISTER_OP("Neg")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {bfloat16, half, float, double, int8, int16, int32, int64}")
    .SetShapeFn(shape_fns::UnchangedShape);
#undef FT_BINARY_CWISE_OP

FT_REGISTER_OP("MatMul")
    .Input("a: T")
    .Input("b: T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("T: {bfloat16, half, float, double, int32, int64}")
    // TF >= 2.16 marks the MatMuls of a gradient (hints for its grappler; no effect on values).
    .Attr("grad_a: bool = false")
    .Attr("grad_b: bool = false")
    .SetShapeFn(MatMulShape);

FT_REGISTER_OP("LogicalNot").Input("x: bool").Output("y: bool").SetShapeFn(shape_fns::UnchangedShape);

namespace ops {

Output Add(Output x, Output y, std::string_view name) { return Binary("Add", x, y, name); }
Output AddV2(Output x, Output y, std::string_view name) { return Binary("AddV2", x, y, name); }
Output Sub(Output x, Output y, std::string_view name) { return Binary("Sub", x, y, name); }
Output Mul(Output x, Output y, std::string_view name) { return Binary("Mul", x, y, name); }
Output RealDiv(Output x, Output y, std::string_view name) { return Binary("RealDiv", x, y, name); }
Output FloorDiv(Output x, Output y, std::string_view name) { return Binary("FloorDiv", x, y, name); }
Output Maximum(Output x, Output y, std::string_view name) { return Binary("Maximum", x, y, name); }
Output Minimum(Output x, Output y, std::string_view name) { return Binary("Minimum", x, y, name); }
Output FloorMod(Output x, Output y, std::string_view name) { return Binary("FloorMod", x, y, name); }
Output Div(Output x, Output y, std::string_view name) { return Binary("Div", x, y, name); }
Output TruncateDiv(Output x, Output y, std::string_view name) { return Binary("TruncateDiv", x, y, name); }
Output TruncateMod(Output x, Output y, std::string_view name) { return Binary("TruncateMod", x, y, name); }
Output Mod(Output x, Output y, std::string_view name) { return Binary("Mod", x, y, name); }
Output DivNoNan(Output x, Output y, std::string_view name) { return Binary("DivNoNan", x, y, name); }
Output TanhGrad(Output y, Output dy, std::string_view name) { return Binary("TanhGrad", y, dy, name); }
Output SigmoidGrad(Output y, Output dy, std::string_view name) { return Binary("SigmoidGrad", y, dy, name); }
Output Neg(Output x, std::string_view name) { return NodeBuilder("Neg", name).Input(x).Finalize(); }

Output MatMul(Output a, Output b, bool transpose_a, bool transpose_b, std::string_view name) {
  return NodeBuilder("MatMul", name)
      .Input(a)
      .Input(b)
      .Attr("transpose_a", transpose_a)
      .Attr("transpose_b", transpose_b)
      .Finalize();
}

Output LogicalNot(Output x, std::string_view name) {
  return NodeBuilder("LogicalNot", name).Input(x).Finalize();
}

}  // namespace ops

Output operator+(const Output& x, const Output& y) { return ops::Add(x, y, "add"); }
Output operator-(const Output& x, const Output& y) { return ops::Sub(x, y, "sub"); }
Output operator*(const Output& x, const Output& y) { return ops::Mul(x, y, "mul"); }
Output operator/(const Output& x, const Output& y) { return ops::RealDiv(x, y, "truediv"); }
Output operator-(const Output& x) { return ops::Neg(x, "Neg"); }

}  // namespace flowtrain

// ---- AddN, Cast, reductions, BroadcastGradientArgs ----

namespace flowtrain {
namespace {

void AddNShape(InferenceContext& c) {
  PartialTensorShape merged = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) merged = c.Merge(merged, c.input(i));
  c.set_output(0, merged);
}

void ReductionShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const bool keep_dims = c.GetAttr<bool>("keep_dims");
  const Tensor* axes = c.input_tensor(1);
  if (in.unknown_rank() || axes == nullptr) {
    c.set_output(0, keep_dims && !in.unknown_rank() ? PartialTensorShape::UnknownOfRank(in.dims())
                                                    : PartialTensorShape::Unknown());
    return;
  }
  std::vector<bool> reduced(in.dims(), false);
  for (int64_t i = 0; i < axes->NumElements(); ++i) {
    int64_t a = axes->dtype() == DT_INT32 ? axes->flat<int32_t>()[i] : axes->flat<int64_t>()[i];
    if (a < -in.dims() || a >= in.dims()) {
      InvalidArgument("Invalid reduction dimension ", a, " for input with ", in.dims(), " dimensions.");
    }
    reduced[a < 0 ? a + in.dims() : a] = true;
  }
  DimVector dims;
  for (int d = 0; d < in.dims(); ++d) {
    if (!reduced[d]) {
      dims.push_back(in.dim_size(d));
    } else if (keep_dims) {
      dims.push_back(1);
    }
  }
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void BroadcastGradientArgsShape(InferenceContext& c) {
  c.set_output(0, PartialTensorShape({-1}));
  c.set_output(1, PartialTensorShape({-1}));
}

Output Reduce(std::string_view op, Output input, Output axes, bool keep_dims, std::string_view name) {
  return NodeBuilder(op, name).Input(input).Input(axes).Attr("keep_dims", keep_dims).Finalize();
}

Output ReduceConst(std::string_view op, Output input, std::vector<int64_t> axes, bool keep_dims,
                   std::string_view name) {
  OpNameScope scope(*input.graph(), name);
  Output axes_tensor;
  if (axes.empty()) {
    // axis=None: every dimension; a constant when the rank is known, else Range(Rank).
    if (input.shape().unknown_rank()) {
      InvalidArgument(op, " over all axes of ", input.name(), " needs a known rank");
    }
    for (int d = 0; d < input.shape().dims(); ++d) axes.push_back(d);
  }
  std::vector<int32_t> axes32(axes.begin(), axes.end());
  axes_tensor = ops::Const(Tensor::FromVector<int32_t>(axes32), "Const");
  scope.Exit();
  return NodeBuilder(op, scope.op_name())
      .ExactName()
      .Input(input)
      .Input(axes_tensor)
      .Attr("keep_dims", keep_dims)
      .Finalize();
}

}  // namespace

FT_REGISTER_OP("AddN")
    .Input("inputs: N * T")
    .Output("sum: T")
    .Attr("N: int >= 1")
    .Attr("T: {bfloat16, half, float, double, uint8, int8, int16, int32, int64}")
    .SetIsCommutative()
    .SetIsAggregate()
    .SetShapeFn(AddNShape);

FT_REGISTER_OP("Cast")
    .Input("x: SrcT")
    .Output("y: DstT")
    .Attr("SrcT: type")
    .Attr("DstT: type")
    .Attr("Truncate: bool = false")
    .SetShapeFn(shape_fns::UnchangedShape);

#define FT_REDUCTION_OP(Name)                                                       \
  FT_REGISTER_OP(Name)                                                              \
      .Input("input: T")                                                            \
      .Input("reduction_indices: Tidx")                                             \
      .Output("output: T")                                                          \
      .Attr("keep_dims: bool = false")                                              \
      .Attr("T: {bfloat16, half, float, double, uint8, int8, int16, int32, int64}") \
      .Attr("Tidx: {int32, int64} = DT_INT32")                                      \
      .SetShapeFn(ReductionShape)
FT_REDUCTION_OP("Sum");
FT_REDUCTION_OP("Mean");
FT_REDUCTION_OP("Max");
FT_REDUCTION_OP("Min");
FT_REDUCTION_OP("Prod");
#undef FT_REDUCTION_OP

FT_REGISTER_OP("BroadcastGradientArgs")
    .Input("s0: T")
    .Input("s1: T")
    .Output("r0: T")
    .Output("r1: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn(BroadcastGradientArgsShape);

namespace ops {

Output AddN(const std::vector<Output>& inputs, std::string_view name) {
  if (inputs.empty()) InvalidArgument("AddN '", name, "' needs at least one input");
  return NodeBuilder("AddN", name).Input(inputs).Finalize();
}

Output Cast(Output x, DataType dtype, std::string_view name) {
  return NodeBuilder("Cast", name).Input(x).Attr("DstT", dtype).Finalize();
}

Output Sum(Output input, Output axes, bool keep_dims, std::string_view name) {
  return Reduce("Sum", input, axes, keep_dims, name);
}
Output Mean(Output input, Output axes, bool keep_dims, std::string_view name) {
  return Reduce("Mean", input, axes, keep_dims, name);
}
Output Max(Output input, Output axes, bool keep_dims, std::string_view name) {
  return Reduce("Max", input, axes, keep_dims, name);
}
Output Min(Output input, Output axes, bool keep_dims, std::string_view name) {
  return Reduce("Min", input, axes, keep_dims, name);
}
Output Prod(Output input, Output axes, bool keep_dims, std::string_view name) {
  return Reduce("Prod", input, axes, keep_dims, name);
}
Output ReduceSum(Output input, const std::vector<int64_t>& axes, bool keep_dims, std::string_view name) {
  return ReduceConst("Sum", input, axes, keep_dims, name);
}
Output ReduceMean(Output input, const std::vector<int64_t>& axes, bool keep_dims, std::string_view name) {
  return ReduceConst("Mean", input, axes, keep_dims, name);
}
Output ReduceMax(Output input, const std::vector<int64_t>& axes, bool keep_dims, std::string_view name) {
  return ReduceConst("Max", input, axes, keep_dims, name);
}
Output ReduceMin(Output input, const std::vector<int64_t>& axes, bool keep_dims, std::string_view name) {
  return ReduceConst("Min", input, axes, keep_dims, name);
}
Output ReduceProd(Output input, const std::vector<int64_t>& axes, bool keep_dims, std::string_view name) {
  return ReduceConst("Prod", input, axes, keep_dims, name);
}

Operation BroadcastGradientArgs(Output s0, Output s1, std::string_view name) {
  return NodeBuilder("BroadcastGradientArgs", name).Input(s0).Input(s1).Finalize();
}

}  // namespace ops
}  // namespace flowtrain

// ---- Unary math, comparisons, logical ops, Pow, SquaredDifference, ArgMax/ArgMin,
// ---- BatchMatMul, Cumsum/Cumprod ----

namespace flowtrain {
namespace {

void ArgMinMaxShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const Tensor* axis = c.input_tensor(1);
  c.WithRank(c.input(1), 0);
  if (in.unknown_rank() || axis == nullptr) {
    c.set_output(0, in.unknown_rank() || in.dims() == 0 ? PartialTensorShape::Unknown()
                                                        : PartialTensorShape::UnknownOfRank(in.dims() - 1));
    return;
  }
  int64_t a = axis->dtype() == DT_INT32 ? axis->scalar<int32_t>() : axis->scalar<int64_t>();
  if (a < -in.dims() || a >= in.dims()) {
    InvalidArgument("Expected dimension in the range [", -in.dims(), ", ", in.dims(), "), but got ", a);
  }
  if (a < 0) a += in.dims();
  if (in.dim_size(static_cast<int>(a)) == 0) {
    InvalidArgument("Reduction axis ", a, " is empty in shape ", in.DebugString());
  }
  DimVector dims(in.dim_sizes());
  dims.erase(dims.begin() + a);
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

// BatchMatMul (V1: equal batch dimensions) and V2 (broadcast batch dimensions).
void BatchMatMulShape(InferenceContext& c, bool broadcast) {
  const PartialTensorShape x = c.WithRankAtLeast(c.input(0), 2);
  const PartialTensorShape y = c.WithRankAtLeast(c.input(1), 2);
  if (x.unknown_rank() || y.unknown_rank()) {
    c.set_output(0, PartialTensorShape::Unknown());
    return;
  }
  const bool adj_x = c.GetAttr<bool>("adj_x");
  const bool adj_y = c.GetAttr<bool>("adj_y");
  const int rx = x.dims(), ry = y.dims();
  const int64_t m = x.dim_size(adj_x ? rx - 1 : rx - 2);
  const int64_t k_x = x.dim_size(adj_x ? rx - 2 : rx - 1);
  const int64_t k_y = y.dim_size(adj_y ? ry - 1 : ry - 2);
  const int64_t n = y.dim_size(adj_y ? ry - 2 : ry - 1);
  c.MergeDims(k_x, k_y);
  DimVector bx(x.dim_sizes().begin(), x.dim_sizes().end() - 2);
  DimVector by(y.dim_sizes().begin(), y.dim_sizes().end() - 2);
  PartialTensorShape batch = PartialTensorShape::Unknown();
  if (broadcast) {
    batch = shape_fns::BroadcastShapes(PartialTensorShape(std::span<const int64_t>(bx.data(), bx.size())),
                                       PartialTensorShape(std::span<const int64_t>(by.data(), by.size())));
  } else {
    batch = c.Merge(PartialTensorShape(std::span<const int64_t>(bx.data(), bx.size())),
                    PartialTensorShape(std::span<const int64_t>(by.data(), by.size())));
  }
  DimVector dims(batch.dim_sizes());
  dims.push_back(m);
  dims.push_back(n);
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void ScanShape(InferenceContext& c) {
  c.WithRank(c.input(1), 0);
  const PartialTensorShape& in = c.input(0);
  if (const Tensor* axis = c.input_tensor(1); axis != nullptr && !in.unknown_rank()) {
    const int64_t a = axis->dtype() == DT_INT32 ? axis->scalar<int32_t>() : axis->scalar<int64_t>();
    if (a < -in.dims() || a >= in.dims()) {
      InvalidArgument("axis must be in range [", -in.dims(), ", ", in.dims(), "), got ", a);
    }
  }
  c.set_output(0, in);
}

}  // namespace

#define FT_UNARY_CWISE_OP(Name, Types) \
  FT_REGISTER_OP(Name).Input("x: T").Output("y: T").Attr("T: " Types).SetShapeFn(shape_fns::UnchangedShape)
#define FT_FLOAT_TYPES "{bfloat16, half, float, double}"
#define FT_SIGNED_TYPES "{bfloat16, half, float, double, int8, int16, int32, int64}"
FT_UNARY_CWISE_OP("Abs", FT_SIGNED_TYPES);
FT_UNARY_CWISE_OP("Square", FT_SIGNED_TYPES);
FT_UNARY_CWISE_OP("Sign", FT_SIGNED_TYPES);
FT_UNARY_CWISE_OP("Sqrt", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Rsqrt", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Exp", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Log", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Log1p", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Tanh", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Cos", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Sin", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Sigmoid", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Reciprocal", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Floor", FT_FLOAT_TYPES);
FT_UNARY_CWISE_OP("Ceil", FT_FLOAT_TYPES);
// The gradients of Tanh and Sigmoid given their output y: dy * (1 - y^2) and dy * y * (1 - y).
FT_REGISTER_OP("TanhGrad")
    .Input("y: T")
    .Input("dy: T")
    .Output("z: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .SetShapeFn(shape_fns::UnchangedShape);
FT_REGISTER_OP("SigmoidGrad")
    .Input("y: T")
    .Input("dy: T")
    .Output("z: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .SetShapeFn(shape_fns::UnchangedShape);
FT_REGISTER_OP("Softplus")
    .Input("features: T")
    .Output("activations: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .SetShapeFn(shape_fns::UnchangedShape);
#undef FT_UNARY_CWISE_OP

#define FT_BINARY_OP(Name, Types) \
  FT_REGISTER_OP(Name)            \
      .Input("x: T")              \
      .Input("y: T")              \
      .Output("z: T")             \
      .Attr("T: " Types)          \
      .SetShapeFn(shape_fns::BroadcastBinaryOpShape)
FT_BINARY_OP("Pow", "{bfloat16, half, float, double, int32, int64}");
FT_BINARY_OP("SquaredDifference", "{bfloat16, half, float, double, int32, int64}").SetIsCommutative();
#undef FT_BINARY_OP

#define FT_COMPARISON_OP(Name, Types) \
  FT_REGISTER_OP(Name)                \
      .Input("x: T")                  \
      .Input("y: T")                  \
      .Output("z: bool")              \
      .Attr("T: " Types)              \
      .SetShapeFn(shape_fns::BroadcastBinaryOpShape)
#define FT_REAL_TYPES "{bfloat16, half, float, double, uint8, int8, int16, int32, int64}"
FT_COMPARISON_OP("Less", FT_REAL_TYPES);
FT_COMPARISON_OP("LessEqual", FT_REAL_TYPES);
FT_COMPARISON_OP("Greater", FT_REAL_TYPES);
FT_COMPARISON_OP("GreaterEqual", FT_REAL_TYPES);
// incompatible_shape_error=false (TF >= 1.14) would make unbroadcastable shapes compare unequal
// instead of failing; flowtrain accepts the attr and always fails on them, as with the default.
FT_COMPARISON_OP("Equal", "{bfloat16, half, float, double, uint8, int8, int16, int32, int64, bool, string}")
    .Attr("incompatible_shape_error: bool = true")
    .SetIsCommutative();
FT_COMPARISON_OP("NotEqual",
                 "{bfloat16, half, float, double, uint8, int8, int16, int32, int64, bool, string}")
    .Attr("incompatible_shape_error: bool = true")
    .SetIsCommutative();
#undef FT_COMPARISON_OP

FT_REGISTER_OP("LogicalAnd")
    .Input("x: bool")
    .Input("y: bool")
    .Output("z: bool")
    .SetIsCommutative()
    .SetShapeFn(shape_fns::BroadcastBinaryOpShape);
FT_REGISTER_OP("LogicalOr")
    .Input("x: bool")
    .Input("y: bool")
    .Output("z: bool")
    .SetIsCommutative()
    .SetShapeFn(shape_fns::BroadcastBinaryOpShape);

#define FT_ARG_OP(Name)                               \
  FT_REGISTER_OP(Name)                                \
      .Input("input: T")                              \
      .Input("dimension: Tidx")                       \
      .Output("output: output_type")                  \
      .Attr("T: " FT_REAL_TYPES)                      \
      .Attr("Tidx: {int32, int64} = DT_INT32")        \
      .Attr("output_type: {int32, int64} = DT_INT64") \
      .SetShapeFn(ArgMinMaxShape)
FT_ARG_OP("ArgMax");
FT_ARG_OP("ArgMin");
#undef FT_ARG_OP

FT_REGISTER_OP("BatchMatMul")
    .Input("x: T")
    .Input("y: T")
    .Output("output: T")
    .Attr("T: {bfloat16, half, float, double, int32, int64}")
    .Attr("adj_x: bool = false")
    .Attr("adj_y: bool = false")
    .SetShapeFn([](InferenceContext& c) { BatchMatMulShape(c, /*broadcast=*/false); });
FT_REGISTER_OP("BatchMatMulV2")
    .Input("x: T")
    .Input("y: T")
    .Output("output: T")
    .Attr("T: {bfloat16, half, float, double, int32, int64}")
    .Attr("adj_x: bool = false")
    .Attr("adj_y: bool = false")
    .Attr("grad_x: bool = false")  // TF 2.12+, as MatMul's grad_a and grad_b
    .Attr("grad_y: bool = false")
    .SetShapeFn([](InferenceContext& c) { BatchMatMulShape(c, /*broadcast=*/true); });

#define FT_SCAN_OP(Name)                       \
  FT_REGISTER_OP(Name)                         \
      .Input("x: T")                           \
      .Input("axis: Tidx")                     \
      .Output("out: T")                        \
      .Attr("exclusive: bool = false")         \
      .Attr("reverse: bool = false")           \
      .Attr("T: " FT_REAL_TYPES)               \
      .Attr("Tidx: {int32, int64} = DT_INT32") \
      .SetShapeFn(ScanShape)
FT_SCAN_OP("Cumsum");
FT_SCAN_OP("Cumprod");
#undef FT_SCAN_OP
#undef FT_REAL_TYPES
#undef FT_FLOAT_TYPES
#undef FT_SIGNED_TYPES

namespace ops {
namespace {
Output Unary(std::string_view op, Output x, std::string_view name) {
  return NodeBuilder(op, name).Input(x).Finalize();
}
}  // namespace

Output Abs(Output x, std::string_view name) { return Unary("Abs", x, name); }
Output Square(Output x, std::string_view name) { return Unary("Square", x, name); }
Output Sign(Output x, std::string_view name) { return Unary("Sign", x, name); }
Output Sqrt(Output x, std::string_view name) { return Unary("Sqrt", x, name); }
Output Rsqrt(Output x, std::string_view name) { return Unary("Rsqrt", x, name); }
Output Exp(Output x, std::string_view name) { return Unary("Exp", x, name); }
Output Log(Output x, std::string_view name) { return Unary("Log", x, name); }
Output Log1p(Output x, std::string_view name) { return Unary("Log1p", x, name); }
Output Tanh(Output x, std::string_view name) { return Unary("Tanh", x, name); }
Output Floor(Output x, std::string_view name) { return Unary("Floor", x, name); }
Output Ceil(Output x, std::string_view name) { return Unary("Ceil", x, name); }
Output Cos(Output x, std::string_view name) { return Unary("Cos", x, name); }
Output Sin(Output x, std::string_view name) { return Unary("Sin", x, name); }
Output Sigmoid(Output x, std::string_view name) { return Unary("Sigmoid", x, name); }
Output Softplus(Output x, std::string_view name) { return Unary("Softplus", x, name); }
Output Reciprocal(Output x, std::string_view name) { return Unary("Reciprocal", x, name); }

Output Pow(Output x, Output y, std::string_view name) { return Binary("Pow", x, y, name); }
Output SquaredDifference(Output x, Output y, std::string_view name) {
  return Binary("SquaredDifference", x, y, name);
}
Output Less(Output x, Output y, std::string_view name) { return Binary("Less", x, y, name); }
Output LessEqual(Output x, Output y, std::string_view name) { return Binary("LessEqual", x, y, name); }
Output Greater(Output x, Output y, std::string_view name) { return Binary("Greater", x, y, name); }
Output GreaterEqual(Output x, Output y, std::string_view name) { return Binary("GreaterEqual", x, y, name); }
Output Equal(Output x, Output y, std::string_view name) { return Binary("Equal", x, y, name); }
Output NotEqual(Output x, Output y, std::string_view name) { return Binary("NotEqual", x, y, name); }
Output LogicalAnd(Output x, Output y, std::string_view name) { return Binary("LogicalAnd", x, y, name); }
Output LogicalOr(Output x, Output y, std::string_view name) { return Binary("LogicalOr", x, y, name); }

Output ArgMax(Output input, Output axis, DataType output_type, std::string_view name) {
  return NodeBuilder("ArgMax", name).Input(input).Input(axis).Attr("output_type", output_type).Finalize();
}
Output ArgMin(Output input, Output axis, DataType output_type, std::string_view name) {
  return NodeBuilder("ArgMin", name).Input(input).Input(axis).Attr("output_type", output_type).Finalize();
}
Output ArgMax(Output input, int64_t axis, DataType output_type, std::string_view name) {
  OpNameScope scope(*input.graph(), name);
  Output a = Const(static_cast<int32_t>(axis), "dimension");
  scope.Exit();
  return NodeBuilder("ArgMax", scope.op_name())
      .ExactName()
      .Input(input)
      .Input(a)
      .Attr("output_type", output_type)
      .Finalize();
}
Output ArgMin(Output input, int64_t axis, DataType output_type, std::string_view name) {
  OpNameScope scope(*input.graph(), name);
  Output a = Const(static_cast<int32_t>(axis), "dimension");
  scope.Exit();
  return NodeBuilder("ArgMin", scope.op_name())
      .ExactName()
      .Input(input)
      .Input(a)
      .Attr("output_type", output_type)
      .Finalize();
}

Output BatchMatMul(Output x, Output y, bool adj_x, bool adj_y, std::string_view name) {
  return NodeBuilder("BatchMatMul", name)
      .Input(x)
      .Input(y)
      .Attr("adj_x", adj_x)
      .Attr("adj_y", adj_y)
      .Finalize();
}
Output BatchMatMulV2(Output x, Output y, bool adj_x, bool adj_y, std::string_view name) {
  return NodeBuilder("BatchMatMulV2", name)
      .Input(x)
      .Input(y)
      .Attr("adj_x", adj_x)
      .Attr("adj_y", adj_y)
      .Finalize();
}

Output Cumsum(Output x, Output axis, bool exclusive, bool reverse, std::string_view name) {
  return NodeBuilder("Cumsum", name)
      .Input(x)
      .Input(axis)
      .Attr("exclusive", exclusive)
      .Attr("reverse", reverse)
      .Finalize();
}
Output Cumprod(Output x, Output axis, bool exclusive, bool reverse, std::string_view name) {
  return NodeBuilder("Cumprod", name)
      .Input(x)
      .Input(axis)
      .Attr("exclusive", exclusive)
      .Attr("reverse", reverse)
      .Finalize();
}

}  // namespace ops

Output operator<(const Output& x, const Output& y) { return ops::Less(x, y); }
Output operator<=(const Output& x, const Output& y) { return ops::LessEqual(x, y); }
Output operator>(const Output& x, const Output& y) { return ops::Greater(x, y); }
Output operator>=(const Output& x, const Output& y) { return ops::GreaterEqual(x, y); }
Output operator&(const Output& x, const Output& y) { return ops::LogicalAnd(x, y); }
Output operator|(const Output& x, const Output& y) { return ops::LogicalOr(x, y); }
Output operator~(const Output& x) { return ops::LogicalNot(x); }

}  // namespace flowtrain
