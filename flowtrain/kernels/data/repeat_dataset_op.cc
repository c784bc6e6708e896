// The kernel of RepeatDataset: its input count times over (forever for -1).
#include <memory>
#include <string>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class RepeatDataset : public DatasetBase {
 public:
  RepeatDataset(DatasetRef input, int64_t count) : input_(std::move(input)), count_(count) {}
  std::string DebugString() const override { return "RepeatDataset"; }
  class Iter : public IteratorBase {
   public:
    Iter(const RepeatDataset& ds, std::string prefix) : IteratorBase(std::move(prefix)), ds_(ds) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      for (;;) {
        if (ds_.count_ >= 0 && epoch_ >= ds_.count_) return false;
        if (input_ == nullptr) {
          input_ = ds_.input_->MakeIterator(prefix());
          produced_in_epoch_ = false;
        }
        if (input_->GetNext(ctx, out)) {
          produced_in_epoch_ = true;
          return true;
        }
        input_.reset();
        ++epoch_;
        if (!produced_in_epoch_) return false;  // an empty input would repeat forever
      }
    }
    const RecordOrigins& origins() const override {
      return input_ != nullptr ? input_->origins() : NoOrigins();
    }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("epoch"), epoch_);
      state.WriteInt(Key("has_input"), input_ != nullptr);
      if (input_ != nullptr) input_->Save(state);
    }
    void Restore(IteratorState& state) override {
      epoch_ = state.ReadInt(Key("epoch"));
      input_.reset();
      if (state.ReadInt(Key("has_input")) != 0) {
        input_ = ds_.input_->MakeIterator(prefix());
        input_->Restore(state);
        produced_in_epoch_ = true;
      }
    }

   private:
    const RepeatDataset& ds_;
    int64_t epoch_ = 0;
    bool produced_in_epoch_ = false;
    std::unique_ptr<IteratorBase> input_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Repeat");
  }

 private:
  DatasetRef input_;
  int64_t count_;
};

struct RepeatDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return std::make_shared<RepeatDataset>(Input(ctx), ScalarInt(ctx, 1));
  }
};
FT_REGISTER_KERNEL("RepeatDataset", RepeatDatasetOp);

}  // namespace
}  // namespace flowtrain::data
