// The kernel of UnbatchDataset: each input element split along its first dimension into
// that many elements (the inverse of BatchDataset).
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/framework/internal/batch_util.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class UnbatchDataset : public DatasetBase {
 public:
  explicit UnbatchDataset(DatasetRef input) : input_(std::move(input)) {}
  std::string DebugString() const override { return "UnbatchDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const UnbatchDataset& ds, std::string prefix)
        : IteratorBase(prefix), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (row_ >= rows_) {
        if (!input_->GetNext(ctx, &batch_)) {
          batch_.clear();
          rows_ = row_ = 0;
          return false;
        }
        rows_ = CheckedRows(batch_);
        row_ = 0;
      }
      out->clear();
      for (const Tensor& t : batch_) {
        TensorShape row_shape = t.shape();
        row_shape.RemoveDim(0);
        // A copy, not a slice: the row must not keep the whole batch alive downstream.
        out->push_back(t.Slice(row_, row_ + 1).Reshaped(row_shape).DeepCopy());
      }
      ++row_;
      return true;
    }
    void Save(IteratorState& state) override {
      input_->Save(state);
      state.WriteInt(Key("row"), row_);
      state.WriteInt(Key("rows"), rows_);
      if (row_ < rows_) SaveElement(state, Key("batch"), batch_);
    }
    void Restore(IteratorState& state) override {
      input_->Restore(state);
      row_ = state.ReadInt(Key("row"));
      rows_ = state.ReadInt(Key("rows"));
      batch_.clear();
      if (row_ < rows_) {
        batch_ = RestoreElement(state, Key("batch"));
        if (CheckedRows(batch_) != rows_)
          DataLoss("Iterator state of UnbatchDataset holds a batch of another size");
      }
    }

   private:
    // The common first dimension of the components of `e`.
    static int64_t CheckedRows(const Element& e) {
      int64_t rows = -1;
      for (size_t i = 0; i < e.size(); ++i) {
        if (e[i].dims() == 0)
          InvalidArgument("UnbatchDataset: input element must have a non-scalar value in each component.");
        if (rows >= 0 && e[i].dim_size(0) != rows) {
          InvalidArgument(
              "UnbatchDataset: input element must have the same batch size in each component. Component 0 "
              "had size ",
              rows, " but component ", i, " had size ", e[i].dim_size(0), ".");
        }
        rows = e[i].dim_size(0);
      }
      return rows < 0 ? 0 : rows;
    }
    std::unique_ptr<IteratorBase> input_;
    Element batch_;
    int64_t rows_ = 0;
    int64_t row_ = 0;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Unbatch");
  }

 private:
  DatasetRef input_;
};

struct UnbatchDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return std::make_shared<UnbatchDataset>(Input(ctx));
  }
};
FT_REGISTER_KERNEL("UnbatchDataset", UnbatchDatasetOp);

}  // namespace
}  // namespace flowtrain::data
