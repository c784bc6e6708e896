// Kernels of the 2-D convolution and pooling ops (NHWC, filters HWIO), float32 and float64.
//
// Convolutions are im2col + Eigen matrix products: a block of output positions gathers its
// input patches into a [positions, rows*cols*in_depth] scratch matrix (the filter is already
// the matching [rows*cols*in_depth, out_depth] matrix), so each block is one GEMM. Blocks are
// sized to stay in cache and split over the intra-op pool, each shard with its own scratch.
// A 1x1 stride-1 convolution skips im2col: the input is already the patch matrix.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/op_kernel.h"
#include "flowtrain/kernels/work_sharder.h"
#include "flowtrain/ops/nn_window.h"

namespace flowtrain {
namespace {

template <typename T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MatrixMap = Eigen::Map<Matrix<T>>;
template <typename T>
using ConstMatrixMap = Eigen::Map<const Matrix<T>>;
template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Scratch elements per im2col block (512 KiB of floats): big enough for an efficient GEMM,
// small enough to stay in L2.
constexpr int64_t kBlockElements = 1 << 17;

template <typename Fn>
void DispatchFloat(DataType dtype, const OpKernel& kernel, Fn&& fn) {
  switch (BaseType(dtype)) {
    case DT_FLOAT: fn.template operator()<float>(); return;
    case DT_DOUBLE: fn.template operator()<double>(); return;
    default:
      InvalidArgument(kernel.type_string(), " '", kernel.name(), "' has no CPU kernel for ",
                      DataTypeString(dtype));
  }
}

// A shape given as a 1-D int32/int64 tensor of 4 elements (input_sizes, filter_sizes, ...).
TensorShape ShapeFromTensor(const Tensor& t, std::string_view what) {
  if (t.dims() != 1 || t.NumElements() != 4) {
    InvalidArgument(what, " must be a 1-D tensor of 4 elements, got shape ", t.shape().DebugString());
  }
  DimVector dims(4);
  for (int i = 0; i < 4; ++i) {
    dims[i] = t.dtype() == DT_INT32 ? t.flat<int32_t>()[i] : t.flat<int64_t>()[i];
    if (dims[i] < 0) InvalidArgument(what, " has a negative dimension: ", dims[i]);
  }
  return TensorShape(std::move(dims));
}

// ---- Convolution ----

struct ConvDims {
  int64_t batch, in_rows, in_cols, in_depth;
  int64_t filter_rows, filter_cols, out_depth;
  int64_t stride_rows, stride_cols;
  int64_t out_rows, out_cols, pad_rows, pad_cols;

