// The kernels of ShuffleDataset, ShuffleAndRepeatDataset and ShuffleDatasetV3, in TF's order: for the same
// (seed, seed2) they yield what TF 2.21 yields (measured against it in
// tests/tf/dataset_interop_test.cc).
//
// TF's algorithm, as this file reproduces it:
//  - An iterator draws with Philox4x32-10 keyed by its (seed, seed2), one 32-bit word at a
//    time. Before each element it fills the buffer to buffer_size from the input, then takes
//    the element at offset `word % buffered` from the oldest buffered one; the oldest element
//    moves into the hole, so the buffer stays a queue in arrival order but for that swap.
//  - An iterator's (seed, seed2) come from the dataset's seed generator: without
//    reshuffle_each_iteration, the dataset's (seed, seed2) every time; with it, the next two
//    words of a Philox stream keyed by the dataset's (seed, seed2), so that each iterator (each
//    epoch under Repeat) gets its own order and the first already differs from the fixed one.
//  - ShuffleAndRepeat is Repeat over Shuffle: an epoch ends when the buffer has drained, and
//    the next starts with an empty buffer and fresh seeds from the same generator.
//  - (0, 0) asks for nondeterministic seeds.
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/philox_random.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

// The stream of 32-bit words of Philox keyed by (seed, seed2), positioned after `skip` words
// (TF's SingleSampleAdapter over PhiloxRandom).
class WordStream {
 public:
  WordStream(int64_t seed, int64_t seed2, uint64_t skip)
      : gen_(static_cast<uint64_t>(seed), static_cast<uint64_t>(seed2)), words_(&gen_) {
    gen_.Skip(skip / random::PhiloxRandom::kResultElementCount);
    for (uint64_t i = 0; i < skip % random::PhiloxRandom::kResultElementCount; ++i) words_();
  }
  WordStream(const WordStream&) = delete;
  WordStream& operator=(const WordStream&) = delete;
  uint32_t operator()() { return words_(); }

 private:
  random::PhiloxRandom gen_;
  random::SingleSampleAdapter words_;  // reads gen_
};

class ShuffleDataset : public DatasetBase {
 public:
  ShuffleDataset(DatasetRef input, int64_t buffer_size, int64_t seed, int64_t seed2, bool reshuffle,
                 int64_t count)
      : input_(std::move(input)), buffer_size_(buffer_size), reshuffle_(reshuffle), count_(count) {
    if (seed == 0 && seed2 == 0) {
      std::random_device device;
      auto draw64 = [&device] { return static_cast<int64_t>((uint64_t{device()} << 32) | device()); };
      seed = draw64();
      seed2 = draw64();
    }
    seed_ = seed;
    seed2_ = seed2;
  }
  std::string DebugString() const override {
    return count_ == 1 ? "ShuffleDataset" : "ShuffleAndRepeatDataset";
  }

