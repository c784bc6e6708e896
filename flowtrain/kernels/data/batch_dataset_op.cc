// The kernel of BatchDatasetV2: consecutive elements stacked into batches of batch_size.
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/framework/internal/batch_util.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

// batch_util::Stack for strings, moving them out of the elements that only the batch holds (a
// TFRecord pipeline's records) instead of copying them.
Tensor StackStrings(std::vector<Tensor>& column) {
  for (const Tensor& e : column) {
    if (e.shape() != column[0].shape() || !e.RefCountIsOne())
      return batch_util::Stack(column, "BatchDataset");
  }
  TensorShape shape = column[0].shape();
  shape.InsertDim(0, static_cast<int64_t>(column.size()));
  Tensor out(DT_STRING, shape);
  std::string* dst = out.data<std::string>();
  for (Tensor& e : column) {
    std::string* src = e.data<std::string>();
    for (int64_t j = 0; j < e.NumElements(); ++j) *dst++ = std::move(src[j]);
  }
  return out;
}

class BatchDataset : public DatasetBase {
 public:
  BatchDataset(DatasetRef input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}
  std::string DebugString() const override { return "BatchDataset"; }
  class Iter : public IteratorBase {
   public:
    Iter(const BatchDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      std::vector<Element> elements;
      elements.reserve(ds_.batch_size_);
      Element e;
      // One origin per row while every element came from a single record.
      origins_.clear();
      bool rows_have_origins = true;
      while (static_cast<int64_t>(elements.size()) < ds_.batch_size_ && input_->GetNext(ctx, &e)) {
        elements.push_back(std::move(e));
        const RecordOrigins& row = input_->origins();
        rows_have_origins = rows_have_origins && row.size() == 1;
        if (rows_have_origins) origins_.push_back(row[0]);
      }
      if (!rows_have_origins) origins_.clear();
      if (elements.empty()) return false;
      if (ds_.drop_remainder_ && static_cast<int64_t>(elements.size()) < ds_.batch_size_) return false;
      out->clear();
      std::vector<Tensor> column(elements.size());
      for (size_t c = 0; c < elements[0].size(); ++c) {
        for (size_t i = 0; i < elements.size(); ++i) column[i] = std::move(elements[i][c]);
        out->push_back(column[0].dtype() == DT_STRING ? StackStrings(column)
                                                      : batch_util::Stack(column, "BatchDataset"));
      }
      return true;
    }
    const RecordOrigins& origins() const override { return origins_; }
    void Save(IteratorState& state) override { input_->Save(state); }
    void Restore(IteratorState& state) override { input_->Restore(state); }

   private:
    const BatchDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
    RecordOrigins origins_;  // of the batch last returned
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Batch");
  }

 private:
  DatasetRef input_;
  int64_t batch_size_;
  bool drop_remainder_;
};

}  // namespace

DatasetRef MakeBatchDataset(DatasetRef input, int64_t batch_size, bool drop_remainder) {
  if (batch_size < 1) InvalidArgument("Batch size must be greater than zero.");
  return std::make_shared<BatchDataset>(std::move(input), batch_size, drop_remainder);
}

namespace {

struct BatchDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return MakeBatchDataset(Input(ctx), ScalarInt(ctx, 1), ctx->input(2).scalar<bool>());
  }
};
FT_REGISTER_KERNEL("BatchDatasetV2", BatchDatasetOp);

}  // namespace
}  // namespace flowtrain::data