  int64_t patch_size() const { return filter_rows * filter_cols * in_depth; }
  int64_t positions() const { return batch * out_rows * out_cols; }
  int64_t positions_per_image() const { return out_rows * out_cols; }
  TensorShape input_shape() const { return TensorShape({batch, in_rows, in_cols, in_depth}); }
  TensorShape output_shape() const { return TensorShape({batch, out_rows, out_cols, out_depth}); }
  // The input is its own patch matrix: a 1x1 filter moving one pixel at a time.
  bool pointwise() const {
    return filter_rows == 1 && filter_cols == 1 && stride_rows == 1 && stride_cols == 1;
  }
  // Output positions per im2col block.
  int64_t block_positions() const {
    return std::clamp<int64_t>(kBlockElements / std::max<int64_t>(patch_size(), 1), 1,
                               std::max<int64_t>(positions(), 1));
  }
};

ConvDims MakeConvDims(const TensorShape& input, const TensorShape& filter,
                      const std::vector<int64_t>& strides, Padding padding) {
  if (input.dims() != 4) InvalidArgument("input must be 4-dimensional", input.DebugString());
  if (filter.dims() != 4) InvalidArgument("filter must be 4-dimensional: ", filter.DebugString());
  if (input.dim_size(3) != filter.dim_size(2)) {
    InvalidArgument("input and filter must have the same depth: ", input.dim_size(3), " vs ",
                    filter.dim_size(2));
  }
  ConvDims d;
  d.batch = input.dim_size(0);
  d.in_rows = input.dim_size(1);
  d.in_cols = input.dim_size(2);
  d.in_depth = input.dim_size(3);
  d.filter_rows = filter.dim_size(0);
  d.filter_cols = filter.dim_size(1);
  d.out_depth = filter.dim_size(3);
  d.stride_rows = strides[1];
  d.stride_cols = strides[2];
  const WindowDim rows = ComputeWindowDim(d.in_rows, d.filter_rows, d.stride_rows, padding);
  const WindowDim cols = ComputeWindowDim(d.in_cols, d.filter_cols, d.stride_cols, padding);
  d.out_rows = rows.output;
  d.out_cols = cols.output;
  d.pad_rows = rows.pad_before;
  d.pad_cols = cols.pad_before;
  return d;
}

// Calls fn(row_of_patch, input_offset, count) for each run of `count` consecutive patch
// entries of output position p that come from the input at `input_offset`, and
// fn(row_of_patch, -1, count) for runs that fall into the padding.
template <typename Fn>
void ForEachPatchRun(const ConvDims& d, int64_t p, const Fn& fn) {
  const int64_t ow = p % d.out_cols;
  const int64_t rest = p / d.out_cols;
  const int64_t oh = rest % d.out_rows;
  const int64_t n = rest / d.out_rows;
  const int64_t ih0 = oh * d.stride_rows - d.pad_rows;
  const int64_t iw0 = ow * d.stride_cols - d.pad_cols;
  const int64_t row_len = d.filter_cols * d.in_depth;
  // Filter columns that land inside the input, the same for every filter row.
  const int64_t fc_begin = std::max<int64_t>(0, -iw0);
  const int64_t fc_end = std::min<int64_t>(d.filter_cols, d.in_cols - iw0);
  for (int64_t fr = 0; fr < d.filter_rows; ++fr) {
    const int64_t ih = ih0 + fr;
    const int64_t at = fr * row_len;
    if (ih < 0 || ih >= d.in_rows || fc_begin >= fc_end) {
      fn(at, int64_t{-1}, row_len);
      continue;
    }
    if (fc_begin > 0) fn(at, int64_t{-1}, fc_begin * d.in_depth);
    const int64_t offset = ((n * d.in_rows + ih) * d.in_cols + iw0 + fc_begin) * d.in_depth;
    fn(at + fc_begin * d.in_depth, offset, (fc_end - fc_begin) * d.in_depth);
    if (fc_end < d.filter_cols) {
      fn(at + fc_end * d.in_depth, int64_t{-1}, (d.filter_cols - fc_end) * d.in_depth);
    }
  }
}

// patches[p - begin] = the input patch of output position p, for p in [begin, end).
template <typename T>
void Im2Col(const ConvDims& d, const T* input, int64_t begin, int64_t end, T* patches) {
  const int64_t k = d.patch_size();
  for (int64_t p = begin; p < end; ++p) {
    T* row = patches + (p - begin) * k;
    ForEachPatchRun(d, p, [&](int64_t at, int64_t offset, int64_t count) {
      if (offset < 0) {
        std::fill_n(row + at, count, T(0));
      } else {
        std::memcpy(row + at, input + offset, count * sizeof(T));
      }
    });
  }
}

// The adjoint of Im2Col: adds each patch back into the input positions it was taken from.
template <typename T>
void Col2ImAdd(const ConvDims& d, const T* patches, int64_t begin, int64_t end, T* input) {
  const int64_t k = d.patch_size();
  for (int64_t p = begin; p < end; ++p) {
    const T* row = patches + (p - begin) * k;
    ForEachPatchRun(d, p, [&](int64_t at, int64_t offset, int64_t count) {
      if (offset >= 0) ArrayMap<T>(input + offset, count) += ConstArrayMap<T>(row + at, count);
    });
  }
}

// The attrs every convolution kernel reads.
class ConvKernelBase : public OpKernel {
 public:
  explicit ConvKernelBase(OpKernelConstruction& c)
      : OpKernel(c),
        strides_(c.GetAttr<std::vector<int64_t>>("strides")),
        padding_(ParsePadding(c.GetAttr<std::string>("padding"))) {
    CheckWindowAttr(strides_, "strides");
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 protected:
  void CheckOutBackprop(const ConvDims& d, const Tensor& out_backprop) const {
    if (out_backprop.shape() != d.output_shape()) {
      InvalidArgument(type_string(), ": out_backprop has shape ", out_backprop.shape().DebugString(),
                      " but the convolution's output has shape ", d.output_shape().DebugString());
    }
  }

  std::vector<int64_t> strides_;
  Padding padding_;
};

class Conv2DOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    const ConvDims d = MakeConvDims(input.shape(), filter.shape(), strides_, padding_);
    Tensor* out = ctx->allocate_output(0, d.output_shape());
    DispatchFloat(input.dtype(), *this, [&]<typename T>() { Run<T>(ctx, d, input, filter, out); });
  }

