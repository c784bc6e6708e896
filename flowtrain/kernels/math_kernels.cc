// Kernels of the arithmetic ops (Add, Sub, Mul, ..., Pow, SquaredDifference), comparisons and
// logical ops (bool outputs), MatMul, BatchMatMul and LogicalNot. This translation unit
// holds the heavy Eigen template code so that few files pay for compiling it; float and
// double products go to gemm.h's blocked, pool-split GEMM.
#include <cmath>
#include <type_traits>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/cwise_binary.h"
#include "flowtrain/kernels/internal/cwise_binary_op.h"
#include "flowtrain/kernels/internal/gemm.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/work_sharder.h"

namespace flowtrain {

TensorShape BroadcastOutputShape(const TensorShape& x, const TensorShape& y, std::string_view op) {
  const int rank = std::max(x.dims(), y.dims());
  DimVector dims(rank);
  for (int i = 0; i < rank; ++i) {
    const int ix = x.dims() - rank + i;
    const int iy = y.dims() - rank + i;
    const int64_t dx = ix >= 0 ? x.dim_size(ix) : 1;
    const int64_t dy = iy >= 0 ? y.dim_size(iy) : 1;
    if (dx != dy && dx != 1 && dy != 1) {
      InvalidArgument("Incompatible shapes: ", x.DebugString(), " vs. ", y.DebugString(), " in ", op);
    }
    dims[i] = dx == 1 ? dy : dx;
  }
  return TensorShape(std::move(dims));
}

DimVector BroadcastStrides(const TensorShape& in, const TensorShape& out) {
  const int rank = out.dims();
  DimVector strides(rank, 0);
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int ii = in.dims() - rank + i;
    const int64_t d = ii >= 0 ? in.dim_size(ii) : 1;
    strides[i] = d == 1 ? 0 : stride;
    stride *= d;
  }
  return strides;
}

namespace {

using namespace cwise_internal;  // NOLINT: the shared elementwise machinery

struct AddFn {
  static constexpr bool kDivides = false;
  static constexpr bool kStringInputs = true;  // string concatenation
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return a + b;
  }
};
struct SubFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return a - b;
  }
};
struct MulFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return a * b;
  }
};
// Integer quotient and remainder for y != 0 (the kernel rejects zero divisors first). The one
// other quotient C++ leaves undefined, min / -1, is 2^(n-1), which does not fit; x86's idiv
// traps on it (SIGFPE) for int32 and int64. It wraps to min instead, as -min does in two's
// complement, and min % -1 is 0: the values TF's integer functors give. The y == -1 branch
// exists only in the integer instantiations; floats keep their vectorized a / b.
template <typename T>
T WrappingDivide(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    if (y == T(-1)) return static_cast<T>(U(0) - static_cast<U>(x));
  }
  return static_cast<T>(x / y);
}
template <typename T>
T WrappingRemainder(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return T(0);
  }
  return static_cast<T>(x % y);
}

// The element type of an Apply() operand: an Eigen array's Scalar, or the scalar itself.
template <typename X, bool = kIsArray<X>>
struct ScalarOfImpl {
  using type = X;
};
template <typename X>
struct ScalarOfImpl<X, true> {
  using type = typename X::Scalar;
};
template <typename X>
using ScalarOf = typename ScalarOfImpl<X>::type;

