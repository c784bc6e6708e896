// The kernel of FilterDataset: the elements a registered predicate keeps.
#include <memory>
#include <string>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class FilterDataset : public DatasetBase {
 public:
  FilterDataset(DatasetRef input, std::string function_name)
      : input_(std::move(input)), predicate_(LookupPredicateFunction(function_name)) {}
  std::string DebugString() const override { return "FilterDataset"; }
  class Iter : public IteratorBase {
   public:
    Iter(const FilterDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (input_->GetNext(ctx, out)) {
        if (ds_.predicate_(*out)) return true;
      }
      return false;
    }
    const RecordOrigins& origins() const override { return input_->origins(); }
    void Save(IteratorState& state) override { input_->Save(state); }
    void Restore(IteratorState& state) override { input_->Restore(state); }

   private:
    const FilterDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Filter");
  }

 private:
  DatasetRef input_;
  const PredicateFunction& predicate_;
};

struct FilterDatasetOp : DatasetOpKernel {
  explicit FilterDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c), function_(c.node().GetAttrValue("predicate").func().name()) {
    LookupPredicateFunction(function_);
  }
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return std::make_shared<FilterDataset>(Input(ctx), function_);
  }
  std::string function_;
};
FT_REGISTER_KERNEL("FilterDataset", FilterDatasetOp);

}  // namespace
}  // namespace flowtrain::data
