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

#define FT_BINARY_CWISE_OP(Name, Types)                 \
  FT_REGISTER_OP(Name)                                  \
      .Input("x: T")                                    \
      .Input("y: T")                                    \
      .Output("z: T")                                   \
      .Attr("T: " Types)                                \
      .SetShapeFn(shape_fns::BroadcastBinaryOpShape)

#define FT_NUMBER_TYPES "{bfloat16, half, float, double, uint8, int8, int16, int32, int64}"
FT_BINARY_CWISE_OP("Add", "{bfloat16, half, float, double, uint8, int8, int16, int32, int64, string}");
FT_BINARY_CWISE_OP("AddV2", FT_NUMBER_TYPES).SetIsCommutative();
FT_BINARY_CWISE_OP("Sub", FT_NUMBER_TYPES);
FT_BINARY_CWISE_OP("Mul", FT_NUMBER_TYPES).SetIsCommutative();
FT_BINARY_CWISE_OP("RealDiv", FT_NUMBER_TYPES);
FT_BINARY_CWISE_OP("FloorDiv", FT_NUMBER_TYPES);
FT_BINARY_CWISE_OP("Maximum", "{bfloat16, half, float, double, int32, int64}");
FT_BINARY_CWISE_OP("Minimum", "{bfloat16, half, float, double, int32, int64}");

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
    .SetShapeFn(MatMulShape);

FT_REGISTER_OP("LogicalNot")
    .Input("x: bool")
    .Output("y: bool")
    .SetShapeFn(shape_fns::UnchangedShape);

namespace ops {

Output Add(Output x, Output y, std::string_view name) { return Binary("Add", x, y, name); }
Output AddV2(Output x, Output y, std::string_view name) { return Binary("AddV2", x, y, name); }
Output Sub(Output x, Output y, std::string_view name) { return Binary("Sub", x, y, name); }
Output Mul(Output x, Output y, std::string_view name) { return Binary("Mul", x, y, name); }
Output RealDiv(Output x, Output y, std::string_view name) { return Binary("RealDiv", x, y, name); }
Output FloorDiv(Output x, Output y, std::string_view name) { return Binary("FloorDiv", x, y, name); }
Output Maximum(Output x, Output y, std::string_view name) { return Binary("Maximum", x, y, name); }
Output Minimum(Output x, Output y, std::string_view name) { return Binary("Minimum", x, y, name); }
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

#define FT_REDUCTION_OP(Name)                                                           \
  FT_REGISTER_OP(Name)                                                                  \
      .Input("input: T")                                                                \
      .Input("reduction_indices: Tidx")                                                 \
      .Output("output: T")                                                              \
      .Attr("keep_dims: bool = false")                                                  \
      .Attr("T: {bfloat16, half, float, double, uint8, int8, int16, int32, int64}")     \
      .Attr("Tidx: {int32, int64} = DT_INT32")                                          \
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
