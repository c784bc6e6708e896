// What the dataset kernels under kernels/data/ share: the element type, waiting on a
// producer while honouring the run's cancellation and deadline, saving and restoring an
// element in an iterator's checkpoint state, and the base class of the kernels that build
// a dataset.
//
//   struct RepeatDatasetOp : DatasetOpKernel {
//     using DatasetOpKernel::DatasetOpKernel;
//     DatasetRef MakeDataset(OpKernelContext* ctx) override { ... }
//   };
#ifndef FLOWTRAIN_KERNELS_INTERNAL_DATASET_OP_KERNEL_H_
#define FLOWTRAIN_KERNELS_INTERNAL_DATASET_OP_KERNEL_H_

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/dataset.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/ops/dataset_functions.h"

namespace flowtrain::data {
using Element = std::vector<Tensor>;

// One pass of a wait for a condition on `cv`, which the caller loops over while the
// condition is false: Cancelled/DeadlineExceeded if the run has ended, otherwise a wait of at
// most 20 ms, so that the run's cancellation and deadline are honoured even though the
// producers it waits for do not know about them.
//
//   while (!ready) WaitOnce(mu_, cv_, ctx, "PrefetchDataset");
inline void WaitOnce(absl::Mutex& mu, absl::CondVar& cv, const IteratorContext& ctx, std::string_view what)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  if (ctx.cancellation != nullptr && ctx.cancellation->IsCancelled()) Cancelled(what, " was cancelled");
  const auto now = std::chrono::steady_clock::now();
  if (now >= ctx.deadline) DeadlineExceeded("Timed out waiting in ", what);
  const auto wake_at = std::min(ctx.deadline, now + std::chrono::milliseconds(20));
  cv.WaitWithTimeout(&mu, absl::FromChrono(wake_at - now));
}

inline void SaveElement(IteratorState& state, const std::string& key, const Element& element) {
  state.WriteInt(key + ".size", static_cast<int64_t>(element.size()));
  for (size_t i = 0; i < element.size(); ++i) state.WriteTensor(StrCat(key, ".", i), element[i]);
}

inline Element RestoreElement(const IteratorState& state, const std::string& key) {
  Element element(state.ReadInt(key + ".size"));
  for (size_t i = 0; i < element.size(); ++i) element[i] = state.ReadTensor(StrCat(key, ".", i));
  return element;
}

// BatchDatasetV2's dataset (kernels/data/batch_dataset_op.cc), for the ops that batch what they
// make (MapAndBatchDataset).
DatasetRef MakeBatchDataset(DatasetRef input, int64_t batch_size, bool drop_remainder);

// Base of the kernels that build a dataset: outputs what MakeDataset returns.
class DatasetOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, DatasetToTensor(MakeDataset(ctx))); }
  KernelCost cost() const override { return KernelCost::kCheap; }

 protected:
  virtual DatasetRef MakeDataset(OpKernelContext* ctx) = 0;
  DatasetRef Input(OpKernelContext* ctx) const { return DatasetFromTensor(ctx->input(0), name()); }
  int64_t ScalarInt(OpKernelContext* ctx, int i) const { return ctx->input(i).scalar<int64_t>(); }
};

}  // namespace flowtrain::data

#endif  // FLOWTRAIN_KERNELS_INTERNAL_DATASET_OP_KERNEL_H_
