// The kernel of ZipDataset: the elements of N datasets side by side (the components of the
// i-th elements of each, concatenated), ending with the shortest.
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class ZipDataset : public DatasetBase {
 public:
  explicit ZipDataset(std::vector<DatasetRef> inputs) : inputs_(std::move(inputs)) {}
  std::string DebugString() const override { return StrCat("ZipDataset(", inputs_.size(), ")"); }

  class Iter : public IteratorBase {
   public:
    Iter(const ZipDataset& ds, std::string prefix) : IteratorBase(prefix) {
      // Each input under a prefix of its own, so two inputs of the same kind do not collide.
      for (size_t i = 0; i < ds.inputs_.size(); ++i)
        inputs_.push_back(ds.inputs_[i]->MakeIterator(StrCat(prefix, "[", i, "]")));
    }
    bool GetNext(IteratorContext& ctx, Element* out) override {
      if (exhausted_) return false;
      Element zipped, part;
      for (auto& input : inputs_) {
        if (!input->GetNext(ctx, &part)) {
          exhausted_ = true;  // TF stops at the first input that ends
          return false;
        }
        for (Tensor& t : part) zipped.push_back(std::move(t));
      }
      *out = std::move(zipped);
      return true;
    }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("exhausted"), exhausted_);
      for (auto& input : inputs_) input->Save(state);
    }
    void Restore(IteratorState& state) override {
      exhausted_ = state.ReadInt(Key("exhausted")) != 0;
      for (auto& input : inputs_) input->Restore(state);
    }

   private:
    std::vector<std::unique_ptr<IteratorBase>> inputs_;
    bool exhausted_ = false;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Zip");
  }

 private:
  std::vector<DatasetRef> inputs_;
};

struct ZipDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    std::vector<DatasetRef> inputs;
    for (int i = 0; i < ctx->num_inputs(); ++i) inputs.push_back(DatasetFromTensor(ctx->input(i), name()));
    return std::make_shared<ZipDataset>(std::move(inputs));
  }
};
FT_REGISTER_KERNEL("ZipDataset", ZipDatasetOp);

}  // namespace
}  // namespace flowtrain::data
