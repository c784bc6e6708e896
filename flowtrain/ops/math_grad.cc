// Gradients of the math ops of math_ops.cc (registered here rather than beside each op so the
// gradient code, which builds other math ops, reads as one piece).
#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain {
namespace {

using Grads = std::vector<Output>;

Grads AddGrad(const Operation& op, const Grads& dy) {
  auto [gx, gy] = ops::ReduceBroadcastGradients(op.input(0), op.input(1), dy[0], dy[0]);
  return {gx, gy};
}

Grads SubGrad(const Operation& op, const Grads& dy) {
  auto [gx, gy] = ops::ReduceBroadcastGradients(op.input(0), op.input(1), dy[0], ops::Neg(dy[0]));
  return {gx, gy};
}

Grads MulGrad(const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  // Built in this order (not as call arguments, whose order C++ leaves open) so that the
  // nodes get TF's names: x's gradient is "Mul", y's "Mul_1".
  const Output grad_x = ops::Mul(dy[0], y);
  const Output grad_y = ops::Mul(x, dy[0]);
  auto [gx, gy] = ops::ReduceBroadcastGradients(x, y, grad_x, grad_y);
  return {gx, gy};
}

Grads MatMulGrad(const Operation& op, const Grads& dy) {
  const bool ta = op.GetAttr<bool>("transpose_a");
  const bool tb = op.GetAttr<bool>("transpose_b");
  const Output a = op.input(0);
  const Output b = op.input(1);
  const Output g = dy[0];
  if (!ta && !tb) return {ops::MatMul(g, b, false, true), ops::MatMul(a, g, true, false)};
  if (!ta && tb) return {ops::MatMul(g, b, false, false), ops::MatMul(g, a, true, false)};
  if (ta && !tb) return {ops::MatMul(b, g, false, true), ops::MatMul(a, g, false, false)};
  return {ops::MatMul(b, g, true, true), ops::MatMul(g, a, true, true)};
}

Grads AddNGrad(const Operation& op, const Grads& dy) { return Grads(op.num_inputs(), dy[0]); }

// A reduction's output, or its gradient, reshaped and broadcast back over the input's shape.
Output ExpandReducedGradient(const Operation& op, const Output& grad) {
  const Output input = op.input(0);
  if (op.GetAttr<bool>("keep_dims")) return ops::BroadcastTo(grad, ops::Shape(input));
  // The shape with reduced dimensions set to 1: Shape(x) * keep_mask + reduce_mask, built
  // from the constant axes when they are known, else from the axes at run time.
  const Node* axes_node = op.input(1).node();
  const Tensor* axes = axes_node->constant_value();
  const PartialTensorShape& in_shape = input.shape();
  if (axes == nullptr || in_shape.unknown_rank()) {
    // Axes known only at run time (TF's losses reduce over Range(0, Rank(x))): the kept shape
    // is Shape(x) with 1 at every reduced axis, the axes (negative ones wrapped with FloorMod)
    // marked through a one-hot mask over the rank, as TF's reduced_shape does with
    // DynamicStitch.
    const Output shape = ops::Shape(input);
    const Output rank = ops::Size(shape);
    // A scalar input (rank 0) has no axes to wrap; Maximum keeps FloorMod's divisor non-zero.
    const Output wrapped =
        ops::FloorMod(ops::Reshape(ops::Cast(op.input(1), DT_INT32), std::vector<int64_t>{-1}),
                      ops::Maximum(rank, ops::Const(int32_t{1})));
    const Output hits = ops::ReduceSum(ops::OneHot(wrapped, rank, ops::Const(1.0f), ops::Const(0.0f)), {0});
    const Output mask = ops::Cast(ops::Minimum(hits, ops::Const(1.0f)), DT_INT32);
    const Output kept_shape = ops::Add(ops::Mul(shape, ops::Sub(ops::Const(int32_t{1}), mask)), mask);
    return ops::BroadcastTo(ops::Reshape(grad, kept_shape), shape);
  }
  std::vector<int32_t> keep(in_shape.dims(), 1), reduce(in_shape.dims(), 0);
  for (int64_t i = 0; i < axes->NumElements(); ++i) {
    int64_t a = axes->dtype() == DT_INT32 ? axes->flat<int32_t>()[i] : axes->flat<int64_t>()[i];
    if (a < 0) a += in_shape.dims();
    keep[a] = 0;
    reduce[a] = 1;
  }
  Output kept_shape = ops::Add(ops::Mul(ops::Shape(input), ops::Const(Tensor::FromVector<int32_t>(keep))),
                               ops::Const(Tensor::FromVector<int32_t>(reduce)));
  return ops::BroadcastTo(ops::Reshape(grad, kept_shape), ops::Shape(input));
}

Grads SumGrad(const Operation& op, const Grads& dy) { return {ExpandReducedGradient(op, dy[0]), Output()}; }

Grads MeanGrad(const Operation& op, const Grads& dy) {
  const Output input = op.input(0);
  Output expanded = ExpandReducedGradient(op, dy[0]);
  // Divide by the number of elements reduced into each output: size(input) / size(output).
  Output count = ops::Cast(
      ops::FloorDiv(ops::ReduceProd(ops::Shape(input)),
                    ops::Maximum(ops::ReduceProd(ops::Shape(op.output(0))), ops::Const(int32_t{1}))),
      input.dtype());
  return {ops::RealDiv(expanded, count), Output()};
}

Grads CastGrad(const Operation& op, const Grads& dy) {
  const DataType src = op.input(0).dtype();
  if (!IsFloatingType(src) || !IsFloatingType(op.output(0).dtype())) return {Output()};
  return {ops::Cast(dy[0], src)};
}

}  // namespace

