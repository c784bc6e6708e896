// Kernels of the reductions (Sum, Mean, Max, Min, Prod). The input is viewed as alternating
// kept and reduced groups of dimensions; the common layouts — everything reduced, a reduced
// prefix ([R, inner], e.g. bias gradients) and a reduced suffix ([outer, R]) — take
// vectorized paths (Eigen arrays for float and double sums and means), other layouts a
// strided walk.
#include <Eigen/Core>
#include <limits>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

// Accumulates in float for 16-bit floats, as TF does, to keep sums accurate.
template <typename T>
using Accumulator = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd };

template <typename A>
A InitialValue(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kMean:
      return A(0);
    case ReduceKind::kProd:
      return A(1);
    case ReduceKind::kMax:
      if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
      return std::numeric_limits<A>::lowest();
    case ReduceKind::kMin:
      if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
      return std::numeric_limits<A>::max();
  }
  return A(0);
}

template <typename A>
A Combine(ReduceKind kind, A acc, A v) {
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kMean:
      return acc + v;
    case ReduceKind::kProd:
      return acc * v;
    case ReduceKind::kMax:
      return v > acc ? v : acc;
    case ReduceKind::kMin:
      return v < acc ? v : acc;
  }
  return acc;
}

template <ReduceKind kKind>
class ReductionOp : public OpKernel {
 public:
  explicit ReductionOp(OpKernelConstruction& c) : OpKernel(c), keep_dims_(c.GetAttr<bool>("keep_dims")) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& axes = ctx->input(1);
    if (axes.dims() > 1)
      InvalidArgument("reduction_indices must be a scalar or vector, got ", axes.shape().DebugString());
    const int rank = input.dims();
    std::vector<bool> reduced(rank, false);
    for (int64_t i = 0; i < axes.NumElements(); ++i) {
      int64_t a = axes.dtype() == DT_INT32 ? axes.flat<int32_t>()[i] : axes.flat<int64_t>()[i];
      if (a < -rank || a >= rank) {
        InvalidArgument("Invalid reduction dimension (", a, " for input with ", rank, " dimension(s)");
      }
      reduced[a < 0 ? a + rank : a] = true;
    }
    DimVector out_dims;
    for (int d = 0; d < rank; ++d) {
      if (!reduced[d])
        out_dims.push_back(input.dim_size(d));
      else if (keep_dims_)
        out_dims.push_back(1);
    }
    Tensor* out = ctx->allocate_output(0, TensorShape(out_dims));
    DispatchNumericType(input.dtype(), type_string(), [&]<typename T>() { Reduce<T>(input, reduced, out); });
  }

 private:
  template <typename T>
  void Reduce(const Tensor& input, const std::vector<bool>& reduced, Tensor* out) {
    using A = Accumulator<T>;
    const T* in = input.data<T>();
    T* o = out->data<T>();
    const int64_t n = input.NumElements();
    const int64_t out_n = out->NumElements();
    const int64_t count = out_n == 0 ? 0 : n / std::max<int64_t>(out_n, 1);
    auto finish = [&](A acc) -> T {
      if constexpr (kKind == ReduceKind::kMean) {
        return static_cast<T>(count == 0 ? acc : acc / static_cast<A>(count));
      }
      return static_cast<T>(acc);
    };
    if (out_n == 0) return;
    if (n == 0) {
      for (int64_t i = 0; i < out_n; ++i) o[i] = finish(InitialValue<A>(kKind));
      return;
    }
    // Collapse into groups of consecutive kept / reduced dimensions.
    struct Group {
      bool reduced;
      int64_t size;
    };
    std::vector<Group> groups;
    for (int d = 0; d < input.dims(); ++d) {
      if (input.dim_size(d) == 1) continue;  // size-1 dims change nothing
      if (!groups.empty() && groups.back().reduced == reduced[d]) {
        groups.back().size *= input.dim_size(d);
      } else {
        groups.push_back({static_cast<bool>(reduced[d]), input.dim_size(d)});
      }
    }
    if (groups.empty() || (groups.size() == 1 && !groups[0].reduced)) {
      for (int64_t i = 0; i < n; ++i)
        o[i] = finish(Combine<A>(kKind, InitialValue<A>(kKind), static_cast<A>(in[i])));
      return;
    }
    if (groups.size() == 1) {  // everything reduced
      A acc = InitialValue<A>(kKind);
      if constexpr (kKind == ReduceKind::kSum || kKind == ReduceKind::kMean) {
        if constexpr (std::is_same_v<A, T>) {
          acc = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(in, n).sum();
        } else {
          for (int64_t i = 0; i < n; ++i) acc += static_cast<A>(in[i]);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) acc = Combine<A>(kKind, acc, static_cast<A>(in[i]));
      }
      o[0] = finish(acc);
      return;
    }
    // Sums and means (maxima keep the scalar walk: its NaN handling is the documented one).
    constexpr bool kVectorized =
        std::is_same_v<A, T> && (std::is_same_v<T, float> || std::is_same_v<T, double>)&&(
                                    kKind == ReduceKind::kSum || kKind == ReduceKind::kMean);
    if (groups.size() == 2 && groups[0].reduced && kVectorized) {  // [R, inner]: rows of Eigen arrays
      const int64_t r = groups[0].size, inner = groups[1].size;
      using Row = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> acc(o, inner);
      acc = Row(in, inner);
      for (int64_t i = 1; i < r; ++i) acc += Row(in + i * inner, inner);
      if constexpr (kKind == ReduceKind::kMean) acc /= static_cast<T>(r);
      return;
    }
    if (groups.size() == 2 && groups[1].reduced && kVectorized) {  // [outer, R]: a reduction per row
      const int64_t outer = groups[0].size, r = groups[1].size;
      for (int64_t i = 0; i < outer; ++i) {
        o[i] = finish(Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(in + i * r, r).sum());
      }
      return;
    }
    if (groups.size() == 2 && groups[0].reduced) {  // [R, inner]
      const int64_t r = groups[0].size, inner = groups[1].size;
      std::vector<A> acc(inner, InitialValue<A>(kKind));
      for (int64_t i = 0; i < r; ++i) {
        const T* row = in + i * inner;
        for (int64_t j = 0; j < inner; ++j) acc[j] = Combine<A>(kKind, acc[j], static_cast<A>(row[j]));
      }
      for (int64_t j = 0; j < inner; ++j) o[j] = finish(acc[j]);
      return;
    }
    if (groups.size() == 2 && groups[1].reduced) {  // [outer, R]
      const int64_t outer = groups[0].size, r = groups[1].size;
      for (int64_t i = 0; i < outer; ++i) {
        A acc = InitialValue<A>(kKind);
        const T* row = in + i * r;
        for (int64_t j = 0; j < r; ++j) acc = Combine<A>(kKind, acc, static_cast<A>(row[j]));
        o[i] = finish(acc);
      }
      return;
    }
    // General layout: walk the input, mapping each element to its output slot.
    std::vector<int64_t> sizes, out_strides;
    int64_t stride = 1;
    for (int g = static_cast<int>(groups.size()) - 1; g >= 0; --g) {
      sizes.insert(sizes.begin(), groups[g].size);
      out_strides.insert(out_strides.begin(), groups[g].reduced ? 0 : stride);
      if (!groups[g].reduced) stride *= groups[g].size;
    }
    std::vector<A> acc(out_n, InitialValue<A>(kKind));
    std::vector<int64_t> index(sizes.size(), 0);
    int64_t out_index = 0;
    for (int64_t i = 0; i < n; ++i) {
      acc[out_index] = Combine<A>(kKind, acc[out_index], static_cast<A>(in[i]));
      for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
        out_index += out_strides[d];
        if (++index[d] < sizes[d]) break;
        out_index -= out_strides[d] * sizes[d];
        index[d] = 0;
      }
    }
    for (int64_t i = 0; i < out_n; ++i) o[i] = finish(acc[i]);
  }

  bool keep_dims_;
};

