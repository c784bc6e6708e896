// Kernels of the arithmetic ops (Add, Sub, Mul, MatMul, LogicalNot). This translation unit
// holds the heavy Eigen template code so that few files pay for compiling it.
#include <cmath>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/cwise_binary.h"
#include "flowtrain/kernels/op_kernel.h"

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
      InvalidArgument("Incompatible shapes: ", x.DebugString(), " vs. ", y.DebugString(),
                      " in ", op);
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

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Below this many elements, an operation runs on the calling thread.
constexpr int64_t kParallelThreshold = 32768;

template <typename Fn>
void ForRange(OpKernelContext* ctx, int64_t n, const Fn& fn) {
  if (n >= kParallelThreshold && ctx->intra_op_pool() != nullptr &&
      ctx->intra_op_pool()->NumThreads() > 1) {
    ctx->intra_op_pool()->ParallelFor(n, 4, [&](int64_t b, int64_t e) { fn(b, e); });
  } else {
    fn(0, n);
  }
}

template <typename X>
constexpr bool kIsArray = requires(const X& x) { x.size(); };

struct AddFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) { return a + b; }
};
struct SubFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) { return a - b; }
};
struct MulFn {
  static constexpr bool kDivides = false;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) { return a * b; }
};
struct RealDivFn {
  static constexpr bool kDivides = true;
  template <typename A, typename B>
  static auto Apply(const A& a, const B& b) { return a / b; }
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
    const T q = x / y;
    // Round toward negative infinity when the signs differ and there is a remainder.
    if constexpr (std::is_signed_v<T>) {
      if ((x % y != 0) && ((x < 0) != (y < 0))) return q - 1;
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

template <typename Fn>
class BinaryCwiseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    if (x.dtype() == DT_STRING) {
      ComputeStrings(ctx, x, y);
      return;
    }
    DispatchNumericType(x.dtype(), type_string(), [&]<typename T>() { ComputeTyped<T>(ctx, x, y); });
  }

 private:
  template <typename T>
  void ComputeTyped(OpKernelContext* ctx, const Tensor& x, const Tensor& y) {
    if constexpr (Fn::kDivides && std::is_integral_v<T>) {
      for (const T v : y.flat<T>()) {
        if (v == T(0)) InvalidArgument("Integer division by zero in ", name());
      }
    }
    const int64_t nx = x.NumElements();
    const int64_t ny = y.NumElements();
    if (x.shape() == y.shape()) {
      Tensor* out = ctx->allocate_output(0, x.shape());
      const T* px = x.data<T>();
      const T* py = y.data<T>();
      T* po = out->data<T>();
      if (nx == 1) {
        po[0] = static_cast<T>(Fn::Apply(px[0], py[0]));
        return;
      }
      ForRange(ctx, nx, [&](int64_t b, int64_t e) {
        ArrayMap<T>(po + b, e - b) = Fn::Apply(ConstArrayMap<T>(px + b, e - b), ConstArrayMap<T>(py + b, e - b));
      });
      return;
    }
    if (ny == 1 && y.dims() <= x.dims()) {
      Tensor* out = ctx->allocate_output(0, x.shape());
      const T s = y.data<T>()[0];
      const T* px = x.data<T>();
      T* po = out->data<T>();
      ForRange(ctx, nx, [&](int64_t b, int64_t e) {
        ArrayMap<T>(po + b, e - b) = Fn::Apply(ConstArrayMap<T>(px + b, e - b), s);
      });
      return;
    }
    if (nx == 1 && x.dims() <= y.dims()) {
      Tensor* out = ctx->allocate_output(0, y.shape());
      const T s = x.data<T>()[0];
      const T* py = y.data<T>();
      T* po = out->data<T>();
      ForRange(ctx, ny, [&](int64_t b, int64_t e) {
        ArrayMap<T>(po + b, e - b) = Fn::Apply(s, ConstArrayMap<T>(py + b, e - b));
      });
      return;
    }
    const TensorShape out_shape = BroadcastOutputShape(x.shape(), y.shape(), name());
    Tensor* out = ctx->allocate_output(0, out_shape);
    T* po = out->data<T>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    const int64_t n = out_shape.num_elements();
    if (n == 0) return;
    // Rows of the innermost dimension: a row of y repeated over x (bias-add shape) is common.
    const int rank = out_shape.dims();
    const int64_t inner = out_shape.dim_size(rank - 1);
    const DimVector sx = BroadcastStrides(x.shape(), out_shape);
    const DimVector sy = BroadcastStrides(y.shape(), out_shape);
    const int64_t rows = n / inner;
    ForRange(ctx, rows, [&](int64_t row_begin, int64_t row_end) {
      for (int64_t row = row_begin; row < row_end; ++row) {
        int64_t ox = 0, oy = 0, rest = row;
        for (int d = rank - 2; d >= 0; --d) {
          const int64_t coord = rest % out_shape.dim_size(d);
          rest /= out_shape.dim_size(d);
          ox += coord * sx[d];
          oy += coord * sy[d];
        }
        T* o = po + row * inner;
        const int64_t step_x = sx[rank - 1];
        const int64_t step_y = sy[rank - 1];
        if (step_x == 1 && step_y == 1) {
          ArrayMap<T>(o, inner) = Fn::Apply(ConstArrayMap<T>(px + ox, inner), ConstArrayMap<T>(py + oy, inner));
        } else if (step_x == 1 && step_y == 0) {
          ArrayMap<T>(o, inner) = Fn::Apply(ConstArrayMap<T>(px + ox, inner), py[oy]);
        } else if (step_x == 0 && step_y == 1) {
          ArrayMap<T>(o, inner) = Fn::Apply(px[ox], ConstArrayMap<T>(py + oy, inner));
        } else {
          for (int64_t i = 0; i < inner; ++i) {
            o[i] = static_cast<T>(Fn::Apply(px[ox + i * step_x], py[oy + i * step_y]));
          }
        }
      }
    });
  }

