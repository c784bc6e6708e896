// Math ops with TF's names and numpy broadcasting. Operators follow TF's Python overloads
// (`a + b` is an Add node named "add").
//
//   Output y = ops::MatMul(x, w) + b;
//   Output z = ops::Mul(y, ops::Const(2.0f));
#ifndef FLOWTRAIN_OPS_MATH_OPS_H_
#define FLOWTRAIN_OPS_MATH_OPS_H_

#include <string_view>

#include "flowtrain/graph/graph.h"

namespace flowtrain {
namespace ops {

Output Add(Output x, Output y, std::string_view name = "Add");
Output AddV2(Output x, Output y, std::string_view name = "AddV2");
Output Sub(Output x, Output y, std::string_view name = "Sub");
Output Mul(Output x, Output y, std::string_view name = "Mul");
Output RealDiv(Output x, Output y, std::string_view name = "RealDiv");
// Division rounding toward negative infinity (integers) / floor(x / y) (floats).
Output FloorDiv(Output x, Output y, std::string_view name = "FloorDiv");
// x - floor(x / y) * y, TF's FloorMod (the result has y's sign).
Output FloorMod(Output x, Output y, std::string_view name = "FloorMod");
// TF1's Div (tf.compat.v1.div): x / y for floats, rounding toward zero for integers.
Output Div(Output x, Output y, std::string_view name = "Div");
// Division rounding toward zero (trunc(x / y) for floats) and its remainder, whose sign is
// x's (C's % and fmod). Mod is TruncateMod's older name.
Output TruncateDiv(Output x, Output y, std::string_view name = "TruncateDiv");
Output TruncateMod(Output x, Output y, std::string_view name = "TruncateMod");
Output Mod(Output x, Output y, std::string_view name = "Mod");
// x / y, and 0 where y == 0 (TF's DivNoNan).
Output DivNoNan(Output x, Output y, std::string_view name = "DivNoNan");
Output Maximum(Output x, Output y, std::string_view name = "Maximum");
Output Minimum(Output x, Output y, std::string_view name = "Minimum");
Output Neg(Output x, std::string_view name = "Neg");
Output MatMul(Output a, Output b, bool transpose_a = false, bool transpose_b = false,
              std::string_view name = "MatMul");
Output LogicalNot(Output x, std::string_view name = "LogicalNot");
// Sum of a list of same-shape tensors.
Output AddN(const std::vector<Output>& inputs, std::string_view name = "AddN");
Output Cast(Output x, DataType dtype, std::string_view name = "Cast");

// Reductions over `axes` (TF's reduce_sum etc.); `keep_dims` keeps reduced dimensions as 1.
Output Sum(Output input, Output axes, bool keep_dims = false, std::string_view name = "Sum");
Output Mean(Output input, Output axes, bool keep_dims = false, std::string_view name = "Mean");
Output Max(Output input, Output axes, bool keep_dims = false, std::string_view name = "Max");
Output Min(Output input, Output axes, bool keep_dims = false, std::string_view name = "Min");
Output Prod(Output input, Output axes, bool keep_dims = false, std::string_view name = "Prod");
// The same with constant axes; an empty list reduces over every dimension (axis=None).
Output ReduceSum(Output input, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
                 std::string_view name = "Sum");
Output ReduceMean(Output input, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
                  std::string_view name = "Mean");
Output ReduceMax(Output input, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
                 std::string_view name = "Max");
Output ReduceMin(Output input, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
                 std::string_view name = "Min");
Output ReduceProd(Output input, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
                  std::string_view name = "Prod");

// The dimensions along which each input was broadcast into the output of a binary op
// (outputs r0 and r1), for reducing gradients back to the inputs' shapes.
Operation BroadcastGradientArgs(Output s0, Output s1, std::string_view name = "BroadcastGradientArgs");

// Elementwise unary math, with TF's names (tf.abs, tf.square, tf.math.log1p, tf.math.cos,
// tf.nn.softplus...).
//   Output y = ops::Sigmoid(ops::MatMul(x, w));
Output Abs(Output x, std::string_view name = "Abs");
Output Square(Output x, std::string_view name = "Square");
Output Sign(Output x, std::string_view name = "Sign");
Output Sqrt(Output x, std::string_view name = "Sqrt");
Output Rsqrt(Output x, std::string_view name = "Rsqrt");
Output Exp(Output x, std::string_view name = "Exp");
Output Log(Output x, std::string_view name = "Log");
Output Log1p(Output x, std::string_view name = "Log1p");
Output Tanh(Output x, std::string_view name = "Tanh");
// dy * (1 - y^2) for y = tanh(x): the gradient TF's graphs compute Tanh's with.
Output TanhGrad(Output y, Output dy, std::string_view name = "TanhGrad");
// dy * y * (1 - y) for y = sigmoid(x).
Output SigmoidGrad(Output y, Output dy, std::string_view name = "SigmoidGrad");
Output Floor(Output x, std::string_view name = "Floor");
Output Ceil(Output x, std::string_view name = "Ceil");
Output Cos(Output x, std::string_view name = "Cos");
Output Sin(Output x, std::string_view name = "Sin");
Output Sigmoid(Output x, std::string_view name = "Sigmoid");
Output Softplus(Output x, std::string_view name = "Softplus");
Output Reciprocal(Output x, std::string_view name = "Reciprocal");

// Broadcasting binary math: x^y and (x-y)^2.
Output Pow(Output x, Output y, std::string_view name = "Pow");
Output SquaredDifference(Output x, Output y, std::string_view name = "SquaredDifference");

// Broadcasting comparisons and logical ops, producing bool tensors.
Output Less(Output x, Output y, std::string_view name = "Less");
Output LessEqual(Output x, Output y, std::string_view name = "LessEqual");
Output Greater(Output x, Output y, std::string_view name = "Greater");
Output GreaterEqual(Output x, Output y, std::string_view name = "GreaterEqual");
Output Equal(Output x, Output y, std::string_view name = "Equal");
Output NotEqual(Output x, Output y, std::string_view name = "NotEqual");
Output LogicalAnd(Output x, Output y, std::string_view name = "LogicalAnd");
Output LogicalOr(Output x, Output y, std::string_view name = "LogicalOr");

// Index of the largest / smallest value along `axis` (first one on ties).
Output ArgMax(Output input, Output axis, DataType output_type = DT_INT64, std::string_view name = "ArgMax");
Output ArgMin(Output input, Output axis, DataType output_type = DT_INT64, std::string_view name = "ArgMin");
Output ArgMax(Output input, int64_t axis, DataType output_type = DT_INT64, std::string_view name = "ArgMax");
Output ArgMin(Output input, int64_t axis, DataType output_type = DT_INT64, std::string_view name = "ArgMin");

// Matrix products over the last two dimensions; BatchMatMul needs equal batch dimensions,
// BatchMatMulV2 broadcasts them. adj_* transposes that operand's matrices.
Output BatchMatMul(Output x, Output y, bool adj_x = false, bool adj_y = false,
                   std::string_view name = "BatchMatMul");
Output BatchMatMulV2(Output x, Output y, bool adj_x = false, bool adj_y = false,
                     std::string_view name = "BatchMatMulV2");

// Running sums / products along `axis` (exclusive: excluding the element itself; reverse:
// from the end).
Output Cumsum(Output x, Output axis, bool exclusive = false, bool reverse = false,
              std::string_view name = "Cumsum");
Output Cumprod(Output x, Output axis, bool exclusive = false, bool reverse = false,
               std::string_view name = "Cumprod");

}  // namespace ops

Output operator+(const Output& x, const Output& y);
Output operator-(const Output& x, const Output& y);
Output operator*(const Output& x, const Output& y);
Output operator/(const Output& x, const Output& y);
Output operator-(const Output& x);
// As TF's Python overloads: comparisons build Less etc. (there is no == / != overload: those
// compare the Output handles), & | ~ build the logical ops.
Output operator<(const Output& x, const Output& y);
Output operator<=(const Output& x, const Output& y);
Output operator>(const Output& x, const Output& y);
Output operator>=(const Output& x, const Output& y);
Output operator&(const Output& x, const Output& y);
Output operator|(const Output& x, const Output& y);
Output operator~(const Output& x);

}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_MATH_OPS_H_
