// The kernels of OptimizeDataset and ModelDataset, which TF 1.x's iterator makers put on top of
// every pipeline. TF's static rewrites and autotuning change how fast elements come, never
// which elements or in what order; flowtrain's pipelines have neither, so both give their input
// dataset itself.
#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

struct OptimizeDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const Tensor& optimizations = ctx->input(1);
    if (optimizations.dims() != 1) {
      InvalidArgument(name(), ": optimizations must be a vector of rewrite names, got shape ",
                      optimizations.shape().DebugString());
    }
    return Input(ctx);
  }
};
FT_REGISTER_KERNEL("OptimizeDataset", OptimizeDatasetOp);

struct ModelDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override { return Input(ctx); }
};
FT_REGISTER_KERNEL("ModelDataset", ModelDatasetOp);

}  // namespace
}  // namespace flowtrain::data