FT_REGISTER_GRADIENT("Add", AddGrad);
FT_REGISTER_GRADIENT("AddV2", AddGrad);
FT_REGISTER_GRADIENT("Sub", SubGrad);
FT_REGISTER_GRADIENT("Mul", MulGrad);
FT_REGISTER_GRADIENT("MatMul", MatMulGrad);
FT_REGISTER_GRADIENT("AddN", AddNGrad);
FT_REGISTER_GRADIENT("Sum", SumGrad);
FT_REGISTER_GRADIENT("Mean", MeanGrad);
FT_REGISTER_GRADIENT("Cast", CastGrad);
// A sparse gradient stays sparse through Cast: its values are cast back (TF's _CastGrad).
FT_REGISTER_SPARSE_GRADIENT("Cast", [](const Operation& op, const std::vector<ops::GradientValue>& dy) {
  if (!dy[0].is_sparse()) {
    const Grads dense = CastGrad(op, {dy[0].dense()});
    return std::vector<ops::GradientValue>(dense.begin(), dense.end());
  }
  const DataType src = op.input(0).dtype();
  if (!IsFloatingType(src) || !IsFloatingType(op.output(0).dtype()))
    return std::vector<ops::GradientValue>(1);
  const ops::IndexedSlices& s = dy[0].slices();
  return std::vector<ops::GradientValue>{
      ops::IndexedSlices{ops::Cast(s.values, src), s.indices, s.dense_shape}};
});
FT_REGISTER_GRADIENT("Neg", [](const Operation&, const Grads& dy) { return Grads{ops::Neg(dy[0])}; });
FT_REGISTER_GRADIENT("RealDiv", [](const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  // d(x/y)/dx = 1/y; d(x/y)/dy = -x/y^2.
  auto [gx, gy] = ops::ReduceBroadcastGradients(
      x, y, ops::RealDiv(dy[0], y), ops::Mul(dy[0], ops::RealDiv(ops::RealDiv(ops::Neg(x), y), y)));
  return Grads{gx, gy};
});
// TF's _DivGrad: RealDiv's, with Div for the divisions.
FT_REGISTER_GRADIENT("Div", [](const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  auto [gx, gy] = ops::ReduceBroadcastGradients(x, y, ops::Div(dy[0], y),
                                                ops::Mul(dy[0], ops::Div(ops::Div(ops::Neg(x), y), y)));
  return Grads{gx, gy};
});
FT_REGISTER_NO_GRADIENT("FloorDiv");
FT_REGISTER_NO_GRADIENT("TruncateDiv");
// TF's _FloorModGrad: z = x - floor(x / y) * y, so dz/dx = 1 and dz/dy = -floor(x / y).
FT_REGISTER_GRADIENT("FloorMod", [](const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  auto [gx, gy] = ops::ReduceBroadcastGradients(x, y, dy[0], ops::Mul(dy[0], ops::Neg(ops::FloorDiv(x, y))));
  return Grads{gx, gy};
});
// TF's _DivNoNanGrad: as RealDiv's, with DivNoNan for the divisions (0 where y == 0).
FT_REGISTER_GRADIENT("DivNoNan", [](const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  auto [gx, gy] = ops::ReduceBroadcastGradients(
      x, y, ops::DivNoNan(dy[0], y), ops::Mul(dy[0], ops::DivNoNan(ops::DivNoNan(ops::Neg(x), y), y)));
  return Grads{gx, gy};
});
// Floor and Ceil are flat almost everywhere: TF gives them no gradient.
FT_REGISTER_NO_GRADIENT("Floor");
FT_REGISTER_NO_GRADIENT("Ceil");
FT_REGISTER_NO_GRADIENT("LogicalNot");
FT_REGISTER_NO_GRADIENT("BroadcastGradientArgs");

}  // namespace flowtrain

