// The kernels of ShuffleDataset and ShuffleAndRepeatDataset: elements drawn at random from a
// buffer of buffer_size, seeded as TF seeds it. ShuffleAndRepeat refills the buffer from the
// input's next epoch as soon as one ends (count epochs, forever for -1), so epochs blend at
// their boundaries instead of draining the buffer each time.
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class ShuffleDataset : public DatasetBase {
 public:
  ShuffleDataset(DatasetRef input, int64_t buffer_size, int64_t seed, int64_t seed2, bool reshuffle,
                 int64_t count)
      : input_(std::move(input)), buffer_size_(buffer_size), reshuffle_(reshuffle), count_(count) {
    base_seed_ = seed == 0 && seed2 == 0
                     ? (static_cast<uint64_t>(std::random_device()()) << 32) ^ std::random_device()()
                     : static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(seed2);
  }
  std::string DebugString() const override {
    return count_ == 1 ? "ShuffleDataset" : "ShuffleAndRepeatDataset";
  }

  class Iter : public IteratorBase {
   public:
    Iter(const ShuffleDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.count_ != 0 ? ds.input_->MakeIterator(prefix) : nullptr) {
      input_exhausted_ = input_ == nullptr;
      // Each new iterator (an epoch under Repeat) gets its own order when reshuffling.
      iteration_ = ds.reshuffle_ ? ds.iterations_.fetch_add(1) : 0;
      rng_.seed(ds.base_seed_ + iteration_ * 0xBF58476D1CE4E5B9ull);
    }
    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (!input_exhausted_ && static_cast<int64_t>(buffer_.size()) < ds_.buffer_size_) {
        Element e;
        if (!input_->GetNext(ctx, &e)) {
          // The next epoch, unless this was the last one or the input is empty (which would
          // repeat forever).
          ++epoch_;
          if ((ds_.count_ >= 0 && epoch_ >= ds_.count_) || !produced_in_epoch_) {
            input_exhausted_ = true;
            break;
          }
          input_ = ds_.input_->MakeIterator(prefix());
          produced_in_epoch_ = false;
          continue;
        }
        produced_in_epoch_ = true;
        buffer_.push_back(std::move(e));
        origins_buffer_.push_back(input_->origins());
      }
      if (buffer_.empty()) return false;
      const size_t i = std::uniform_int_distribution<size_t>(0, buffer_.size() - 1)(rng_);
      std::swap(buffer_[i], buffer_.back());
      std::swap(origins_buffer_[i], origins_buffer_.back());
      *out = std::move(buffer_.back());
      buffer_.pop_back();
      origins_ = std::move(origins_buffer_.back());
      origins_buffer_.pop_back();
      return true;
    }
    const RecordOrigins& origins() const override { return origins_; }
    void Save(IteratorState& state) override {
      if (input_ != nullptr) input_->Save(state);
      state.WriteInt(Key("input_exhausted"), input_exhausted_);
      if (ds_.count_ != 1) state.WriteInt(Key("epoch"), epoch_);
      state.WriteInt(Key("iteration"), static_cast<int64_t>(iteration_));
      std::ostringstream rng_text;
      rng_text << rng_;
      state.WriteString(Key("rng"), rng_text.str());
      state.WriteInt(Key("buffer_size"), static_cast<int64_t>(buffer_.size()));
      for (size_t i = 0; i < buffer_.size(); ++i) SaveElement(state, Key(StrCat("buffer.", i)), buffer_[i]);
    }
    void Restore(IteratorState& state) override {
      if (input_ != nullptr) input_->Restore(state);
      input_exhausted_ = state.ReadInt(Key("input_exhausted")) != 0;
      if (ds_.count_ != 1) epoch_ = state.ReadInt(Key("epoch"));
      produced_in_epoch_ = true;
      iteration_ = static_cast<uint64_t>(state.ReadInt(Key("iteration")));
      // Later epochs continue the saved run's sequence of orders.
      uint64_t next = ds_.iterations_.load();
      while (next <= iteration_ && !ds_.iterations_.compare_exchange_weak(next, iteration_ + 1)) {
      }
      std::istringstream rng_text(state.ReadString(Key("rng")));
      rng_text >> rng_;
      if (!rng_text) DataLoss("Iterator state of ShuffleDataset has a corrupt random state");
      buffer_.clear();
      const int64_t n = state.ReadInt(Key("buffer_size"));
      for (int64_t i = 0; i < n; ++i) buffer_.push_back(RestoreElement(state, Key(StrCat("buffer.", i))));
      origins_buffer_.assign(buffer_.size(), {});  // origins are not saved
    }

   private:
    const ShuffleDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
    std::vector<Element> buffer_;
    std::vector<RecordOrigins> origins_buffer_;  // beside buffer_
    RecordOrigins origins_;                      // of the element last returned
    bool input_exhausted_ = false;
    int64_t epoch_ = 0;               // of the input, from 0
    bool produced_in_epoch_ = false;  // the current epoch of the input has given an element
    uint64_t iteration_ = 0;
    std::mt19937_64 rng_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Shuffle");
  }

 private:
  DatasetRef input_;
  int64_t buffer_size_;
  bool reshuffle_;
  int64_t count_;  // epochs of the input: 1 for ShuffleDataset, -1 for forever
  uint64_t base_seed_;
  mutable std::atomic<uint64_t> iterations_{0};
};

struct ShuffleDatasetOp : DatasetOpKernel {
  explicit ShuffleDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c), reshuffle_(c.GetAttr<bool>("reshuffle_each_iteration")) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int64_t buffer_size = ScalarInt(ctx, 1);
    if (buffer_size < 1) InvalidArgument("buffer_size must be greater than zero.");
    const int64_t count = type_string() == "ShuffleAndRepeatDataset" ? ScalarInt(ctx, 4) : 1;
    return std::make_shared<ShuffleDataset>(Input(ctx), buffer_size, ScalarInt(ctx, 2), ScalarInt(ctx, 3),
                                            reshuffle_, count);
  }
  bool reshuffle_;
};
FT_REGISTER_KERNEL("ShuffleDataset", ShuffleDatasetOp);
FT_REGISTER_KERNEL("ShuffleAndRepeatDataset", ShuffleDatasetOp);

}  // namespace
}  // namespace flowtrain::data
