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

}  // namespace ops

Output operator+(const Output& x, const Output& y);
Output operator-(const Output& x, const Output& y);
Output operator*(const Output& x, const Output& y);
Output operator/(const Output& x, const Output& y);
Output operator-(const Output& x);

}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_MATH_OPS_H_