 private:
  template <typename T>
  void Run(OpKernelContext* ctx, const ConvDims& d, const Tensor& input, const Tensor& filter, Tensor* out) {
    const int64_t k = d.patch_size();
    const int64_t positions = d.positions();
    T* po = out->data<T>();
    if (positions == 0 || d.out_depth == 0) return;
    if (k == 0) {
      std::fill_n(po, out->NumElements(), T(0));
      return;
    }
    ConstMatrixMap<T> w(filter.data<T>(), k, d.out_depth);
    const int64_t flops = positions * k * d.out_depth;
    if (d.pointwise()) {
      const int shards = NumShards(ctx, flops, 1 << 18);
      ParallelShards(ctx, shards, [&](int s) {
        auto [begin, end] = ShardRange(positions, shards, s);
        MatrixMap<T>(po + begin * d.out_depth, end - begin, d.out_depth).noalias() =
            ConstMatrixMap<T>(input.data<T>() + begin * k, end - begin, k) * w;
      });
      return;
    }
    const int64_t block = d.block_positions();
    const int64_t blocks = (positions + block - 1) / block;
    const int shards = std::min<int>(NumShards(ctx, flops, 1 << 18), static_cast<int>(blocks));
    Tensor scratch(input.dtype(), TensorShape({shards, block * k}));
    ParallelShards(ctx, shards, [&](int s) {
      T* patches = scratch.data<T>() + s * block * k;
      auto [first, last] = ShardRange(blocks, shards, s);
      for (int64_t b = first; b < last; ++b) {
        const int64_t begin = b * block;
        const int64_t end = std::min(positions, begin + block);
        Im2Col(d, input.data<T>(), begin, end, patches);
        MatrixMap<T>(po + begin * d.out_depth, end - begin, d.out_depth).noalias() =
            ConstMatrixMap<T>(patches, end - begin, k) * w;
      }
    });
  }
};
FT_REGISTER_KERNEL("Conv2D", Conv2DOp);

class Conv2DBackpropInputOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const TensorShape input_shape = ShapeFromTensor(ctx->input(0), "Conv2DBackpropInput: input_sizes");
    const Tensor& filter = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    const ConvDims d = MakeConvDims(input_shape, filter.shape(), strides_, padding_);
    CheckOutBackprop(d, grad);
    Tensor* out = ctx->allocate_output(0, input_shape);
    DispatchFloat(grad.dtype(), *this, [&]<typename T>() { Run<T>(ctx, d, filter, grad, out); });
  }

 private:
  template <typename T>
  void Run(OpKernelContext* ctx, const ConvDims& d, const Tensor& filter, const Tensor& grad, Tensor* out) {
    const int64_t k = d.patch_size();
    T* pi = out->data<T>();
    std::fill_n(pi, out->NumElements(), T(0));
    if (d.positions() == 0 || k == 0 || d.out_depth == 0) return;
    ConstMatrixMap<T> w(filter.data<T>(), k, d.out_depth);
    const T* pg = grad.data<T>();
    const int64_t flops = d.positions() * k * d.out_depth;
    if (d.pointwise()) {
      const int64_t positions = d.positions();
      const int shards = NumShards(ctx, flops, 1 << 18);
      ParallelShards(ctx, shards, [&](int s) {
        auto [begin, end] = ShardRange(positions, shards, s);
        MatrixMap<T>(pi + begin * k, end - begin, k).noalias() =
            ConstMatrixMap<T>(pg + begin * d.out_depth, end - begin, d.out_depth) * w.transpose();
      });
      return;
    }
    // Shards own whole images, so their scatter-adds never overlap.
    const int64_t block = d.block_positions();
    const int shards = std::min<int>(NumShards(ctx, flops, 1 << 18), static_cast<int>(d.batch));
    Tensor scratch(grad.dtype(), TensorShape({shards, block * k}));
    ParallelShards(ctx, shards, [&](int s) {
      T* patches = scratch.data<T>() + s * block * k;
      auto [first_image, last_image] = ShardRange(d.batch, shards, s);
      const int64_t stop = last_image * d.positions_per_image();
      for (int64_t begin = first_image * d.positions_per_image(); begin < stop; begin += block) {
        const int64_t end = std::min(stop, begin + block);
        MatrixMap<T>(patches, end - begin, k).noalias() =
            ConstMatrixMap<T>(pg + begin * d.out_depth, end - begin, d.out_depth) * w.transpose();
        Col2ImAdd(d, patches, begin, end, pi);
      }
    });
  }
};
FT_REGISTER_KERNEL("Conv2DBackpropInput", Conv2DBackpropInputOp);