struct RealDivFn {
  static constexpr bool kDivides = true;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    using T = ScalarOf<A>;  // both operands have the same element type
    if constexpr (std::is_integral_v<T>) {
      return ApplyElementwise(a, b, [](T x, T y) { return WrappingDivide<T>(x, y); });
    } else {
      return a / b;
    }
  }
};
// A dividing functor (its kernel rejects integer zero divisors first) applying `Op()(x, y)`
// element by element.
template <typename Op>
struct ElementwiseDivisionFn {
  static constexpr bool kDivides = true;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto x, auto y) { return Op()(x, y); });
  }
};
// The float type an element computes in (half and bfloat16 in float).
template <typename T>
using ComputeFloat = std::conditional_t<std::is_same_v<T, double>, double, float>;
// Rounds toward zero: integers as C does (min / -1 wraps), floats through trunc(x / y).
struct TruncateDivide {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      return WrappingDivide<T>(x, y);
    } else {
      return static_cast<T>(std::trunc(static_cast<ComputeFloat<T>>(x) / static_cast<ComputeFloat<T>>(y)));
    }
  }
};
// The remainder of TruncateDiv: its sign is x's (C's % and fmod).
struct TruncateModulo {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      return WrappingRemainder<T>(x, y);
    } else {
      return static_cast<T>(std::fmod(static_cast<ComputeFloat<T>>(x), static_cast<ComputeFloat<T>>(y)));
    }
  }
};
struct MaximumFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    if constexpr (kIsArray<A>) {
      return a.max(b);
    } else if constexpr (kIsArray<B>) {
      return b.max(a);
    } else {
      return a < b ? b : a;
    }
  }
};
struct MinimumFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    if constexpr (kIsArray<A>) {
      return a.min(b);
    } else if constexpr (kIsArray<B>) {
      return b.min(a);
    } else {
      return b < a ? b : a;
    }
  }
};
template <typename T>
T FloorDivide(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    const T q = WrappingDivide(x, y);
    // Round toward negative infinity when the signs differ and there is a remainder.
    if constexpr (std::is_signed_v<T>) {
      if ((WrappingRemainder(x, y) != 0) && ((x < 0) != (y < 0))) return q - 1;
    }
    return q;
  } else {
    return static_cast<T>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
  }
}
struct FloorDivFn {
  static constexpr bool kDivides = true;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    if constexpr (kIsArray<A> && kIsArray<B>) {
      using T = typename A::Scalar;
      return a.binaryExpr(b, [](T x, T y) { return FloorDivide<T>(x, y); });
    } else if constexpr (kIsArray<A>) {
      using T = typename A::Scalar;
      const T y = b;
      return a.unaryExpr([y](T x) { return FloorDivide<T>(x, y); });
    } else if constexpr (kIsArray<B>) {
      using T = typename B::Scalar;
      const T x = a;
      return b.unaryExpr([x](T y) { return FloorDivide<T>(x, y); });
    } else {
      return FloorDivide<A>(a, b);
    }
  }
};
// x - floor(x / y) * y: the remainder takes y's sign, as TF's FloorMod (and Python's %).
struct FloorModulo {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      T r = WrappingRemainder(x, y);
      if constexpr (std::is_signed_v<T>) {
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
      }
      return r;
    } else {
      using F = ComputeFloat<T>;
      const F fx = static_cast<F>(x), fy = static_cast<F>(y);
      F r = std::fmod(fx, fy);
      if (r != 0 && ((r < 0) != (fy < 0))) r += fy;
      return static_cast<T>(r);
    }
  }
};
using TruncateDivFn = ElementwiseDivisionFn<TruncateDivide>;
using TruncateModFn = ElementwiseDivisionFn<TruncateModulo>;
using FloorModFn = ElementwiseDivisionFn<FloorModulo>;
struct DivNoNanFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto x, auto y) {
      using T = decltype(x);
      return y == T(0) ? T(0) : static_cast<T>(x / y);
    });
  }
};
// TanhGrad(y, dy) = dy * (1 - y^2); SigmoidGrad(y, dy) = dy * y * (1 - y).
struct TanhGradFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto y, auto dy) {
      using T = decltype(y);
      return static_cast<T>(dy * (T(1) - y * y));
    });
  }
};
struct SigmoidGradFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto y, auto dy) {
      using T = decltype(y);
      return static_cast<T>(dy * (y * (T(1) - y)));
    });
  }
};

template <typename T>
T PowScalar(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    // Exponentiation by squaring; negative exponents are rejected before.
    T result = 1;
    for (T base = x, e = y; e > 0; e >>= 1, base *= base) {
      if (e & 1) result *= base;
    }
    return result;
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return std::pow(x, y);
  } else {
    return static_cast<T>(std::pow(static_cast<float>(x), static_cast<float>(y)));
  }
}
struct PowFn {
  static constexpr bool kDivides = false;
  static constexpr bool kNoNegativeIntegerExponent = true;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    return ApplyElementwise(a, b, [](auto x, auto y) { return PowScalar<decltype(x)>(x, y); });
  }
};
struct SquaredDifferenceFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) {
    if constexpr (kIsArray<A> || kIsArray<B>) {
      return (a - b).square();
    } else {
      return (a - b) * (a - b);
    }
  }
};

