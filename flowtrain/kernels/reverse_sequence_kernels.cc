// ReverseSequence (tf.reverse_sequence): along `seq_dim`, the first seq_lengths[b] elements of
// each batch entry b (along `batch_dim`) reversed and the rest copied, as TF's kernel does.
// What bidirectional_dynamic_rnn runs its backward cell over.
#include <algorithm>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

class ReverseSequenceOp : public OpKernel {
 public:
  explicit ReverseSequenceOp(OpKernelConstruction& c)
      : OpKernel(c), seq_dim_(c.GetAttr<int64_t>("seq_dim")), batch_dim_(c.GetAttr<int64_t>("batch_dim")) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& lengths = ctx->input(1);
    const int64_t rank = input.dims();
    if (seq_dim_ == batch_dim_) InvalidArgument("seq_dim == batch_dim == ", seq_dim_);
    if (seq_dim_ < 0 || seq_dim_ >= rank)
      InvalidArgument("seq_dim must be < input rank ( ", seq_dim_, " vs. ", rank, ")");
    if (batch_dim_ < 0 || batch_dim_ >= rank) {
      InvalidArgument("batch_dim must be < input rank ( ", batch_dim_, " vs. ", rank, ")");
    }
    if (lengths.dims() != 1) InvalidArgument("seq_lengths must be 1-dim, not ", lengths.dims());
    const int64_t batch = input.dim_size(batch_dim_);
    if (lengths.dim_size(0) != batch) {
      InvalidArgument("Length of seq_lengths != input.dims(", batch_dim_, "), (", lengths.dim_size(0),
                      " vs. ", batch, ")");
    }
    std::vector<int64_t> lens(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) {
      lens[b] = lengths.dtype() == DT_INT32 ? lengths.flat<int32_t>()[b] : lengths.flat<int64_t>()[b];
      if (lens[b] < 0) InvalidArgument("seq_lens(", b, ") < 0");
      if (lens[b] > input.dim_size(seq_dim_)) {
        InvalidArgument("seq_lens(", b, ") > input.dims(", seq_dim_, ") (", lens[b], " vs. ",
                        input.dim_size(seq_dim_), ")");
      }
    }
    // Row-major strides, to move along seq_dim and read batch_dim of a flat index.
    std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
    for (int64_t d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * input.dim_size(d + 1);
    Tensor* out = ctx->allocate_output(0, input.shape());
    DispatchDataType(input.dtype(), "ReverseSequence", [&]<typename T>() {
      const T* in = input.data<T>();
      T* o = out->data<T>();
      for (int64_t i = 0; i < input.NumElements(); ++i) {
        const int64_t b = i / strides[batch_dim_] % input.dim_size(batch_dim_);
        const int64_t s = i / strides[seq_dim_] % input.dim_size(seq_dim_);
        const int64_t from = s < lens[b] ? i + (lens[b] - 1 - 2 * s) * strides[seq_dim_] : i;
        o[i] = in[from];
      }
    });
  }

 private:
  const int64_t seq_dim_;
  const int64_t batch_dim_;
};
FT_REGISTER_KERNEL("ReverseSequence", ReverseSequenceOp);

}  // namespace
}  // namespace flowtrain