// ---- Unary math, Pow, SquaredDifference, Maximum/Minimum, Max/Min/Prod reductions,
// ---- BatchMatMul, Cumsum/Cumprod ----

namespace flowtrain {
namespace {

using Grads = std::vector<Output>;

// A scalar constant of `like`'s dtype.
Output ScalarLike(double value, const Output& like) {
  Tensor t = DispatchNumericType(like.dtype(), "gradient constant",
                                 [&]<typename T>() { return Tensor::Scalar<T>(static_cast<T>(value)); });
  return ops::Const(t);
}

Grads ReduceBoth(const Operation& op, const Output& gx, const Output& gy) {
  auto [rx, ry] = ops::ReduceBroadcastGradients(op.input(0), op.input(1), gx, gy);
  return {rx, ry};
}

Grads PowGrad(const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  const Output z = op.output(0);
  // dz/dx = y * x^(y-1); dz/dy = z * log(x), taken as 0 where x <= 0.
  Output gx = dy[0] * y * ops::Pow(x, y - ScalarLike(1, y));
  Output log_x = ops::Select(ops::Greater(x, ops::ZerosLike(x)), ops::Log(x), ops::ZerosLike(x));
  Output gy = dy[0] * z * log_x;
  return ReduceBoth(op, gx, gy);
}

Grads SquaredDifferenceGrad(const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  Output gx = ScalarLike(2, x) * dy[0] * (x - y);
  return ReduceBoth(op, gx, ops::Neg(gx));
}

// Maximum/Minimum: the gradient goes to x where x won (ties to x), else to y.
Grads MaxMinGrad(const Operation& op, const Grads& dy, bool is_max) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  Output grad = dy[0];
  Output x_wins = is_max ? ops::GreaterEqual(x, y) : ops::LessEqual(x, y);
  Output zeros = ops::ZerosLike(grad);
  return ReduceBoth(op, ops::SelectV2(x_wins, grad, zeros), ops::SelectV2(x_wins, zeros, grad));
}

// Max/Min: the gradient is shared equally among the elements equal to the extreme value.
Grads MaxMinReductionGrad(const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  Output y = ExpandReducedGradient(op, op.output(0));
  Output g = ExpandReducedGradient(op, dy[0]);
  Output indicators = ops::Cast(ops::Equal(y, x), x.dtype());
  Output num_selected = ops::Sum(indicators, op.input(1), /*keep_dims=*/true);
  return {ops::RealDiv(indicators, num_selected) * g, Output()};
}

// Prod: d(prod)/dx_i is the product of the others, computed without division (so zeros
// work) as exclusive cumulative products from both ends along the reduced dimensions.
Grads ProdGrad(const Operation& op, const Grads& dy) {
  const Output x = op.input(0);
  const Tensor* axes = op.input(1).node()->constant_value();
  const PartialTensorShape& shape = x.shape();
  if (axes == nullptr || shape.unknown_rank()) {
    Unimplemented("Gradient of Prod '", op.name(),
                  "' needs constant reduction axes and an input of known rank");
  }
  const int rank = shape.dims();
  std::vector<bool> reduced(rank, false);
  for (int64_t i = 0; i < axes->NumElements(); ++i) {
    int64_t a = axes->dtype() == DT_INT32 ? axes->flat<int32_t>()[i] : axes->flat<int64_t>()[i];
    reduced[a < 0 ? a + rank : a] = true;
  }
  std::vector<int64_t> perm;
  std::vector<int32_t> reduced_dims, other_dims;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) {
      perm.push_back(d);
      reduced_dims.push_back(d);
    }
  }
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      perm.push_back(d);
      other_dims.push_back(d);
    }
  }
  std::vector<int64_t> inverse(rank);
  for (int d = 0; d < rank; ++d) inverse[perm[d]] = d;
  Output g = ExpandReducedGradient(op, dy[0]);
  Output x_shape = ops::Shape(x);
  Output reduced_num =
      ops::ReduceProd(ops::Gather(x_shape, ops::Const(Tensor::FromVector<int32_t>(reduced_dims))));
  Output permuted = ops::Transpose(x, perm);
  Output matrix = ops::Reshape(permuted, ops::Pack({reduced_num, ops::Const(int32_t{-1})}));
  Output zero = ops::Const(int32_t{0});
  Output left = ops::Cumprod(matrix, zero, /*exclusive=*/true);
  Output right = ops::Cumprod(matrix, zero, /*exclusive=*/true, /*reverse=*/true);
  Output others = ops::Transpose(ops::Reshape(left * right, ops::Shape(permuted)), inverse);
  return {g * others, Output()};
}