FT_REGISTER_KERNEL("Add", BinaryCwiseOp<AddFn>);
FT_REGISTER_KERNEL("AddV2", BinaryCwiseOp<AddFn>);
FT_REGISTER_KERNEL("Sub", BinaryCwiseOp<SubFn>);
FT_REGISTER_KERNEL("Mul", BinaryCwiseOp<MulFn>);
FT_REGISTER_KERNEL("RealDiv", BinaryCwiseOp<RealDivFn>);
FT_REGISTER_KERNEL("FloorDiv", BinaryCwiseOp<FloorDivFn>);
FT_REGISTER_KERNEL("Div", BinaryCwiseOp<RealDivFn>);
FT_REGISTER_KERNEL("TruncateDiv", BinaryCwiseOp<TruncateDivFn>);
FT_REGISTER_KERNEL("TruncateMod", BinaryCwiseOp<TruncateModFn>);
FT_REGISTER_KERNEL("Mod", BinaryCwiseOp<TruncateModFn>);
FT_REGISTER_KERNEL("Maximum", BinaryCwiseOp<MaximumFn>);
FT_REGISTER_KERNEL("Minimum", BinaryCwiseOp<MinimumFn>);
FT_REGISTER_KERNEL("Pow", BinaryCwiseOp<PowFn>);
FT_REGISTER_KERNEL("FloorMod", BinaryCwiseOp<FloorModFn>);
FT_REGISTER_KERNEL("DivNoNan", BinaryCwiseOp<DivNoNanFn>);
FT_REGISTER_KERNEL("TanhGrad", BinaryCwiseOp<TanhGradFn>);
FT_REGISTER_KERNEL("SigmoidGrad", BinaryCwiseOp<SigmoidGradFn>);
FT_REGISTER_KERNEL("SquaredDifference", BinaryCwiseOp<SquaredDifferenceFn>);

class NegOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, x.shape());
    DispatchNumericType(x.dtype(), "Neg", [&]<typename T>() {
      ArrayMap<T>(out->data<T>(), x.NumElements()) = -ConstArrayMap<T>(x.data<T>(), x.NumElements());
    });
  }
};
FT_REGISTER_KERNEL("Neg", NegOp);

class AddNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& first = ctx->input(0);
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      if (ctx->input(i).shape() != first.shape()) {
        InvalidArgument("Inputs to operation ", name(),
                        " of type AddN must have the same size and "
                        "shape.  Input 0: ",
                        first.shape().DebugString(), " != input ", i, ": ",
                        ctx->input(i).shape().DebugString());
      }
    }
    Tensor* out = ctx->allocate_output(0, first.shape());
    const int64_t n = first.NumElements();
    DispatchNumericType(first.dtype(), "AddN", [&]<typename T>() {
      ForRange(ctx, n, [&](int64_t b, int64_t e) {
        ArrayMap<T> o(out->data<T>() + b, e - b);
        o = ConstArrayMap<T>(ctx->input(0).data<T>() + b, e - b);
        for (int i = 1; i < ctx->num_inputs(); ++i) o += ConstArrayMap<T>(ctx->input(i).data<T>() + b, e - b);
      });
    });
  }
};
FT_REGISTER_KERNEL("AddN", AddNOp);

template <typename Out, typename In>
Out CastValue(In v) {
  if constexpr (std::is_same_v<Out, bool>) {
    return static_cast<float>(v) != 0.0f;
  } else if constexpr (std::is_same_v<In, bool>) {
    return static_cast<Out>(v ? 1 : 0);
  } else if constexpr (std::is_same_v<In, half> || std::is_same_v<In, bfloat16>) {
    return static_cast<Out>(static_cast<float>(v));
  } else {
    return static_cast<Out>(v);
  }
}

class CastOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const DataType dst = ctx->output_type(0);
    if (x.dtype() == dst) {
      ctx->set_output(0, x);
      return;
    }
    Tensor* out = ctx->allocate_output(0, x.shape());
    auto numeric_or_bool = [&](DataType t, auto&& fn) {
      if (t == DT_BOOL) return fn.template operator()<bool>();
      return DispatchNumericType(t, "Cast", fn);
    };
    numeric_or_bool(x.dtype(), [&]<typename In>() {
      numeric_or_bool(dst, [&]<typename Out>() {
        const In* in = x.data<In>();
        Out* o = out->data<Out>();
        for (int64_t i = 0; i < x.NumElements(); ++i) o[i] = CastValue<Out, In>(in[i]);
      });
    });
  }
};
FT_REGISTER_KERNEL("Cast", CastOp);

class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction& c)
      : OpKernel(c),
        transpose_a_(c.GetAttr<bool>("transpose_a")),
        transpose_b_(c.GetAttr<bool>("transpose_b")) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const MatMulShape shape = CheckMatMulShape(a, b, transpose_a_, transpose_b_);
    const int64_t m = shape.m, n = shape.n, k = shape.k;
    Tensor* out = ctx->allocate_output(0, TensorShape({m, n}));
    DispatchNumericType(a.dtype(), "MatMul", [&]<typename T>() {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        Gemm<T>(ctx, shape.Args<T>(a, b, out->data<T>()));
        return;
      }
      using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      Eigen::Map<const Matrix> ma(a.data<T>(), a.dim_size(0), a.dim_size(1));
      Eigen::Map<const Matrix> mb(b.data<T>(), b.dim_size(0), b.dim_size(1));
      Eigen::Map<Matrix> mo(out->data<T>(), m, n);
      if (k == 0) {
        mo.setZero();
      } else if (!transpose_a_ && !transpose_b_) {
        mo.noalias() = ma * mb;
      } else if (transpose_a_ && !transpose_b_) {
        mo.noalias() = ma.transpose() * mb;
      } else if (!transpose_a_ && transpose_b_) {
        mo.noalias() = ma * mb.transpose();
      } else {
        mo.noalias() = ma.transpose() * mb.transpose();
      }
    });
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 private:
  bool transpose_a_;
  bool transpose_b_;
};
FT_REGISTER_KERNEL("MatMul", MatMulOp);

