// The kernel of ConcatenateDataset: the elements of one dataset, then those of another of the
// same component types.
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class ConcatenateDataset : public DatasetBase {
 public:
  ConcatenateDataset(DatasetRef first, DatasetRef second, std::vector<DataType> types)
      : inputs_{std::move(first), std::move(second)}, types_(std::move(types)) {}

  // The inputs carry no types of their own here, so each element is checked against the op's
  // output_types: an imported graph whose two inputs differ fails naming the component.
  void Check(const Element& e, int64_t input) const {
    if (e.size() != types_.size()) {
      InvalidArgument("ConcatenateDataset: ", input == 0 ? "input dataset" : "dataset to concatenate",
                      " produced ", e.size(), " components, expected ", types_.size());
    }
    for (size_t i = 0; i < e.size(); ++i) {
      if (e[i].dtype() != types_[i]) {
        InvalidArgument("ConcatenateDataset: input dataset and dataset to concatenate have different types; ",
                        input == 0 ? "input dataset" : "dataset to concatenate", " component ", i, " is ",
                        DataTypeString(e[i].dtype()), ", expected ", DataTypeString(types_[i]));
      }
    }
  }
  std::string DebugString() const override { return "ConcatenateDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const ConcatenateDataset& ds, std::string prefix)
        : IteratorBase(std::move(prefix)), ds_(ds), input_(ds.inputs_[0]->MakeIterator(InputPrefix(0))) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (index_ < 2) {
        if (input_->GetNext(ctx, out)) {
          ds_.Check(*out, index_);
          return true;
        }
        if (++index_ < 2) input_ = ds_.inputs_[index_]->MakeIterator(InputPrefix(index_));
      }
      input_.reset();
      return false;
    }
    const RecordOrigins& origins() const override { return input_ ? input_->origins() : NoOrigins(); }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("index"), index_);
      if (input_) input_->Save(state);
    }
    void Restore(IteratorState& state) override {
      index_ = state.ReadInt(Key("index"));
      if (index_ < 0 || index_ > 2) DataLoss("Iterator state of ConcatenateDataset has input index ", index_);
      input_.reset();
      if (index_ < 2) {
        input_ = ds_.inputs_[index_]->MakeIterator(InputPrefix(index_));
        input_->Restore(state);
      }
    }

   private:
    std::string InputPrefix(int64_t i) const { return StrCat(prefix(), "[", i, "]"); }
    const ConcatenateDataset& ds_;
    int64_t index_ = 0;  // 0: the first input, 1: the second, 2: done
    std::unique_ptr<IteratorBase> input_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Concatenate");
  }

 private:
  DatasetRef inputs_[2];
  std::vector<DataType> types_;
};

struct ConcatenateDatasetOp : DatasetOpKernel {
  explicit ConcatenateDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c), types_(c.GetAttr<std::vector<DataType>>("output_types")) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return std::make_shared<ConcatenateDataset>(Input(ctx), DatasetFromTensor(ctx->input(1), name()), types_);
  }
  std::vector<DataType> types_;
};
FT_REGISTER_KERNEL("ConcatenateDataset", ConcatenateDatasetOp);

}  // namespace
}  // namespace flowtrain::data
