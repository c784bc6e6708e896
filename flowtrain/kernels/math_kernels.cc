// Kernels of Pow, TanhGrad, SigmoidGrad, Neg, AddN, Cast, MatMul, BatchMatMul and LogicalNot,
// and the broadcasting rules every binary elementwise kernel shares. The other binary
// elementwise kernels are in cwise_arithmetic_kernels.cc and cwise_division_kernels.cc: each
// instantiates its functors for every dtype, and in three files they compile in parallel.
// Float and double products go to gemm.h's blocked, pool-split GEMM.
#include <cmath>
#include <type_traits>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/cwise_binary.h"
#include "flowtrain/kernels/internal/cwise_binary_functors.h"
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

FT_REGISTER_KERNEL("Pow", BinaryCwiseOp<PowFn>);
FT_REGISTER_KERNEL("TanhGrad", BinaryCwiseOp<TanhGradFn>);
FT_REGISTER_KERNEL("SigmoidGrad", BinaryCwiseOp<SigmoidGradFn>);

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
