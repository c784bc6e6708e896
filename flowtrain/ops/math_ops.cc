#include "flowtrain/ops/math_ops.h"

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

}  // namespace flowtrain