class Conv2DBackpropFilterOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const TensorShape filter_shape = ShapeFromTensor(ctx->input(1), "Conv2DBackpropFilter: filter_sizes");
    const Tensor& grad = ctx->input(2);
    const ConvDims d = MakeConvDims(input.shape(), filter_shape, strides_, padding_);
    CheckOutBackprop(d, grad);
    Tensor* out = ctx->allocate_output(0, filter_shape);
    DispatchFloat(input.dtype(), *this, [&]<typename T>() { Run<T>(ctx, d, input, grad, out); });
  }

 private:
  template <typename T>
  void Run(OpKernelContext* ctx, const ConvDims& d, const Tensor& input, const Tensor& grad, Tensor* out) {
    const int64_t k = d.patch_size();
    const int64_t positions = d.positions();
    T* pw = out->data<T>();
    std::fill_n(pw, out->NumElements(), T(0));
    if (positions == 0 || k == 0 || d.out_depth == 0) return;
    const T* pg = grad.data<T>();
    const int64_t flops = positions * k * d.out_depth;
    const int64_t block = d.pointwise() ? positions : d.block_positions();
    const int64_t blocks = (positions + block - 1) / block;
    const int shards = d.pointwise() ? NumShards(ctx, flops, 1 << 18)
                                     : std::min<int>(NumShards(ctx, flops, 1 << 18), static_cast<int>(blocks));
    // Each shard sums its positions' contributions into its own [k, out_depth] partial.
    Tensor partials(input.dtype(), TensorShape({shards, k * d.out_depth}));
    Tensor scratch(input.dtype(), TensorShape({d.pointwise() ? 0 : shards, block * k}));
    ParallelShards(ctx, shards, [&](int s) {
      MatrixMap<T> acc(partials.data<T>() + s * k * d.out_depth, k, d.out_depth);
      acc.setZero();
      if (d.pointwise()) {
        auto [begin, end] = ShardRange(positions, shards, s);
        acc.noalias() += ConstMatrixMap<T>(input.data<T>() + begin * k, end - begin, k).transpose() *
                         ConstMatrixMap<T>(pg + begin * d.out_depth, end - begin, d.out_depth);
        return;
      }
      T* patches = scratch.data<T>() + s * block * k;
      auto [first, last] = ShardRange(blocks, shards, s);
      for (int64_t b = first; b < last; ++b) {
        const int64_t begin = b * block;
        const int64_t end = std::min(positions, begin + block);
        Im2Col(d, input.data<T>(), begin, end, patches);
        acc.noalias() += ConstMatrixMap<T>(patches, end - begin, k).transpose() *
                         ConstMatrixMap<T>(pg + begin * d.out_depth, end - begin, d.out_depth);
      }
    });
    ArrayMap<T> total(pw, k * d.out_depth);
    for (int s = 0; s < shards; ++s) total += ArrayMap<T>(partials.data<T>() + s * k * d.out_depth, k * d.out_depth);
  }
};
FT_REGISTER_KERNEL("Conv2DBackpropFilter", Conv2DBackpropFilterOp);

// ---- Pooling ----

struct PoolDims {
  int64_t batch, in_rows, in_cols, depth;
  int64_t window_rows, window_cols, stride_rows, stride_cols;
  int64_t out_rows, out_cols, pad_rows, pad_cols;