  void ComputeStrings(OpKernelContext* ctx, const Tensor& x, const Tensor& y) {
    if constexpr (!std::is_same_v<Fn, AddFn>) {
      InvalidArgument(type_string(), " does not support strings");
    } else {
      const TensorShape out_shape = BroadcastOutputShape(x.shape(), y.shape(), name());
      Tensor* out = ctx->allocate_output(0, out_shape);
      const DimVector sx = BroadcastStrides(x.shape(), out_shape);
      const DimVector sy = BroadcastStrides(y.shape(), out_shape);
      auto o = out->flat<std::string>();
      for (int64_t i = 0; i < out_shape.num_elements(); ++i) {
        int64_t ox = 0, oy = 0, rest = i;
        for (int d = out_shape.dims() - 1; d >= 0; --d) {
          const int64_t coord = rest % out_shape.dim_size(d);
          rest /= out_shape.dim_size(d);
          ox += coord * sx[d];
          oy += coord * sy[d];
        }
        o[i] = x.flat<std::string>()[ox] + y.flat<std::string>()[oy];
      }
    }
  }
};

FT_REGISTER_KERNEL("Add", BinaryCwiseOp<AddFn>);
FT_REGISTER_KERNEL("AddV2", BinaryCwiseOp<AddFn>);
FT_REGISTER_KERNEL("Sub", BinaryCwiseOp<SubFn>);
FT_REGISTER_KERNEL("Mul", BinaryCwiseOp<MulFn>);
FT_REGISTER_KERNEL("RealDiv", BinaryCwiseOp<RealDivFn>);
FT_REGISTER_KERNEL("FloorDiv", BinaryCwiseOp<FloorDivFn>);
FT_REGISTER_KERNEL("Maximum", BinaryCwiseOp<MaximumFn>);
FT_REGISTER_KERNEL("Minimum", BinaryCwiseOp<MinimumFn>);

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
        InvalidArgument("Inputs to operation ", name(), " of type AddN must have the same size and "
                        "shape.  Input 0: ", first.shape().DebugString(), " != input ", i, ": ",
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
    if (a.dims() != 2 || b.dims() != 2) {
      InvalidArgument("In[0] and In[1] must be matrices: In[0]: ", a.shape().DebugString(),
                      ", In[1]: ", b.shape().DebugString());
    }
    const int64_t m = a.dim_size(transpose_a_ ? 1 : 0);
    const int64_t k = a.dim_size(transpose_a_ ? 0 : 1);
    const int64_t kb = b.dim_size(transpose_b_ ? 1 : 0);
    const int64_t n = b.dim_size(transpose_b_ ? 0 : 1);
    if (k != kb) {
      InvalidArgument("Matrix size-incompatible: In[0]: ", a.shape().DebugString(),
                      ", In[1]: ", b.shape().DebugString());
    }
    Tensor* out = ctx->allocate_output(0, TensorShape({m, n}));
    DispatchNumericType(a.dtype(), "MatMul", [&]<typename T>() {
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
