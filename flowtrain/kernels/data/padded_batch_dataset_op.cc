// The kernel of PaddedBatchDatasetV2: consecutive elements stacked into batches, each
// component padded with its padding value to its padded shape, where a -1 dimension is padded
// to the largest size of that dimension in the batch.
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/framework/internal/batch_util.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class PaddedBatchDataset : public DatasetBase {
 public:
  PaddedBatchDataset(DatasetRef input, int64_t batch_size, std::vector<PartialTensorShape> padded_shapes,
                     std::vector<Tensor> padding_values, bool drop_remainder)
      : input_(std::move(input)),
        batch_size_(batch_size),
        padded_shapes_(std::move(padded_shapes)),
        padding_values_(std::move(padding_values)),
        drop_remainder_(drop_remainder) {}
  std::string DebugString() const override { return "PaddedBatchDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const PaddedBatchDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      std::vector<Element> elements;
      Element e;
      while (static_cast<int64_t>(elements.size()) < ds_.batch_size_ && input_->GetNext(ctx, &e)) {
        if (e.size() != ds_.padded_shapes_.size()) {
          InvalidArgument("PaddedBatchDataset: an element has ", e.size(), " components, but ",
                          ds_.padded_shapes_.size(), " padded shapes were given");
        }
        elements.push_back(std::move(e));
      }
      if (elements.empty()) return false;
      if (ds_.drop_remainder_ && static_cast<int64_t>(elements.size()) < ds_.batch_size_) return false;
      out->clear();
      std::vector<Tensor> column(elements.size());
      for (size_t c = 0; c < ds_.padded_shapes_.size(); ++c) {
        const PartialTensorShape& padded = ds_.padded_shapes_[c];
        for (size_t i = 0; i < elements.size(); ++i) {
          column[i] = std::move(elements[i][c]);
          if (column[i].dims() != padded.dims()) {
            InvalidArgument(
                "All elements in a batch must have the same rank as the padded shape for component", c,
                ": expected rank ", padded.dims(), " but got element with rank ", column[i].dims());
          }
        }
        out->push_back(
            batch_util::PadAndStack(column, padded, "PaddedBatchDataset", &ds_.padding_values_[c]));
      }
      return true;
    }
    void Save(IteratorState& state) override { input_->Save(state); }
    void Restore(IteratorState& state) override { input_->Restore(state); }

   private:
    const PaddedBatchDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::PaddedBatch");
  }

 private:
  DatasetRef input_;
  int64_t batch_size_;
  std::vector<PartialTensorShape> padded_shapes_;
  std::vector<Tensor> padding_values_;
  bool drop_remainder_;
};

// Inputs: input_dataset, batch_size, padded_shapes (N int64 vectors), padding_values (N
// scalars), drop_remainder.
struct PaddedBatchDatasetOp : DatasetOpKernel {
  explicit PaddedBatchDatasetOp(OpKernelConstruction& c) : DatasetOpKernel(c), n_(c.GetAttr<int64_t>("N")) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int64_t batch_size = ScalarInt(ctx, 1);
    if (batch_size <= 0) InvalidArgument("Batch size must be greater than zero.");
    std::vector<PartialTensorShape> shapes;
    std::vector<Tensor> values;
    for (int64_t i = 0; i < n_; ++i) {
      const Tensor& s = ctx->input(2 + static_cast<int>(i));
      if (s.dims() != 1) InvalidArgument("All padded shapes must be vectors, but component ", i, " is not.");
      std::vector<int64_t> dims(s.flat<int64_t>().begin(), s.flat<int64_t>().end());
      for (int64_t d : dims) {
        if (d < -1)
          InvalidArgument("PaddedBatchDataset: padded shape of component ", i, " has dimension ", d);
      }
      shapes.emplace_back(std::span<const int64_t>(dims.data(), dims.size()));
      const Tensor& v = ctx->input(2 + static_cast<int>(n_ + i));
      if (v.dims() != 0) InvalidArgument("All padding values must be scalars, but component ", i, " is not.");
      values.push_back(v);
    }
    const bool drop_remainder = ctx->input(2 + static_cast<int>(2 * n_)).scalar<bool>();
    return std::make_shared<PaddedBatchDataset>(Input(ctx), batch_size, std::move(shapes), std::move(values),
                                                drop_remainder);
  }
  int64_t n_;
};
FT_REGISTER_KERNEL("PaddedBatchDatasetV2", PaddedBatchDatasetOp);

}  // namespace
}  // namespace flowtrain::data
