// The kernel of TensorSliceDataset: a dataset of the slices of its component tensors along their
// first dimension (Dataset.from_tensor_slices).
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class TensorSliceDataset : public DatasetBase {
 public:
  explicit TensorSliceDataset(Element components) : components_(std::move(components)) {
    for (const Tensor& c : components_) {
      if (c.dims() < 1) InvalidArgument("TensorSliceDataset: cannot slice a scalar component");
      if (c.dim_size(0) != components_[0].dim_size(0)) {
        InvalidArgument("TensorSliceDataset: all components must have the same size in dimension 0, got ",
                        components_[0].shape().DebugString(), " and ", c.shape().DebugString());
      }
      TensorShape shape = c.shape();
      shape.RemoveDim(0);
      element_shapes_.push_back(shape);
    }
  }
  std::string DebugString() const override { return "TensorSliceDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const TensorSliceDataset& ds, std::string prefix) : IteratorBase(std::move(prefix)), ds_(ds) {}
    bool GetNext(IteratorContext&, Element* out) override {
      if (index_ >= ds_.components_[0].dim_size(0)) return false;
      out->clear();
      for (size_t c = 0; c < ds_.components_.size(); ++c) {
        out->push_back(ds_.components_[c].Slice(index_, index_ + 1).Reshaped(ds_.element_shapes_[c]));
      }
      ++index_;
      return true;
    }
    void Save(IteratorState& state) override { state.WriteInt(Key("index"), index_); }
    void Restore(IteratorState& state) override { index_ = state.ReadInt(Key("index")); }

   private:
    const TensorSliceDataset& ds_;
    int64_t index_ = 0;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::TensorSlice");
  }

 private:
  Element components_;
  std::vector<TensorShape> element_shapes_;
};

struct TensorSliceDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    Element components;
    for (int i = 0; i < ctx->num_inputs(); ++i) components.push_back(ctx->input(i));
    return std::make_shared<TensorSliceDataset>(std::move(components));
  }
};
FT_REGISTER_KERNEL("TensorSliceDataset", TensorSliceDatasetOp);

}  // namespace
}  // namespace flowtrain::data