  class Iter : public IteratorBase {
   public:
    Iter(const ShuffleDataset& ds, std::string prefix) : IteratorBase(prefix), ds_(ds) {
      if (ds.count_ != 0) StartEpoch();
    }
    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (true) {
        while (input_ != nullptr && static_cast<int64_t>(buffer_.size()) < ds_.buffer_size_) {
          Element e;
          if (!input_->GetNext(ctx, &e)) {
            input_.reset();
            break;
          }
          produced_in_epoch_ = true;
          buffer_.push_back(std::move(e));
          origins_buffer_.push_back(input_->origins());
        }
        if (!buffer_.empty()) break;
        if (input_ != nullptr || ds_.count_ == 0) return false;
        // The epoch has drained: the next one, unless this was the last or the input is empty
        // (which would repeat forever).
        ++epoch_;
        if ((ds_.count_ >= 0 && epoch_ >= ds_.count_) || !produced_in_epoch_) return false;
        StartEpoch();
      }
      const size_t i = Random() % buffer_.size();
      *out = std::move(buffer_[i]);
      origins_ = std::move(origins_buffer_[i]);
      if (i != 0) {
        buffer_[i] = std::move(buffer_.front());
        origins_buffer_[i] = std::move(origins_buffer_.front());
      }
      buffer_.pop_front();
      origins_buffer_.pop_front();
      return true;
    }
    const RecordOrigins& origins() const override { return origins_; }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("input_exhausted"), input_ == nullptr);
      if (input_ != nullptr) input_->Save(state);
      if (ds_.count_ != 1) state.WriteInt(Key("epoch"), epoch_);
      state.WriteInt(Key("produced_in_epoch"), produced_in_epoch_);
      state.WriteInt(Key("seed"), seed_);
      state.WriteInt(Key("seed2"), seed2_);
      state.WriteInt(Key("num_random_samples"), static_cast<int64_t>(num_random_samples_));
      state.WriteInt(Key("ds_num_random_samples"), static_cast<int64_t>(ds_.generator_samples()));
      state.WriteInt(Key("buffer_size"), static_cast<int64_t>(buffer_.size()));
      for (size_t i = 0; i < buffer_.size(); ++i) SaveElement(state, Key(StrCat("buffer.", i)), buffer_[i]);
    }
    void Restore(IteratorState& state) override {
      if (ds_.count_ != 1) epoch_ = state.ReadInt(Key("epoch"));
      if (state.ReadInt(Key("input_exhausted")) != 0) {
        input_.reset();
      } else {
        // The saved state may be of a later epoch than this iterator's input.
        input_ = ds_.input_->MakeIterator(prefix());
        input_->Restore(state);
      }
      produced_in_epoch_ = state.ReadInt(Key("produced_in_epoch")) != 0;
      seed_ = state.ReadInt(Key("seed"));
      seed2_ = state.ReadInt(Key("seed2"));
      num_random_samples_ = static_cast<uint64_t>(state.ReadInt(Key("num_random_samples")));
      words_ = std::make_unique<WordStream>(seed_, seed2_, num_random_samples_);
      // Later iterators (epochs under Repeat) continue the saved run's sequence of seeds.
      ds_.set_generator_samples(static_cast<uint64_t>(state.ReadInt(Key("ds_num_random_samples"))));
      buffer_.clear();
      const int64_t n = state.ReadInt(Key("buffer_size"));
      if (n < 0 || n > ds_.buffer_size_) {
        DataLoss("Iterator state of ShuffleDataset holds ", n, " buffered elements, the buffer holds ",
                 ds_.buffer_size_);
      }
      for (int64_t i = 0; i < n; ++i) buffer_.push_back(RestoreElement(state, Key(StrCat("buffer.", i))));
      origins_buffer_.assign(buffer_.size(), {});  // origins are not saved
    }

   private:
    // A new pass over the input, with the seeds the dataset's generator gives it.
    void StartEpoch() {
      input_ = ds_.input_->MakeIterator(prefix());
      produced_in_epoch_ = false;
      std::tie(seed_, seed2_) = ds_.NextIteratorSeeds();
      num_random_samples_ = 0;
      words_ = std::make_unique<WordStream>(seed_, seed2_, 0);
    }
    uint32_t Random() {
      ++num_random_samples_;
      return (*words_)();
    }

    const ShuffleDataset& ds_;
    std::unique_ptr<IteratorBase> input_;       // null once the current epoch's input has ended
    std::deque<Element> buffer_;                // in arrival order, but for the swap of each draw
    std::deque<RecordOrigins> origins_buffer_;  // beside buffer_
    RecordOrigins origins_;                     // of the element last returned
    int64_t epoch_ = 0;                         // of the input, from 0
    bool produced_in_epoch_ = false;            // the current epoch of the input has given an element
    int64_t seed_ = 0;
    int64_t seed2_ = 0;
    uint64_t num_random_samples_ = 0;  // words drawn from words_
    std::unique_ptr<WordStream> words_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Shuffle");
  }

 private:
  // TF's seed generators: RandomSeedGenerator with reshuffle_each_iteration, FixedSeedGenerator
  // without. Shared by all iterators of the dataset.
  std::pair<int64_t, int64_t> NextIteratorSeeds() const {
    if (!reshuffle_) return {seed_, seed2_};
    absl::MutexLock lock(&mu_);
    WordStream words(seed_, seed2_, generator_samples_);
    generator_samples_ += 2;
    const int64_t seed = words();
    return {seed, words()};
  }
  uint64_t generator_samples() const {
    absl::MutexLock lock(&mu_);
    return generator_samples_;
  }
  void set_generator_samples(uint64_t samples) const {
    absl::MutexLock lock(&mu_);
    generator_samples_ = samples;
  }

  DatasetRef input_;
  int64_t buffer_size_;
  bool reshuffle_;
  int64_t count_;  // epochs of the input: 1 for ShuffleDataset, -1 for forever
  int64_t seed_;
  int64_t seed2_;
  mutable absl::Mutex mu_;
  mutable uint64_t generator_samples_ ABSL_GUARDED_BY(mu_) = 0;  // words the generator has drawn
};

// ShuffleDataset, ShuffleAndRepeatDataset and ShuffleDatasetV3. V3's seed generator (input 4)
// must be a DummySeedGenerator, as in the graphs TF writes: the dataset then keeps its own
// generator, as V1 does. An AnonymousSeedGenerator (eager TF) would share its state across
// datasets, which flowtrain does not model.
struct ShuffleDatasetOp : DatasetOpKernel {
  explicit ShuffleDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c), reshuffle_(c.GetAttr<bool>("reshuffle_each_iteration")) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    if (type_string() == "ShuffleDatasetV3") {
      const ResourceHandle& generator = ctx->input(4).scalar<ResourceHandle>();
      if (generator.type_name != "DummySeedGenerator") {
        Unimplemented("ShuffleDatasetV3 '", name(), "' takes a seed generator of type '", generator.type_name,
                      "'; flowtrain supports only DummySeedGenerator, as TF's graphs write");
      }
    }
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
FT_REGISTER_KERNEL("ShuffleDatasetV3", ShuffleDatasetOp);

// TF 2.x's placeholder for the seed generator of ShuffleDatasetV3: "the dataset's own".
struct DummySeedGeneratorOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor handle(DT_RESOURCE, TensorShape());
    handle.scalar<ResourceHandle>() = {.container = "", .name = name(), .type_name = "DummySeedGenerator"};
    ctx->set_output(0, handle);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("DummySeedGenerator", DummySeedGeneratorOp);

}  // namespace
}  // namespace flowtrain::data
