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
Output MatMul(Output a, Output b, bool transpose_a = false, bool transpose_b = false,
              std::string_view name = "MatMul");
Output LogicalNot(Output x, std::string_view name = "LogicalNot");

}  // namespace ops

Output operator+(const Output& x, const Output& y);
Output operator-(const Output& x, const Output& y);
Output operator*(const Output& x, const Output& y);

}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_MATH_OPS_H_