// BatchMatMul (equal batch dimensions) and BatchMatMulV2 (broadcast batch dimensions): one
// matrix product per batch entry over the last two dimensions. Adjoint operands are read
// through strided maps, so each dtype instantiates a single Eigen product.
class BatchMatMulOp : public OpKernel {
 public:
  explicit BatchMatMulOp(OpKernelConstruction& c)
      : OpKernel(c),
        adj_x_(c.GetAttr<bool>("adj_x")),
        adj_y_(c.GetAttr<bool>("adj_y")),
        broadcast_(c.node().type() == "BatchMatMulV2") {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    if (x.dims() < 2) InvalidArgument("In[0] ndims must be >= 2: ", x.dims());
    if (y.dims() < 2) InvalidArgument("In[1] ndims must be >= 2: ", y.dims());
    const TensorShape batch_x(DimVector(x.shape().dim_sizes().begin(), x.shape().dim_sizes().end() - 2));
    const TensorShape batch_y(DimVector(y.shape().dim_sizes().begin(), y.shape().dim_sizes().end() - 2));
    TensorShape batch;
    if (broadcast_) {
      batch = BroadcastOutputShape(batch_x, batch_y, name());
    } else if (batch_x != batch_y) {
      InvalidArgument("In[0] and In[1] must have compatible batch dimensions: ", x.shape().DebugString(),
                      " vs. ", y.shape().DebugString());
    } else {
      batch = batch_x;
    }
    const int64_t rows_x = x.dim_size(x.dims() - 2), cols_x = x.dim_size(x.dims() - 1);
    const int64_t rows_y = y.dim_size(y.dims() - 2), cols_y = y.dim_size(y.dims() - 1);
    const int64_t m = adj_x_ ? cols_x : rows_x;
    const int64_t k = adj_x_ ? rows_x : cols_x;
    const int64_t k_y = adj_y_ ? cols_y : rows_y;
    const int64_t n = adj_y_ ? rows_y : cols_y;
    if (k != k_y) {
      InvalidArgument("Matrix size-incompatible: In[0]: ", x.shape().DebugString(),
                      ", In[1]: ", y.shape().DebugString());
    }
    TensorShape out_shape = batch;
    out_shape.AddDim(m);
    out_shape.AddDim(n);
    Tensor* out = ctx->allocate_output(0, out_shape);
    const int64_t batches = batch.num_elements();
    if (out_shape.num_elements() == 0) return;
    // Flat matrix index of each operand for each output batch entry.
    const DimVector sx = BroadcastStrides(batch_x, batch);
    const DimVector sy = BroadcastStrides(batch_y, batch);
    auto operand_index = [&](int64_t b, const DimVector& strides) {
      int64_t index = 0;
      for (int d = batch.dims() - 1; d >= 0; --d) {
        index += (b % batch.dim_size(d)) * strides[d];
        b /= batch.dim_size(d);
      }
      return index;
    };
    auto run = [&]<typename T>() {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        // One product per batch entry; an entry per thread when there are enough of them,
        // else each product split over the threads.
        auto product = [&](int64_t b) {
          return GemmArgs<T>{.m = m,
                             .n = n,
                             .k = k,
                             .a = x.data<T>() + operand_index(b, sx) * rows_x * cols_x,
                             .lda = cols_x,
                             .transpose_a = adj_x_,
                             .b = y.data<T>() + operand_index(b, sy) * rows_y * cols_y,
                             .ldb = cols_y,
                             .transpose_b = adj_y_,
                             .c = out->data<T>() + b * m * n,
                             .ldc = n};
        };
        ThreadPool* pool = ctx->intra_op_pool();
        const int threads = pool == nullptr ? 1 : pool->NumThreads();
        if (batches < threads) {
          for (int64_t b = 0; b < batches; ++b) Gemm<T>(ctx, product(b));
          return;
        }
        ParallelRange(ctx, batches, 2 * m * n * std::max<int64_t>(k, 1), [&](int64_t begin, int64_t end) {
          for (int64_t b = begin; b < end; ++b) GemmOnThisThread<T>(product(b));
        });
        return;
      }
      using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      using Strided = Eigen::Map<const Matrix, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
      auto view = [](const T* data, int64_t rows, int64_t cols, bool adjoint) {
        // Row-major (i, j) is data[i * cols + j]; the adjoint swaps the roles.
        return adjoint ? Strided(data, cols, rows, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(1, cols))
                       : Strided(data, rows, cols, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(cols, 1));
      };
      ParallelRange(ctx, batches, 2 * m * n * std::max<int64_t>(k, 1), [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          const T* px = x.data<T>() + operand_index(b, sx) * rows_x * cols_x;
          const T* py = y.data<T>() + operand_index(b, sy) * rows_y * cols_y;
          Eigen::Map<Matrix> mo(out->data<T>() + b * m * n, m, n);
          if (k == 0) {
            mo.setZero();
          } else {
            mo.noalias() = view(px, rows_x, cols_x, adj_x_) * view(py, rows_y, cols_y, adj_y_);
          }
        }
      });
    };
    switch (x.dtype()) {
      case DT_FLOAT:
        run.template operator()<float>();
        break;
      case DT_DOUBLE:
        run.template operator()<double>();
        break;
      case DT_INT32:
        run.template operator()<int32_t>();
        break;
      case DT_INT64:
        run.template operator()<int64_t>();
        break;
      case DT_HALF:
        run.template operator()<half>();
        break;
      case DT_BFLOAT16:
        run.template operator()<bfloat16>();
        break;
      default:
        InvalidArgument(type_string(), " '", name(), "' has no kernel for ", DataTypeString(x.dtype()));
    }
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 private:
  bool adj_x_;
  bool adj_y_;
  bool broadcast_;
};
FT_REGISTER_KERNEL("BatchMatMul", BatchMatMulOp);
FT_REGISTER_KERNEL("BatchMatMulV2", BatchMatMulOp);

class LogicalNotOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, x.shape());
    const bool* in = x.data<bool>();
    bool* o = out->data<bool>();
    for (int64_t i = 0; i < x.NumElements(); ++i) o[i] = !in[i];
  }
};
FT_REGISTER_KERNEL("LogicalNot", LogicalNotOp);

}  // namespace
}  // namespace flowtrain