  TensorShape input_shape() const { return TensorShape({batch, in_rows, in_cols, depth}); }
  TensorShape output_shape() const { return TensorShape({batch, out_rows, out_cols, depth}); }
  // The window of output (oh, ow), clipped to the input: rows [r0, r1), cols [c0, c1).
  void Window(int64_t oh, int64_t ow, int64_t* r0, int64_t* r1, int64_t* c0, int64_t* c1) const {
    *r0 = oh * stride_rows - pad_rows;
    *c0 = ow * stride_cols - pad_cols;
    *r1 = std::min(*r0 + window_rows, in_rows);
    *c1 = std::min(*c0 + window_cols, in_cols);
    *r0 = std::max<int64_t>(*r0, 0);
    *c0 = std::max<int64_t>(*c0, 0);
  }
};

class PoolKernelBase : public OpKernel {
 public:
  explicit PoolKernelBase(OpKernelConstruction& c)
      : OpKernel(c),
        ksize_(c.GetAttr<std::vector<int64_t>>("ksize")),
        strides_(c.GetAttr<std::vector<int64_t>>("strides")),
        padding_(ParsePadding(c.GetAttr<std::string>("padding"))) {
    CheckWindowAttr(ksize_, "ksize");
    CheckWindowAttr(strides_, "strides");
  }

 protected:
  PoolDims MakeDims(const TensorShape& input) const {
    if (input.dims() != 4) InvalidArgument("input must be 4-dimensional", input.DebugString());
    PoolDims d;
    d.batch = input.dim_size(0);
    d.in_rows = input.dim_size(1);
    d.in_cols = input.dim_size(2);
    d.depth = input.dim_size(3);
    d.window_rows = ksize_[1];
    d.window_cols = ksize_[2];
    d.stride_rows = strides_[1];
    d.stride_cols = strides_[2];
    const WindowDim rows = ComputeWindowDim(d.in_rows, d.window_rows, d.stride_rows, padding_);
    const WindowDim cols = ComputeWindowDim(d.in_cols, d.window_cols, d.stride_cols, padding_);
    d.out_rows = rows.output;
    d.out_cols = cols.output;
    d.pad_rows = rows.pad_before;
    d.pad_cols = cols.pad_before;
    return d;
  }

  void CheckGradShape(const PoolDims& d, const Tensor& grad) const {
    if (grad.shape() != d.output_shape()) {
      InvalidArgument(type_string(), ": grad has shape ", grad.shape().DebugString(),
                      " but the pooling output has shape ", d.output_shape().DebugString());
    }
  }

  std::vector<int64_t> ksize_;
  std::vector<int64_t> strides_;
  Padding padding_;
};

// MaxPool (kMax) and AvgPool: one output row (n, oh) at a time, channels vectorized.
template <bool kMax>
class PoolOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const PoolDims d = MakeDims(input.shape());
    Tensor* out = ctx->allocate_output(0, d.output_shape());
    DispatchFloat(input.dtype(), *this, [&]<typename T>() {
      const T* in = input.data<T>();
      T* po = out->data<T>();
      const int64_t c = d.depth;
      ParallelRange(ctx, d.batch * d.out_rows, d.out_cols * c * d.window_rows * d.window_cols,
                    [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t n = row / d.out_rows;
          const int64_t oh = row % d.out_rows;
          for (int64_t ow = 0; ow < d.out_cols; ++ow) {
            int64_t r0, r1, c0, c1;
            d.Window(oh, ow, &r0, &r1, &c0, &c1);
            ArrayMap<T> o(po + (row * d.out_cols + ow) * c, c);
            o.setConstant(kMax ? std::numeric_limits<T>::lowest() : T(0));
            for (int64_t r = r0; r < r1; ++r) {
              for (int64_t col = c0; col < c1; ++col) {
                ConstArrayMap<T> x(in + ((n * d.in_rows + r) * d.in_cols + col) * c, c);
                if constexpr (kMax) {
                  o = o.max(x);
                } else {
                  o += x;
                }
              }
            }
            if constexpr (!kMax) o *= T(1) / static_cast<T>(std::max<int64_t>((r1 - r0) * (c1 - c0), 1));
          }
        }
      });
    });
  }
};
FT_REGISTER_KERNEL("MaxPool", PoolOp<true>);
FT_REGISTER_KERNEL("AvgPool", PoolOp<false>);

