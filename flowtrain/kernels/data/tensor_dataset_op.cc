// The kernel of TensorDataset: a dataset of one element, its component tensors as they are
// (Dataset.from_tensors).
#include <memory>
#include <string>

#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class TensorDataset : public DatasetBase {
 public:
  explicit TensorDataset(Element components) : components_(std::move(components)) {}
  std::string DebugString() const override { return "TensorDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const TensorDataset& ds, std::string prefix) : IteratorBase(std::move(prefix)), ds_(ds) {}
    bool GetNext(IteratorContext&, Element* out) override {
      if (produced_) return false;
      *out = ds_.components_;
      produced_ = true;
      return true;
    }
    void Save(IteratorState& state) override { state.WriteInt(Key("produced"), produced_); }
    void Restore(IteratorState& state) override { produced_ = state.ReadInt(Key("produced")) != 0; }

   private:
    const TensorDataset& ds_;
    bool produced_ = false;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::FromTensor");
  }

 private:
  Element components_;
};

struct TensorDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    Element components;
    for (int i = 0; i < ctx->num_inputs(); ++i) components.push_back(ctx->input(i));
    return std::make_shared<TensorDataset>(std::move(components));
  }
};
FT_REGISTER_KERNEL("TensorDataset", TensorDatasetOp);

}  // namespace
}  // namespace flowtrain::data