FT_REGISTER_KERNEL("Sum", ReductionOp<ReduceKind::kSum>);
FT_REGISTER_KERNEL("Mean", ReductionOp<ReduceKind::kMean>);
FT_REGISTER_KERNEL("Max", ReductionOp<ReduceKind::kMax>);
FT_REGISTER_KERNEL("Min", ReductionOp<ReduceKind::kMin>);
FT_REGISTER_KERNEL("Prod", ReductionOp<ReduceKind::kProd>);

}  // namespace
}  // namespace flowtrain

// ---- ArgMax / ArgMin and the cumulative scans Cumsum / Cumprod ----

namespace flowtrain {
namespace {

int64_t ScalarIndex(const Tensor& t, std::string_view what) {
  if (t.NumElements() != 1) InvalidArgument(what, " must be a scalar, got shape ", t.shape().DebugString());
  return t.dtype() == DT_INT32 ? t.flat<int32_t>()[0] : t.flat<int64_t>()[0];
}

// [outer, length, inner] view of `shape` around `axis`.
void AxisSplit(const TensorShape& shape, int axis, int64_t* outer, int64_t* length, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int d = 0; d < axis; ++d) *outer *= shape.dim_size(d);
  *length = shape.dim_size(axis);
  for (int d = axis + 1; d < shape.dims(); ++d) *inner *= shape.dim_size(d);
}

template <bool kMax>
class ArgOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    int64_t axis = ScalarIndex(ctx->input(1), "dimension");
    const int rank = input.dims();
    if (axis < -rank || axis >= rank) {
      InvalidArgument("Expected dimension in the range [", -rank, ", ", rank, "), but got ", axis);
    }
    if (axis < 0) axis += rank;
    if (input.dim_size(static_cast<int>(axis)) == 0) {
      InvalidArgument("Reduction axis ", axis, " is empty in shape ", input.shape().DebugString());
    }
    TensorShape out_shape = input.shape();
    out_shape.RemoveDim(static_cast<int>(axis));
    Tensor* out = ctx->allocate_output(0, out_shape);
    int64_t outer, length, inner;
    AxisSplit(input.shape(), static_cast<int>(axis), &outer, &length, &inner);
    DispatchNumericType(input.dtype(), type_string(), [&]<typename T>() {
      const T* in = input.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const T* column = in + o * length * inner + i;
          int64_t best = 0;
          for (int64_t j = 1; j < length; ++j) {
            // Strict comparison keeps the first index on ties, as TF.
            if (kMax ? column[j * inner] > column[best * inner] : column[j * inner] < column[best * inner])
              best = j;
          }
          if (out->dtype() == DT_INT32) {
            out->flat<int32_t>()[o * inner + i] = static_cast<int32_t>(best);
          } else {
            out->flat<int64_t>()[o * inner + i] = best;
          }
        }
      }
    });
  }
};
FT_REGISTER_KERNEL("ArgMax", ArgOp<true>);
FT_REGISTER_KERNEL("ArgMin", ArgOp<false>);