// Routes each output's gradient to the first maximum of its window (row-major scan), as
// TF's CPU kernel does; images are independent, so they are split over the pool.
class MaxPoolGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& grad = ctx->input(2);
    const PoolDims d = MakeDims(input.shape());
    if (ctx->input(1).shape() != d.output_shape()) {
      InvalidArgument("MaxPoolGrad: orig_output has shape ", ctx->input(1).shape().DebugString(),
                      " but the pooling output has shape ", d.output_shape().DebugString());
    }
    CheckGradShape(d, grad);
    Tensor* out = ctx->allocate_output(0, input.shape());
    DispatchFloat(input.dtype(), *this, [&]<typename T>() {
      const T* in = input.data<T>();
      const T* pg = grad.data<T>();
      T* po = out->data<T>();
      std::fill_n(po, out->NumElements(), T(0));
      const int64_t c = d.depth;
      ParallelRange(ctx, d.batch, d.out_rows * d.out_cols * c * d.window_rows * d.window_cols,
                    [&](int64_t begin, int64_t end) {
        // Per channel: the best value so far and where it is; the scan runs over window
        // pixels with channels innermost, so loads are contiguous.
        std::vector<T> best(c);
        std::vector<int64_t> where(c);
        for (int64_t n = begin; n < end; ++n) {
          for (int64_t oh = 0; oh < d.out_rows; ++oh) {
            for (int64_t ow = 0; ow < d.out_cols; ++ow) {
              int64_t r0, r1, c0, c1;
              d.Window(oh, ow, &r0, &r1, &c0, &c1);
              if (r0 >= r1 || c0 >= c1) continue;
              const int64_t first = ((n * d.in_rows + r0) * d.in_cols + c0) * c;
              std::copy_n(in + first, c, best.begin());
              for (int64_t ch = 0; ch < c; ++ch) where[ch] = first + ch;
              for (int64_t r = r0; r < r1; ++r) {
                for (int64_t col = (r == r0 ? c0 + 1 : c0); col < c1; ++col) {
                  const int64_t at = ((n * d.in_rows + r) * d.in_cols + col) * c;
                  const T* x = in + at;
                  for (int64_t ch = 0; ch < c; ++ch) {
                    // Strictly greater: ties keep the first maximum.
                    if (x[ch] > best[ch]) {
                      best[ch] = x[ch];
                      where[ch] = at + ch;
                    }
                  }
                }
              }
              const T* g = pg + ((n * d.out_rows + oh) * d.out_cols + ow) * c;
              for (int64_t ch = 0; ch < c; ++ch) po[where[ch]] += g[ch];
            }
          }
        }
      });
    });
  }
};
FT_REGISTER_KERNEL("MaxPoolGrad", MaxPoolGradOp);

class AvgPoolGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const TensorShape input_shape = ShapeFromTensor(ctx->input(0), "AvgPoolGrad: orig_input_shape");
    const Tensor& grad = ctx->input(1);
    const PoolDims d = MakeDims(input_shape);
    CheckGradShape(d, grad);
    Tensor* out = ctx->allocate_output(0, input_shape);
    DispatchFloat(grad.dtype(), *this, [&]<typename T>() {
      const T* pg = grad.data<T>();
      T* po = out->data<T>();
      std::fill_n(po, out->NumElements(), T(0));
      const int64_t c = d.depth;
      ParallelRange(ctx, d.batch, d.out_rows * d.out_cols * c * d.window_rows * d.window_cols,
                    [&](int64_t begin, int64_t end) {
        for (int64_t n = begin; n < end; ++n) {
          for (int64_t oh = 0; oh < d.out_rows; ++oh) {
            for (int64_t ow = 0; ow < d.out_cols; ++ow) {
              int64_t r0, r1, c0, c1;
              d.Window(oh, ow, &r0, &r1, &c0, &c1);
              const T share = T(1) / static_cast<T>(std::max<int64_t>((r1 - r0) * (c1 - c0), 1));
              ConstArrayMap<T> g(pg + ((n * d.out_rows + oh) * d.out_cols + ow) * c, c);
              for (int64_t r = r0; r < r1; ++r) {
                for (int64_t col = c0; col < c1; ++col) {
                  ArrayMap<T>(po + ((n * d.in_rows + r) * d.in_cols + col) * c, c) += g * share;
                }
              }
            }
          }
        }
      });
    });
  }
};
FT_REGISTER_KERNEL("AvgPoolGrad", AvgPoolGradOp);

}  // namespace
}  // namespace flowtrain