Grads BatchMatMulGrad(const Operation& op, const Grads& dy, bool v2) {
  const bool adj_x = op.GetAttr<bool>("adj_x");
  const bool adj_y = op.GetAttr<bool>("adj_y");
  const Output x = op.input(0);
  const Output y = op.input(1);
  const Output g = dy[0];
  auto mm = [v2](Output a, Output b, bool ta, bool tb) {
    return v2 ? ops::BatchMatMulV2(a, b, ta, tb) : ops::BatchMatMul(a, b, ta, tb);
  };
  Output gx, gy;
  if (!adj_x && !adj_y) {
    gx = mm(g, y, false, true);
    gy = mm(x, g, true, false);
  } else if (!adj_x && adj_y) {
    gx = mm(g, y, false, false);
    gy = mm(g, x, true, false);
  } else if (adj_x && !adj_y) {
    gx = mm(y, g, false, true);
    gy = mm(x, g, false, false);
  } else {
    gx = mm(y, g, true, true);
    gy = mm(g, x, true, true);
  }
  if (!v2) return {gx, gy};
  const PartialTensorShape& sx = x.shape();
  const PartialTensorShape& sy = y.shape();
  if (sx.IsFullyDefined() && sy.IsFullyDefined() && sx.IsIdenticalTo(sy)) return {gx, gy};
  // Sum over the batch dimensions each operand was broadcast along.
  Output shape_x = ops::Shape(x);
  Output shape_y = ops::Shape(y);
  Output batch_x = ops::StridedSlice(shape_x, {0}, {-2}, {1});
  Output batch_y = ops::StridedSlice(shape_y, {0}, {-2}, {1});
  Operation args = ops::BroadcastGradientArgs(batch_x, batch_y);
  return {ops::Reshape(ops::Sum(gx, args.output(0)), shape_x),
          ops::Reshape(ops::Sum(gy, args.output(1)), shape_y)};
}

}  // namespace

