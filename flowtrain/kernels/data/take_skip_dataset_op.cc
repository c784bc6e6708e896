// The kernel of TakeDataset and SkipDataset: the first count elements of the input, or all but
// them.
#include <memory>
#include <string>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class TakeSkipDataset : public DatasetBase {
 public:
  TakeSkipDataset(DatasetRef input, int64_t count, bool take)
      : input_(std::move(input)), count_(count), take_(take) {}
  std::string DebugString() const override { return take_ ? "TakeDataset" : "SkipDataset"; }
  class Iter : public IteratorBase {
   public:
    Iter(const TakeSkipDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      if (ds_.take_) {
        if (ds_.count_ >= 0 && seen_ >= ds_.count_) return false;
        if (!input_->GetNext(ctx, out)) return false;
        ++seen_;
        return true;
      }
      while (ds_.count_ < 0 || seen_ < ds_.count_) {
        if (!input_->GetNext(ctx, out)) return false;
        ++seen_;
      }
      return input_->GetNext(ctx, out);
    }
    const RecordOrigins& origins() const override { return input_->origins(); }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("seen"), seen_);
      input_->Save(state);
    }
    void Restore(IteratorState& state) override {
      seen_ = state.ReadInt(Key("seen"));
      input_->Restore(state);
    }

   private:
    const TakeSkipDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
    int64_t seen_ = 0;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + (take_ ? "::Take" : "::Skip"));
  }

 private:
  DatasetRef input_;
  int64_t count_;
  bool take_;
};

template <bool kTake>
struct TakeSkipDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return std::make_shared<TakeSkipDataset>(Input(ctx), ScalarInt(ctx, 1), kTake);
  }
};
FT_REGISTER_KERNEL("TakeDataset", TakeSkipDatasetOp<true>);
FT_REGISTER_KERNEL("SkipDataset", TakeSkipDatasetOp<false>);

}  // namespace
}  // namespace flowtrain::data
