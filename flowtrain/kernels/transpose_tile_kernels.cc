// Kernels that rearrange elements: Transpose, Tile and InvertPermutation.
#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/array_util.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

// Calls fn(output_row_start, input_row_offset) for each row (all dimensions but the last) of
// an output of shape `out`, where `input_offset_of(index)` maps an output row's coordinates
// to the input.
template <typename Offset, typename Fn>
void ForEachOutputRow(const TensorShape& out, const Offset& input_offset_of, const Fn& fn) {
  const int rank = out.dims();
  const int64_t inner = rank == 0 ? 1 : out.dim_size(rank - 1);
  if (out.num_elements() == 0) return;
  std::vector<int64_t> index(std::max(rank - 1, 0), 0);
  for (int64_t row_start = 0; row_start < out.num_elements(); row_start += inner) {
    fn(row_start, input_offset_of(index));
    for (int d = rank - 2; d >= 0; --d) {
      if (++index[d] < out.dim_size(d)) break;
      index[d] = 0;
    }
  }
}

class TransposeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& perm_tensor = ctx->input(1);
    if (perm_tensor.dims() != 1)
      InvalidArgument("perm must be a vector, not ", perm_tensor.shape().DebugString());
    const std::vector<int64_t> perm = ReadIndices(perm_tensor);
    const int rank = input.dims();
    if (static_cast<int>(perm.size()) != rank) {
      InvalidArgument("transpose expects a vector of size ", rank, ". But input(1) is a vector of size ",
                      perm.size());
    }
    std::vector<bool> seen(rank, false);
    bool identity = true;
    DimVector out_dims;
    for (int d = 0; d < rank; ++d) {
      const int64_t p = perm[d];
      if (p < 0 || p >= rank) InvalidArgument(p, " is out of range [0 .. ", rank, ")");
      if (seen[p]) InvalidArgument(p, " is duplicated in the input.");
      seen[p] = true;
      identity = identity && p == d;
      out_dims.push_back(input.dim_size(static_cast<int>(p)));
    }
    const TensorShape out_shape(out_dims);
    if (identity) {
      ctx->set_output(0, input);
      return;
    }
    Tensor* out = ctx->allocate_output(0, out_shape);
    const DimVector in_strides = RowMajorStrides(input.shape());
    const int64_t inner = out_shape.dim_size(rank - 1);
    const int64_t step = in_strides[perm[rank - 1]];
    auto offset_of = [&](const std::vector<int64_t>& index) {
      int64_t offset = 0;
      for (int d = 0; d + 1 < rank; ++d) offset += index[d] * in_strides[perm[d]];
      return offset;
    };
    DispatchDataType(input.dtype(), "Transpose", [&]<typename T>() {
      const T* in = input.data<T>();
      T* o = out->data<T>();
      ForEachOutputRow(out_shape, offset_of, [&](int64_t row, int64_t offset) {
        for (int64_t k = 0; k < inner; ++k) o[row + k] = in[offset + k * step];
      });
    });
  }
};
FT_REGISTER_KERNEL("Transpose", TransposeOp);

class InvertPermutationOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.dims() != 1)
      InvalidArgument("invert_permutation expects a 1D vector, got ", x.shape().DebugString());
    const std::vector<int64_t> perm = ReadIndices(x);
    const int64_t n = static_cast<int64_t>(perm.size());
    std::vector<int64_t> inverse(n, -1);
    for (int64_t i = 0; i < n; ++i) {
      if (perm[i] < 0 || perm[i] >= n) InvalidArgument(perm[i], " is not between 0 and ", n);
      if (inverse[perm[i]] != -1) InvalidArgument(perm[i], " is duplicated in the input.");
      inverse[perm[i]] = i;
    }
    Tensor* out = ctx->allocate_output(0, x.shape());
    for (int64_t i = 0; i < n; ++i) {
      if (out->dtype() == DT_INT32) {
        out->flat<int32_t>()[i] = static_cast<int32_t>(inverse[i]);
      } else {
        out->flat<int64_t>()[i] = inverse[i];
      }
    }
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("InvertPermutation", InvertPermutationOp);

class TileOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& multiples_tensor = ctx->input(1);
    const std::vector<int64_t> multiples = ReadIndices(multiples_tensor);
    const int rank = input.dims();
    if (multiples_tensor.dims() != 1 || static_cast<int>(multiples.size()) != rank) {
      InvalidArgument("Expected multiples argument to be a vector of length ", rank, " but got length ",
                      multiples.size());
    }
    DimVector out_dims;
    bool identity = true;
    for (int d = 0; d < rank; ++d) {
      if (multiples[d] < 0) InvalidArgument("Expected multiples[", d, "] >= 0, but got ", multiples[d]);
      identity = identity && multiples[d] == 1;
      out_dims.push_back(CheckedMultiplySizes(input.dim_size(d), multiples[d], "Tile",
                                              StrCat("input dimension ", d, " times multiples[", d, "]")));
    }
    CheckedNumElements(out_dims, "Tile");
    if (identity) {
      ctx->set_output(0, input);
      return;
    }
    const TensorShape out_shape(out_dims);
    Tensor* out = ctx->allocate_output(0, out_shape);
    if (out_shape.num_elements() == 0) return;
    const DimVector in_strides = RowMajorStrides(input.shape());
    const int64_t in_inner = input.dim_size(rank - 1);
    const int64_t out_inner = out_shape.dim_size(rank - 1);
    auto offset_of = [&](const std::vector<int64_t>& index) {
      int64_t offset = 0;
      for (int d = 0; d + 1 < rank; ++d) offset += (index[d] % input.dim_size(d)) * in_strides[d];
      return offset;
    };
    ForEachOutputRow(out_shape, offset_of, [&](int64_t row, int64_t offset) {
      for (int64_t k = 0; k < out_inner; k += in_inner) CopyElements(input, offset, *out, row + k, in_inner);
    });
  }
};
FT_REGISTER_KERNEL("Tile", TileOp);

}  // namespace
}  // namespace flowtrain