FT_REGISTER_GRADIENT("Abs", [](const Operation& op, const Grads& dy) {
  return Grads{dy[0] * ops::Sign(op.input(0))};
});
FT_REGISTER_GRADIENT("Square", [](const Operation& op, const Grads& dy) {
  return Grads{dy[0] * (ScalarLike(2, op.input(0)) * op.input(0))};
});
FT_REGISTER_GRADIENT("Sqrt", [](const Operation& op, const Grads& dy) {
  return Grads{ops::RealDiv(dy[0] * ScalarLike(0.5, op.output(0)), op.output(0))};
});
FT_REGISTER_GRADIENT("Rsqrt", [](const Operation& op, const Grads& dy) {
  const Output y = op.output(0);
  return Grads{dy[0] * (ScalarLike(-0.5, y) * ops::Square(y) * y)};
});
FT_REGISTER_GRADIENT("Exp", [](const Operation& op, const Grads& dy) { return Grads{dy[0] * op.output(0)}; });
FT_REGISTER_GRADIENT("Log", [](const Operation& op, const Grads& dy) {
  return Grads{ops::RealDiv(dy[0], op.input(0))};
});
FT_REGISTER_GRADIENT("Log1p", [](const Operation& op, const Grads& dy) {
  return Grads{ops::RealDiv(dy[0], ScalarLike(1, op.input(0)) + op.input(0))};
});
FT_REGISTER_GRADIENT("Tanh", [](const Operation& op, const Grads& dy) {
  const Output y = op.output(0);
  return Grads{dy[0] * (ScalarLike(1, y) - ops::Square(y))};
});
// TF's _TanhGradGrad / _SigmoidGradGrad: second derivatives, for gradients of gradients.
FT_REGISTER_GRADIENT("TanhGrad", [](const Operation& op, const Grads& dy) {
  const Output y = op.input(0);
  const Output g = op.input(1);
  // z = g * (1 - y^2): dz/dy = -2 y g, dz/dg = 1 - y^2.
  return Grads{dy[0] * ScalarLike(-2, y) * y * g, ops::TanhGrad(y, dy[0])};
});
FT_REGISTER_GRADIENT("SigmoidGrad", [](const Operation& op, const Grads& dy) {
  const Output y = op.input(0);
  const Output g = op.input(1);
  // z = g * y * (1 - y): dz/dy = g * (1 - 2 y), dz/dg = y * (1 - y).
  return Grads{dy[0] * g * (ScalarLike(1, y) - ScalarLike(2, y) * y), ops::SigmoidGrad(y, dy[0])};
});
FT_REGISTER_GRADIENT("Cos", [](const Operation& op, const Grads& dy) {
  return Grads{ops::Neg(dy[0]) * ops::Sin(op.input(0))};
});
FT_REGISTER_GRADIENT("Sin", [](const Operation& op, const Grads& dy) {
  return Grads{dy[0] * ops::Cos(op.input(0))};
});
FT_REGISTER_GRADIENT("Sigmoid", [](const Operation& op, const Grads& dy) {
  const Output y = op.output(0);
  return Grads{dy[0] * (y * (ScalarLike(1, y) - y))};
});
FT_REGISTER_GRADIENT("Softplus", [](const Operation& op, const Grads& dy) {
  return Grads{dy[0] * ops::Sigmoid(op.input(0))};
});
FT_REGISTER_GRADIENT("Reciprocal", [](const Operation& op, const Grads& dy) {
  const Output y = op.output(0);
  return Grads{ops::Neg(dy[0]) * ops::Square(y)};
});
FT_REGISTER_GRADIENT("Sign",
                     [](const Operation& op, const Grads&) { return Grads{ops::ZerosLike(op.input(0))}; });
FT_REGISTER_GRADIENT("Pow", PowGrad);
FT_REGISTER_GRADIENT("SquaredDifference", SquaredDifferenceGrad);
FT_REGISTER_GRADIENT("Maximum",
                     [](const Operation& op, const Grads& dy) { return MaxMinGrad(op, dy, true); });
FT_REGISTER_GRADIENT("Minimum",
                     [](const Operation& op, const Grads& dy) { return MaxMinGrad(op, dy, false); });
FT_REGISTER_GRADIENT("Max", MaxMinReductionGrad);
FT_REGISTER_GRADIENT("Min", MaxMinReductionGrad);
FT_REGISTER_GRADIENT("Prod", ProdGrad);
FT_REGISTER_GRADIENT("BatchMatMul",
                     [](const Operation& op, const Grads& dy) { return BatchMatMulGrad(op, dy, false); });
FT_REGISTER_GRADIENT("BatchMatMulV2",
                     [](const Operation& op, const Grads& dy) { return BatchMatMulGrad(op, dy, true); });
FT_REGISTER_GRADIENT("Cumsum", [](const Operation& op, const Grads& dy) {
  return Grads{ops::Cumsum(dy[0], op.input(1), op.GetAttr<bool>("exclusive"), !op.GetAttr<bool>("reverse")),
               Output()};
});
FT_REGISTER_GRADIENT("Cumprod", [](const Operation& op, const Grads& dy) {
  // As TF: valid where x has no zeros.
  const Output x = op.input(0);
  Output summed = ops::Cumsum(dy[0] * op.output(0), op.input(1), op.GetAttr<bool>("exclusive"),
                              !op.GetAttr<bool>("reverse"));
  return Grads{ops::RealDiv(summed, x), Output()};
});
FT_REGISTER_NO_GRADIENT("Less");
FT_REGISTER_NO_GRADIENT("LessEqual");
FT_REGISTER_NO_GRADIENT("Greater");
FT_REGISTER_NO_GRADIENT("GreaterEqual");
FT_REGISTER_NO_GRADIENT("Equal");
FT_REGISTER_NO_GRADIENT("NotEqual");
FT_REGISTER_NO_GRADIENT("LogicalAnd");
FT_REGISTER_NO_GRADIENT("LogicalOr");
FT_REGISTER_NO_GRADIENT("ArgMax");
FT_REGISTER_NO_GRADIENT("ArgMin");

}  // namespace flowtrain
