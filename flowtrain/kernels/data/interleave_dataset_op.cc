// The kernels of FlatMapDataset, InterleaveDataset and ParallelInterleaveDatasetV4: a function
// of the graph's library maps each input element to a dataset, and the elements of those
// datasets come out interleaved. `cycle_length` of them are open at once and each gives
// `block_length` elements in turn; an exhausted one is replaced, in its place in the cycle, by
// the dataset of the next input element. FlatMap is the case of one open dataset read to its
// end. ParallelInterleaveDatasetV4 gives this same order (TF's deterministic one) from one
// thread: its buffering inputs only tune TF's prefetching.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/dataset_function.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class InterleaveDataset : public DatasetBase {
 public:
  InterleaveDataset(DatasetRef input, std::shared_ptr<const GraphDatasetFunction> fn, int64_t cycle_length,
                    int64_t block_length, std::string kind)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        cycle_length_(cycle_length),
        block_length_(block_length),
        kind_(std::move(kind)) {}
  std::string DebugString() const override { return StrCat(kind_, "Dataset(", fn_->name(), ")"); }

  class Iter : public IteratorBase {
   public:
    Iter(const InterleaveDataset& ds, std::string prefix)
        : IteratorBase(prefix),
          ds_(ds),
          input_(ds.input_->MakeIterator(prefix)),
          slots_(static_cast<size_t>(ds.cycle_length_)) {}

    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (!end_of_input_ || num_open_ > 0) {
        Slot& slot = slots_[cycle_index_];
        if (slot.iterator != nullptr) {
          if (slot.iterator->GetNext(ctx, out)) {
            if (++block_index_ == ds_.block_length_) AdvanceInCycle();
            return true;
          }
          slot = Slot();
          --num_open_;
          AdvanceInCycle();
        } else if (!end_of_input_) {
          Element args;
          if (!input_->GetNext(ctx, &args)) {
            end_of_input_ = true;
            continue;
          }
          Open(ctx, slot, std::move(args));
        } else {
          AdvanceInCycle();
        }
      }
      return false;
    }

    // The position: the input's, the cycle's, and per open dataset the input element it was
    // made from (a restore calls the function on it again) and its iterator's position.
    void Save(IteratorState& state) override {
      input_->Save(state);
      state.WriteInt(Key("cycle_index"), cycle_index_);
      state.WriteInt(Key("block_index"), block_index_);
      state.WriteInt(Key("end_of_input"), end_of_input_);
      for (size_t i = 0; i < slots_.size(); ++i) {
        const bool open = slots_[i].iterator != nullptr;
        state.WriteInt(Key(StrCat("slot.", i, ".open")), open);
        if (!open) continue;
        SaveElement(state, Key(StrCat("slot.", i, ".args")), slots_[i].args);
        slots_[i].iterator->Save(state);
      }
    }
    void Restore(IteratorState& state) override {
      input_->Restore(state);
      cycle_index_ = static_cast<size_t>(state.ReadInt(Key("cycle_index")));
      block_index_ = state.ReadInt(Key("block_index"));
      end_of_input_ = state.ReadInt(Key("end_of_input")) != 0;
      if (cycle_index_ >= slots_.size())
        DataLoss(ds_.kind_, " iterator state has cycle index ", cycle_index_);
      num_open_ = 0;
      IteratorContext ctx;
      for (size_t i = 0; i < slots_.size(); ++i) {
        slots_[i] = Slot();
        if (state.ReadInt(Key(StrCat("slot.", i, ".open"))) == 0) continue;
        Open(ctx, slots_[i], RestoreElement(state, Key(StrCat("slot.", i, ".args"))), i);
        slots_[i].iterator->Restore(state);
      }
    }

   private:
    struct Slot {
      Element args;                            // the input element the dataset was made from
      DatasetRef dataset;                      // outlives its iterator, which refers to it
      std::unique_ptr<IteratorBase> iterator;  // null: the slot is free
    };

    void Open(IteratorContext& ctx, Slot& slot, Element args, size_t index) {
      slot.dataset = ds_.fn_->CallForDataset(ctx, args);
      slot.args = std::move(args);
      slot.iterator = slot.dataset->MakeIterator(StrCat(prefix(), "[", index, "]"));
      ++num_open_;
    }
    void Open(IteratorContext& ctx, Slot& slot, Element args) {
      Open(ctx, slot, std::move(args), cycle_index_);
    }

    void AdvanceInCycle() {
      block_index_ = 0;
      cycle_index_ = (cycle_index_ + 1) % slots_.size();
    }

    const InterleaveDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
    std::vector<Slot> slots_;
    size_t cycle_index_ = 0;
    int64_t block_index_ = 0;  // elements the current slot gave in this turn
    bool end_of_input_ = false;
    int num_open_ = 0;
  };

  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, StrCat(prefix, "::", kind_));
  }

 private:
  DatasetRef input_;
  std::shared_ptr<const GraphDatasetFunction> fn_;
  int64_t cycle_length_;
  int64_t block_length_;
  std::string kind_;  // "FlatMap", "Interleave" or "ParallelInterleave", naming the iterator
};

// cycle_length and block_length follow the captured inputs; AUTOTUNE (-1) as cycle_length is
// the number of cores, as in TF.
class InterleaveDatasetOp : public DatasetOpKernel {
 public:
  InterleaveDatasetOp(OpKernelConstruction& c, std::string kind, bool has_lengths)
      : DatasetOpKernel(c),
        func_(c.node().GetAttrValue("f").func()),
        kind_(std::move(kind)),
        has_lengths_(has_lengths) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    int64_t cycle_length = 1;
    int64_t block_length = std::numeric_limits<int64_t>::max();
    if (has_lengths_) {
      const int first = 1 + NumCapturedInputs(node());
      cycle_length = ScalarInt(ctx, first);
      block_length = ScalarInt(ctx, first + 1);
      if (cycle_length == -1)
        cycle_length = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
      if (cycle_length <= 0) InvalidArgument("cycle_length must be greater than zero.");
      if (block_length <= 0) InvalidArgument("block_length must be greater than zero.");
      // More open datasets than this would only hold memory: a bound against a hostile graph.
      if (cycle_length > (int64_t{1} << 16)) InvalidArgument("cycle_length ", cycle_length, " is too large");
    }
    auto fn = GraphDatasetFunction::Instantiate(ctx, func_, CapturedInputs(ctx, 1));
    return std::make_shared<InterleaveDataset>(Input(ctx), std::move(fn), cycle_length, block_length, kind_);
  }

 private:
  tensorflow::NameAttrList func_;
  std::string kind_;
  bool has_lengths_;
};

struct FlatMapDatasetOp : InterleaveDatasetOp {
  explicit FlatMapDatasetOp(OpKernelConstruction& c) : InterleaveDatasetOp(c, "FlatMap", false) {}
};
struct PlainInterleaveDatasetOp : InterleaveDatasetOp {
  explicit PlainInterleaveDatasetOp(OpKernelConstruction& c) : InterleaveDatasetOp(c, "Interleave", true) {}
};
struct ParallelInterleaveDatasetOp : InterleaveDatasetOp {
  explicit ParallelInterleaveDatasetOp(OpKernelConstruction& c)
      : InterleaveDatasetOp(c, "ParallelInterleave", true) {}
};
FT_REGISTER_KERNEL("FlatMapDataset", FlatMapDatasetOp);
FT_REGISTER_KERNEL("InterleaveDataset", PlainInterleaveDatasetOp);
FT_REGISTER_KERNEL("ParallelInterleaveDatasetV4", ParallelInterleaveDatasetOp);

}  // namespace
}  // namespace flowtrain::data
