// The kernel of ShardDataset: every num_shards-th element of the input, starting with element
// `index` (one worker's share of a dataset).
#include <memory>
#include <string>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class ShardDataset : public DatasetBase {
 public:
  ShardDataset(DatasetRef input, int64_t num_shards, int64_t index, bool require_non_empty)
      : input_(std::move(input)),
        num_shards_(num_shards),
        index_(index),
        require_non_empty_(require_non_empty) {}
  std::string DebugString() const override { return StrCat("ShardDataset(", num_shards_, ", ", index_, ")"); }

  class Iter : public IteratorBase {
   public:
    Iter(const ShardDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      if (exhausted_) return false;
      // Skips to the next element of this shard: input position next_index_ is the one to keep
      // when next_index_ % num_shards == index.
      while (next_index_ % ds_.num_shards_ != ds_.index_) {
        if (!input_->GetNext(ctx, out)) return End();
        ++next_index_;
      }
      if (!input_->GetNext(ctx, out)) return End();
      ++next_index_;
      ++produced_;
      return true;
    }
    const RecordOrigins& origins() const override { return input_->origins(); }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("next_index"), next_index_);
      state.WriteInt(Key("produced"), produced_);
      state.WriteInt(Key("exhausted"), exhausted_);
      input_->Save(state);
    }
    void Restore(IteratorState& state) override {
      next_index_ = state.ReadInt(Key("next_index"));
      produced_ = state.ReadInt(Key("produced"));
      exhausted_ = state.ReadInt(Key("exhausted")) != 0;
      input_->Restore(state);
    }

   private:
    // TF's check for a file-sharded pipeline: fewer input elements (files) than shards leaves
    // some worker without data.
    bool End() {
      exhausted_ = true;
      if (ds_.require_non_empty_ && next_index_ < ds_.num_shards_) {
        InvalidArgument("Could not apply FILE based sharding: the dataset only has ", next_index_,
                        " file(s), which is not enough for the required ", ds_.num_shards_,
                        " shards/workers. Split your input files into a larger number of small files "
                        "such that number of files is greater than number of shards/workers.");
      }
      return false;
    }
    const ShardDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
    int64_t next_index_ = 0;  // input elements consumed
    int64_t produced_ = 0;
    bool exhausted_ = false;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Shard");
  }

 private:
  DatasetRef input_;
  int64_t num_shards_, index_;
  bool require_non_empty_;
};

struct ShardDatasetOp : DatasetOpKernel {
  explicit ShardDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c), require_non_empty_(c.GetAttr<bool>("require_non_empty")) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int64_t num_shards = ScalarInt(ctx, 1);
    const int64_t index = ScalarInt(ctx, 2);
    if (num_shards <= 0) {
      InvalidArgument("Number of shards must be greater than zero (currently num_shards = ", num_shards,
                      ").");
    }
    if (index < 0 || index >= num_shards) {
      InvalidArgument("Index must be between 0 and ", num_shards - 1, " (currently index = ", index, ").");
    }
    return std::make_shared<ShardDataset>(Input(ctx), num_shards, index, require_non_empty_);
  }
  bool require_non_empty_;
};
FT_REGISTER_KERNEL("ShardDataset", ShardDatasetOp);

}  // namespace
}  // namespace flowtrain::data