template <bool kProduct>
class ScanOp : public OpKernel {
 public:
  explicit ScanOp(OpKernelConstruction& c)
      : OpKernel(c), exclusive_(c.GetAttr<bool>("exclusive")), reverse_(c.GetAttr<bool>("reverse")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    int64_t axis = ScalarIndex(ctx->input(1), "axis");
    const int rank = input.dims();
    if (axis < -rank || axis >= rank) {
      InvalidArgument("ScanOp: Expected scan axis in the range [", -rank, ", ", rank, "), but got ", axis);
    }
    if (axis < 0) axis += rank;
    Tensor* out = ctx->allocate_output(0, input.shape());
    if (input.NumElements() == 0) return;
    int64_t outer, length, inner;
    AxisSplit(input.shape(), static_cast<int>(axis), &outer, &length, &inner);
    DispatchNumericType(input.dtype(), type_string(), [&]<typename T>() {
      using A = Accumulator<T>;
      const T* in = input.data<T>();
      T* o = out->data<T>();
      for (int64_t b = 0; b < outer; ++b) {
        for (int64_t i = 0; i < inner; ++i) {
          A acc = kProduct ? A(1) : A(0);
          for (int64_t step = 0; step < length; ++step) {
            const int64_t j = reverse_ ? length - 1 - step : step;
            const int64_t at = (b * length + j) * inner + i;
            const A value = static_cast<A>(in[at]);
            if (!exclusive_) acc = kProduct ? A(acc * value) : A(acc + value);
            o[at] = static_cast<T>(acc);
            if (exclusive_) acc = kProduct ? A(acc * value) : A(acc + value);
          }
        }
      }
    });
  }

 private:
  bool exclusive_;
  bool reverse_;
};
FT_REGISTER_KERNEL("Cumsum", ScanOp<false>);
FT_REGISTER_KERNEL("Cumprod", ScanOp<true>);

}  // namespace
}  // namespace flowtrain
