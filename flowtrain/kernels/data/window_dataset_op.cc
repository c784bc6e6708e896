// The kernel of WindowDataset (Dataset.window): windows of `size` elements of the input, the
// first starting at element 0 and each next one `shift` elements later, taking every `stride`-th
// element. Each output element is a tuple of scalar DT_VARIANT datasets, one per component,
// (ValuesDatasets) holding that component's values in the window (flat_map them, e.g. into a
// batch), which iterator states keep, so a flat_map over windows saves and restores. At the end of
// the input the windows get shorter, down to one element, unless drop_remainder drops every
// window shorter than `size`.
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/framework/values_dataset.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class WindowDataset : public DatasetBase {
 public:
  WindowDataset(DatasetRef input, int64_t size, int64_t shift, int64_t stride, bool drop_remainder)
      : input_(std::move(input)),
        size_(size),
        shift_(shift),
        stride_(stride),
        drop_remainder_(drop_remainder) {}
  std::string DebugString() const override { return "WindowDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const WindowDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      // The elements a whole window spans: its first, then size - 1 strides.
      const int64_t span = (ds_.size_ - 1) * ds_.stride_ + 1;
      Element e;
      // The elements a shift longer than the last window's span still has to pass over.
      while (to_skip_ > 0 && !end_of_input_) {
        if (input_->GetNext(ctx, &e)) {
          --to_skip_;
        } else {
          end_of_input_ = true;
        }
      }
      while (static_cast<int64_t>(buffer_.size()) < span && !end_of_input_) {
        if (input_->GetNext(ctx, &e)) {
          buffer_.push_back(std::move(e));
        } else {
          end_of_input_ = true;
        }
      }
      if (buffer_.empty()) return false;
      if (ds_.drop_remainder_ && static_cast<int64_t>(buffer_.size()) < span) return false;
      const size_t components = buffer_[0].size();
      std::vector<std::vector<Tensor>> columns(components);
      for (size_t i = 0; i < buffer_.size(); i += ds_.stride_) {
        if (buffer_[i].size() != components) {
          InvalidArgument("WindowDataset: input elements have ", components, " and ", buffer_[i].size(),
                          " components");
        }
        for (size_t c = 0; c < components; ++c) columns[c].push_back(buffer_[i][c]);
      }
      out->clear();
      for (auto& column : columns) {
        std::vector<Element> values;
        for (Tensor& t : column) values.push_back({std::move(t)});
        out->push_back(DatasetToTensor(std::make_shared<ValuesDataset>(std::move(values))));
      }
      if (ds_.shift_ <= static_cast<int64_t>(buffer_.size())) {
        buffer_.erase(buffer_.begin(), buffer_.begin() + ds_.shift_);
      } else {
        to_skip_ = ds_.shift_ - static_cast<int64_t>(buffer_.size());
        buffer_.clear();
      }
      return true;
    }
    void Save(IteratorState& state) override {
      input_->Save(state);
      state.WriteInt(Key("buffer_size"), static_cast<int64_t>(buffer_.size()));
      for (size_t i = 0; i < buffer_.size(); ++i) SaveElement(state, Key(StrCat("buffer_", i)), buffer_[i]);
      state.WriteInt(Key("to_skip"), to_skip_);
      state.WriteInt(Key("end_of_input"), end_of_input_ ? 1 : 0);
    }
    void Restore(IteratorState& state) override {
      input_->Restore(state);
      buffer_.assign(state.ReadInt(Key("buffer_size")), Element());
      for (size_t i = 0; i < buffer_.size(); ++i)
        buffer_[i] = RestoreElement(state, Key(StrCat("buffer_", i)));
      to_skip_ = state.ReadInt(Key("to_skip"));
      end_of_input_ = state.ReadInt(Key("end_of_input")) != 0;
    }

   private:
    const WindowDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
    std::vector<Element> buffer_;  // the input elements from the next window's first on
    int64_t to_skip_ = 0;
    bool end_of_input_ = false;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Window");
  }

 private:
  DatasetRef input_;
  int64_t size_;
  int64_t shift_;
  int64_t stride_;
  bool drop_remainder_;
};

struct WindowDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int64_t size = ScalarInt(ctx, 1);
    const int64_t shift = ScalarInt(ctx, 2);
    const int64_t stride = ScalarInt(ctx, 3);
    // TF's messages.
    if (size <= 0) InvalidArgument("Window size must be greater than zero, but got ", size, ".");
    if (shift <= 0) InvalidArgument("Window shift must be greater than zero, but got ", shift, ".");
    if (stride <= 0) InvalidArgument("Window stride must be greater than zero, but got ", stride, ".");
    // The iterator buffers (size - 1) * stride + 1 elements: that count must fit an int64.
    if (size - 1 > (std::numeric_limits<int64_t>::max() - 1) / stride) {
      InvalidArgument("Window size ", size, " with stride ", stride,
                      " spans more elements than an int64 counts");
    }
    return std::make_shared<WindowDataset>(Input(ctx), size, shift, stride, ctx->input(4).scalar<bool>());
  }
};
FT_REGISTER_KERNEL("WindowDataset", WindowDatasetOp);

}  // namespace
}  // namespace flowtrain::data
