// Kernels of the tf.data ops: each dataset op builds a DatasetBase (dataset.h) from its
// inputs and passes it on in a DT_VARIANT tensor; the iterator ops create, advance, save and
// restore the iterator kept in the session's resource manager.
#include <algorithm>
#include <deque>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/record_reader.h"
#include "flowtrain/kernels/batch_util.h"
#include "flowtrain/kernels/dataset.h"
#include "flowtrain/kernels/op_kernel.h"
#include "flowtrain/ops/dataset_functions.h"

namespace flowtrain::data {
namespace {

using Element = std::vector<Tensor>;

// One pass of a wait for a condition on `cv`, which the caller loops over while the
// condition is false: Cancelled/DeadlineExceeded if the run has ended, otherwise a wait of at
// most 20 ms, so that the run's cancellation and deadline are honoured even though the
// producers it waits for do not know about them.
//
//   while (!ready) WaitOnce(mu_, cv_, ctx, "PrefetchDataset");
void WaitOnce(absl::Mutex& mu, absl::CondVar& cv, const IteratorContext& ctx, std::string_view what)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  if (ctx.cancellation != nullptr && ctx.cancellation->IsCancelled()) Cancelled(what, " was cancelled");
  const auto now = std::chrono::steady_clock::now();
  if (now >= ctx.deadline) DeadlineExceeded("Timed out waiting in ", what);
  const auto wake_at = std::min(ctx.deadline, now + std::chrono::milliseconds(20));
  cv.WaitWithTimeout(&mu, absl::FromChrono(wake_at - now));
}

void SaveElement(IteratorState& state, const std::string& key, const Element& element) {
  state.WriteInt(key + ".size", static_cast<int64_t>(element.size()));
  for (size_t i = 0; i < element.size(); ++i) state.WriteTensor(StrCat(key, ".", i), element[i]);
}

Element RestoreElement(const IteratorState& state, const std::string& key) {
  Element element(state.ReadInt(key + ".size"));
  for (size_t i = 0; i < element.size(); ++i) element[i] = state.ReadTensor(StrCat(key, ".", i));
  return element;
}

// ---- TensorSliceDataset ----

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

// ---- TFRecordDataset ----

class TFRecordDataset : public DatasetBase {
 public:
  TFRecordDataset(std::vector<std::string> files, std::string compression, int64_t buffer_size)
      : files_(std::move(files)), compression_(std::move(compression)), buffer_size_(buffer_size) {
    for (const std::string& file : files_) shared_files_.push_back(std::make_shared<const std::string>(file));
  }
  std::string DebugString() const override { return "TFRecordDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const TFRecordDataset& ds, std::string prefix) : IteratorBase(std::move(prefix)), ds_(ds) {}
    bool GetNext(IteratorContext&, Element* out) override {
      std::string record;
      for (;;) {
        if (reader_ == nullptr) {
          if (file_index_ >= static_cast<int64_t>(ds_.files_.size())) return false;
          Open();
        }
        if (Read(&record)) {
          out->assign(1, Tensor::Scalar<std::string>(std::move(record)));
          origins_[0] = {ds_.shared_files_[file_index_], record_index_ - 1};
          return true;
        }
        reader_.reset();
        ++file_index_;
        record_index_ = 0;
      }
    }
    const RecordOrigins& origins() const override { return origins_; }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("file_index"), file_index_);
      state.WriteInt(Key("record_index"), record_index_);
    }
    void Restore(IteratorState& state) override {
      file_index_ = state.ReadInt(Key("file_index"));
      const int64_t skip = state.ReadInt(Key("record_index"));
      reader_.reset();
      record_index_ = 0;
      if (file_index_ >= static_cast<int64_t>(ds_.files_.size())) return;
      Open();
      std::string record;
      while (record_index_ < skip) {
        if (!Read(&record)) {
          DataLoss("Cannot restore the position of TFRecordDataset: ", ds_.files_[file_index_], " has only ",
                   record_index_, " records, the saved position is record ", skip);
        }
      }
    }

   private:
    void Open() {
      io::RecordReaderOptions options;
      options.compression_type = ds_.compression_;
      if (ds_.buffer_size_ > 0) options.buffer_bytes = static_cast<size_t>(ds_.buffer_size_);
      reader_ = std::make_unique<io::RecordReader>(ds_.files_[file_index_], options);
    }
    bool Read(std::string* record) {
      try {
        if (!reader_->ReadRecord(record)) return false;
      } catch (const DataLossError& e) {
        DataLoss("Record ", record_index_, " of ", ds_.files_[file_index_], " is corrupt: ", e.what());
      }
      ++record_index_;
      return true;
    }

    const TFRecordDataset& ds_;
    int64_t file_index_ = 0;
    int64_t record_index_ = 0;
    std::unique_ptr<io::RecordReader> reader_;
    RecordOrigins origins_ = RecordOrigins(1);  // of the record last returned
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::TFRecord");
  }

 private:
  std::vector<std::string> files_;
  std::vector<std::shared_ptr<const std::string>> shared_files_;  // the same, for RecordOrigins
  std::string compression_;
  int64_t buffer_size_;
};

// ---- MapDataset / ParallelMapDataset ----

class MapDataset : public DatasetBase {
 public:
  MapDataset(DatasetRef input, std::string function_name, std::vector<DataType> types, int parallelism)
      : input_(std::move(input)),
        function_name_(std::move(function_name)),
        fn_(LookupMapFunction(function_name_)),
        types_(std::move(types)),
        parallelism_(parallelism) {}
  std::string DebugString() const override { return "MapDataset(" + function_name_ + ")"; }

  // Calls the function and checks that it returned what the op promised. Errors name the
  // records the element came from, unless the function names them itself.
  Element Apply(const Element& in, const RecordOrigins& origins) const {
    Element out;
    try {
      out = fn_.fn(in, origins);
    } catch (...) {
      if (origins.empty() || fn_.names_records) throw;
      RethrowWithContext(ErrorFromException(std::current_exception()), StrCat("In ", DescribeOrigins(origins), ": "));
    }
    if (out.size() != types_.size()) {
      InvalidArgument("Map function ", function_name_, " returned ", out.size(), " tensors, expected ",
                      types_.size());
    }
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].dtype() != types_[i]) {
        InvalidArgument("Map function ", function_name_, " returned ", DataTypeString(out[i].dtype()),
                        " for component ", i, ", expected ", DataTypeString(types_[i]));
      }
    }
    return out;
  }

  // The origins of a mapped element: a single record's output still comes from that record;
  // the rows of a mapped batch need not match the input's, so they have none.
  static const RecordOrigins& KeptOrigins(const RecordOrigins& in) { return in.size() == 1 ? in : NoOrigins(); }

  class SequentialIter : public IteratorBase {
   public:
    SequentialIter(const MapDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      Element in;
      if (!input_->GetNext(ctx, &in)) return false;
      *out = ds_.Apply(in, input_->origins());
      return true;
    }
    const RecordOrigins& origins() const override { return KeptOrigins(input_->origins()); }
    void Save(IteratorState& state) override { input_->Save(state); }
    void Restore(IteratorState& state) override { input_->Restore(state); }

   private:
    const MapDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
  };

  // Runs up to `parallelism` calls ahead on worker threads of its own; results come out in
  // order. The workers sleep on a condition variable when idle rather than spinning as the
  // intra-op pool's do: on a machine with few cores a spinning map worker takes the core the
  // reader upstream or the training step downstream needs (it halved a TFRecord pipeline's
  // throughput on 2 cores).
  class ParallelIter : public IteratorBase {
   public:
    ParallelIter(const MapDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {
      for (int i = 0; i < ds.parallelism_; ++i) workers_.emplace_back([this] { Work(); });
    }
    ~ParallelIter() override {
      {
        absl::MutexLock lock(&mu_);
        stopping_ = true;  // workers finish what is queued, then leave
      }
      work_cv_.SignalAll();
      for (std::thread& worker : workers_) worker.join();
    }
    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (!input_exhausted_ && static_cast<int>(slots_.size()) < ds_.parallelism_) {
        Element in;
        if (!input_->GetNext(ctx, &in)) {
          input_exhausted_ = true;
          break;
        }
        auto slot = std::make_shared<Slot>();
        slot->origins = input_->origins();
        slots_.push_back(slot);
        {
          absl::MutexLock lock(&mu_);
          ++in_flight_;
          queue_.push_back({slot, std::move(in)});
        }
        work_cv_.Signal();
      }
      if (slots_.empty()) return false;
      std::shared_ptr<Slot> slot = slots_.front();
      {
        absl::MutexLock lock(&mu_);
        while (!slot->done) WaitOnce(mu_, cv_, ctx, "ParallelMapDataset");
      }
      slots_.pop_front();
      if (slot->error) std::rethrow_exception(slot->error);
      *out = std::move(slot->result);
      origins_ = std::move(slot->origins);
      return true;
    }
    const RecordOrigins& origins() const override { return KeptOrigins(origins_); }
    void Save(IteratorState& state) override {
      {
        absl::MutexLock lock(&mu_);
        while (in_flight_ != 0) cv_.Wait(&mu_);
      }
      input_->Save(state);
      state.WriteInt(Key("input_exhausted"), input_exhausted_);
      int64_t saved = 0;
      for (const auto& slot : slots_) {
        if (slot->error) break;  // an element that failed is recomputed after a restore
        SaveElement(state, Key(StrCat("buffer.", saved++)), slot->result);
      }
      state.WriteInt(Key("buffer_size"), saved);
    }
    void Restore(IteratorState& state) override {
      input_->Restore(state);
      input_exhausted_ = state.ReadInt(Key("input_exhausted")) != 0;
      slots_.clear();
      const int64_t n = state.ReadInt(Key("buffer_size"));
      for (int64_t i = 0; i < n; ++i) {
        auto slot = std::make_shared<Slot>();
        slot->result = RestoreElement(state, Key(StrCat("buffer.", i)));
        slot->done = true;
        slots_.push_back(slot);
      }
    }

   private:
    // A call's result. Its fields are guarded by the iterator's mu_ until `done`, after which
    // only the caller's thread touches them (the analysis cannot name another object's mutex).
    struct Slot {
      bool done = false;
      Element result;
      std::exception_ptr error;
      RecordOrigins origins;  // of the input, set before the call is queued
    };
    struct Call {
      std::shared_ptr<Slot> slot;
      Element input;
    };

    // A worker: applies the function to queued inputs until the iterator is destroyed.
    void Work() ABSL_LOCKS_EXCLUDED(mu_) {
      mu_.Lock();
      for (;;) {
        while (!stopping_ && queue_.empty()) work_cv_.Wait(&mu_);
        if (queue_.empty()) {
          mu_.Unlock();
          return;
        }
        Call call = std::move(queue_.front());
        queue_.pop_front();
        mu_.Unlock();
        Element result;
        std::exception_ptr error;
        try {
          result = ds_.Apply(call.input, call.slot->origins);
        } catch (...) {
          error = std::current_exception();
        }
        call.input.clear();  // release the input outside the lock
        mu_.Lock();
        call.slot->result = std::move(result);
        call.slot->error = error;
        call.slot->done = true;
        --in_flight_;
        // Notified after unlocking, so that the caller does not wake only to wait for mu_.
        mu_.Unlock();
        cv_.SignalAll();
        mu_.Lock();
      }
    }

    const MapDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
    std::deque<std::shared_ptr<Slot>> slots_;  // in input order, owned by the caller's thread
    RecordOrigins origins_;                    // of the element last returned
    bool input_exhausted_ = false;
    absl::Mutex mu_;
    absl::CondVar cv_;       // a call finished
    absl::CondVar work_cv_;  // a call was queued, or stopping_
    std::deque<Call> queue_ ABSL_GUARDED_BY(mu_);  // calls no worker has taken yet
    int in_flight_ ABSL_GUARDED_BY(mu_) = 0;       // calls queued or running
    bool stopping_ ABSL_GUARDED_BY(mu_) = false;
    std::vector<std::thread> workers_;  // last: joined by the destructor before the rest goes
  };

  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    if (parallelism_ > 1) return std::make_unique<ParallelIter>(*this, prefix + "::ParallelMap");
    return std::make_unique<SequentialIter>(*this, prefix + "::Map");
  }

 private:
  DatasetRef input_;
  std::string function_name_;
  const RegisteredMapFunction& fn_;
  std::vector<DataType> types_;
  int parallelism_;
};

// ---- FilterDataset ----

class FilterDataset : public DatasetBase {
 public:
  FilterDataset(DatasetRef input, std::string function_name)
      : input_(std::move(input)), predicate_(LookupPredicateFunction(function_name)) {}
  std::string DebugString() const override { return "FilterDataset"; }
  class Iter : public IteratorBase {
   public:
    Iter(const FilterDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (input_->GetNext(ctx, out)) {
        if (ds_.predicate_(*out)) return true;
      }
      return false;
    }
    const RecordOrigins& origins() const override { return input_->origins(); }
    void Save(IteratorState& state) override { input_->Save(state); }
    void Restore(IteratorState& state) override { input_->Restore(state); }

   private:
    const FilterDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Filter");
  }

 private:
  DatasetRef input_;
  const PredicateFunction& predicate_;
};

// ---- ShuffleDataset ----

class ShuffleDataset : public DatasetBase {
 public:
  ShuffleDataset(DatasetRef input, int64_t buffer_size, int64_t seed, int64_t seed2, bool reshuffle)
      : input_(std::move(input)), buffer_size_(buffer_size), reshuffle_(reshuffle) {
    base_seed_ = seed == 0 && seed2 == 0
                     ? (static_cast<uint64_t>(std::random_device()()) << 32) ^ std::random_device()()
                     : static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(seed2);
  }
  std::string DebugString() const override { return "ShuffleDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const ShuffleDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {
      // Each new iterator (an epoch under Repeat) gets its own order when reshuffling.
      iteration_ = ds.reshuffle_ ? ds.iterations_.fetch_add(1) : 0;
      rng_.seed(ds.base_seed_ + iteration_ * 0xBF58476D1CE4E5B9ull);
    }
    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (!input_exhausted_ && static_cast<int64_t>(buffer_.size()) < ds_.buffer_size_) {
        Element e;
        if (!input_->GetNext(ctx, &e)) {
          input_exhausted_ = true;
          break;
        }
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
      input_->Save(state);
      state.WriteInt(Key("input_exhausted"), input_exhausted_);
      state.WriteInt(Key("iteration"), static_cast<int64_t>(iteration_));
      std::ostringstream rng_text;
      rng_text << rng_;
      state.WriteString(Key("rng"), rng_text.str());
      state.WriteInt(Key("buffer_size"), static_cast<int64_t>(buffer_.size()));
      for (size_t i = 0; i < buffer_.size(); ++i) SaveElement(state, Key(StrCat("buffer.", i)), buffer_[i]);
    }
    void Restore(IteratorState& state) override {
      input_->Restore(state);
      input_exhausted_ = state.ReadInt(Key("input_exhausted")) != 0;
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
  uint64_t base_seed_;
  mutable std::atomic<uint64_t> iterations_{0};
};

// ---- RepeatDataset ----

class RepeatDataset : public DatasetBase {
 public:
  RepeatDataset(DatasetRef input, int64_t count) : input_(std::move(input)), count_(count) {}
  std::string DebugString() const override { return "RepeatDataset"; }
  class Iter : public IteratorBase {
   public:
    Iter(const RepeatDataset& ds, std::string prefix) : IteratorBase(std::move(prefix)), ds_(ds) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      for (;;) {
        if (ds_.count_ >= 0 && epoch_ >= ds_.count_) return false;
        if (input_ == nullptr) {
          input_ = ds_.input_->MakeIterator(prefix());
          produced_in_epoch_ = false;
        }
        if (input_->GetNext(ctx, out)) {
          produced_in_epoch_ = true;
          return true;
        }
        input_.reset();
        ++epoch_;
        if (!produced_in_epoch_) return false;  // an empty input would repeat forever
      }
    }
    const RecordOrigins& origins() const override {
      return input_ != nullptr ? input_->origins() : NoOrigins();
    }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("epoch"), epoch_);
      state.WriteInt(Key("has_input"), input_ != nullptr);
      if (input_ != nullptr) input_->Save(state);
    }
    void Restore(IteratorState& state) override {
      epoch_ = state.ReadInt(Key("epoch"));
      input_.reset();
      if (state.ReadInt(Key("has_input")) != 0) {
        input_ = ds_.input_->MakeIterator(prefix());
        input_->Restore(state);
        produced_in_epoch_ = true;
      }
    }

   private:
    const RepeatDataset& ds_;
    int64_t epoch_ = 0;
    bool produced_in_epoch_ = false;
    std::unique_ptr<IteratorBase> input_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Repeat");
  }

 private:
  DatasetRef input_;
  int64_t count_;
};

// ---- BatchDatasetV2 ----

// batch_util::Stack for strings, moving them out of the elements that only the batch holds (a
// TFRecord pipeline's records) instead of copying them.
Tensor StackStrings(std::vector<Tensor>& column) {
  for (const Tensor& e : column) {
    if (e.shape() != column[0].shape() || !e.RefCountIsOne()) return batch_util::Stack(column, "BatchDataset");
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
        out->push_back(column[0].dtype() == DT_STRING ? StackStrings(column) : batch_util::Stack(column, "BatchDataset"));
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

// ---- PrefetchDataset ----

// Up to how many elements an autotuned prefetch buffers, and how many bytes of them at most.
constexpr int64_t kAutotuneMaxElements = 16;
constexpr int64_t kAutotuneMaxBytes = 64 << 20;

class PrefetchDataset : public DatasetBase {
 public:
  // `buffer_size` 0 or -1 (tf.data.experimental.AUTOTUNE) autotunes the buffer.
  PrefetchDataset(DatasetRef input, int64_t buffer_size) : input_(std::move(input)), buffer_size_(buffer_size) {}
  std::string DebugString() const override { return "PrefetchDataset"; }

  // A producer thread fills the buffer; errors travel through it in order, so an exception
  // from a map function upstream reaches the GetNext that would have returned that element.
  //
  // The producer refills in bursts: once the buffer is full it sleeps until the consumer has
  // taken half of it, then fills it up again. Waking it for every element taken cost a
  // training step that keeps every core busy about 10% (each wake-up preempts a thread of the
  // step's split matrix products, and the other waits for it); with a buffer of 8 or more the
  // wake-ups come every 4+ steps and the cost fell under 3%. An autotuned buffer holds up to
  // kAutotuneMaxElements, as many as fit in kAutotuneMaxBytes judged by the first element.
  class Iter : public IteratorBase {
   public:
    Iter(const PrefetchDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    ~Iter() override {
      {
        absl::MutexLock lock(&mu_);
        stopping_ = true;
      }
      cancellation_.StartCancel();
      space_cv_.SignalAll();
      ready_cv_.SignalAll();
      if (producer_.joinable()) producer_.join();
    }
    bool GetNext(IteratorContext& ctx, Element* out) override {
      absl::ReleasableMutexLock lock(&mu_);
      if (!producer_.joinable() && !ended_) producer_ = std::thread([this] { Produce(); });
      while (buffer_.empty() && !ended_) WaitOnce(mu_, ready_cv_, ctx, "PrefetchDataset");
      if (buffer_.empty()) {
        if (error_) std::rethrow_exception(error_);
        return false;
      }
      *out = std::move(buffer_.front());
      buffer_.pop_front();
      origins_ = std::move(origins_buffer_.front());
      origins_buffer_.pop_front();
      const bool refill = static_cast<int64_t>(buffer_.size()) <= capacity_ / 2;
      // Notified after unlocking, so that the producer does not wake only to wait for mu_.
      lock.Release();
      if (refill) space_cv_.Signal();
      return true;
    }
    const RecordOrigins& origins() const override { return origins_; }
    void Save(IteratorState& state) override {
      absl::MutexLock input_lock(&input_mu_);  // the producer is between elements
      absl::MutexLock lock(&mu_);
      input_->Save(state);
      state.WriteInt(Key("ended"), ended_ && error_ == nullptr);
      state.WriteInt(Key("buffer_size"), static_cast<int64_t>(buffer_.size()));
      for (size_t i = 0; i < buffer_.size(); ++i) SaveElement(state, Key(StrCat("buffer.", i)), buffer_[i]);
    }
    void Restore(IteratorState& state) override {
      absl::MutexLock input_lock(&input_mu_);
      absl::MutexLock lock(&mu_);
      if (producer_.joinable()) FailedPrecondition("PrefetchDataset: restore into a running iterator");
      input_->Restore(state);
      ended_ = state.ReadInt(Key("ended")) != 0;
      buffer_.clear();
      const int64_t n = state.ReadInt(Key("buffer_size"));
      for (int64_t i = 0; i < n; ++i) buffer_.push_back(RestoreElement(state, Key(StrCat("buffer.", i))));
      origins_buffer_.assign(buffer_.size(), {});  // origins are not saved
      if (!buffer_.empty()) SizeAutotunedBuffer(buffer_.front());
    }

   private:
    // An autotuned buffer's capacity, from the size of the first element.
    void SizeAutotunedBuffer(const Element& first) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (!autotune_ || sized_) return;
      sized_ = true;
      size_t bytes = 1;
      for (const Tensor& t : first) bytes += t.TotalBytes();
      capacity_ = std::clamp<int64_t>(kAutotuneMaxBytes / static_cast<int64_t>(bytes), 1, kAutotuneMaxElements);
    }

    void Produce() ABSL_LOCKS_EXCLUDED(mu_, input_mu_) {
      IteratorContext ctx{.cancellation = &cancellation_};
      for (;;) {
        {
          absl::MutexLock lock(&mu_);
          if (static_cast<int64_t>(buffer_.size()) >= capacity_) {
            while (!stopping_ && static_cast<int64_t>(buffer_.size()) > capacity_ / 2) space_cv_.Wait(&mu_);
          }
          if (stopping_) return;
        }
        Element e;
        RecordOrigins origins;
        bool got = false;
        std::exception_ptr error;
        // The element enters the buffer before input_mu_ is released, so Save never sees
        // the input advanced past an element that is in neither place.
        absl::MutexLock input_lock(&input_mu_);
        try {
          got = input_->GetNext(ctx, &e);
          if (got) origins = input_->origins();
        } catch (...) {
          error = std::current_exception();
        }
        {
          absl::MutexLock lock(&mu_);
          if (got) {
            SizeAutotunedBuffer(e);
            buffer_.push_back(std::move(e));
            origins_buffer_.push_back(std::move(origins));
          } else {
            ended_ = true;
            error_ = error;
          }
        }
        ready_cv_.Signal();  // GetNext calls are serialized: at most one waits
        if (!got) return;
      }
    }

    const PrefetchDataset& ds_;
    absl::Mutex input_mu_;  // held by the producer while it advances input_
    std::unique_ptr<IteratorBase> input_ ABSL_PT_GUARDED_BY(input_mu_);
    const bool autotune_ = ds_.buffer_size_ <= 0;
    absl::Mutex mu_;
    // Autotuned: set by the first element.
    int64_t capacity_ ABSL_GUARDED_BY(mu_) = autotune_ ? 1 : ds_.buffer_size_;
    bool sized_ ABSL_GUARDED_BY(mu_) = false;
    absl::CondVar space_cv_;  // the buffer has room, or stopping_
    absl::CondVar ready_cv_;  // the buffer has an element, or ended_
    std::deque<Element> buffer_ ABSL_GUARDED_BY(mu_);
    std::deque<RecordOrigins> origins_buffer_ ABSL_GUARDED_BY(mu_);  // beside buffer_
    RecordOrigins origins_;  // of the element last returned (caller's thread)
    bool ended_ ABSL_GUARDED_BY(mu_) = false;
    bool stopping_ ABSL_GUARDED_BY(mu_) = false;
    std::exception_ptr error_ ABSL_GUARDED_BY(mu_);
    CancellationManager cancellation_;
    std::thread producer_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Prefetch");
  }

 private:
  DatasetRef input_;
  int64_t buffer_size_;
};

// ---- TakeDataset / SkipDataset ----

class TakeSkipDataset : public DatasetBase {
 public:
  TakeSkipDataset(DatasetRef input, int64_t count, bool take)
      : input_(std::move(input)), count_(count), take_(take) {}
  std::string DebugString() const override { return take_ ? "TakeDataset" : "SkipDataset"; }
  class Iter : public IteratorBase {
   public:
    Iter(const TakeSkipDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      if (ds_.take_) {
        if (ds_.count_ >= 0 && seen_ >= ds_.count_) return false;
        if (!input_->GetNext(ctx, out)) return false;
        ++seen_;
        return true;
      }
      while (ds_.count_ < 0 || seen_ < ds_.count_) {
        if (!input_->GetNext(ctx, out)) return false;
        ++seen_;
      }
      return input_->GetNext(ctx, out);
    }
    const RecordOrigins& origins() const override { return input_->origins(); }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("seen"), seen_);
      input_->Save(state);
    }
    void Restore(IteratorState& state) override {
      seen_ = state.ReadInt(Key("seen"));
      input_->Restore(state);
    }

   private:
    const TakeSkipDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
    int64_t seen_ = 0;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + (take_ ? "::Take" : "::Skip"));
  }

 private:
  DatasetRef input_;
  int64_t count_;
  bool take_;
};

// ---- Dataset op kernels ----

// Base of the kernels that build a dataset: outputs what MakeDataset returns.
class DatasetOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, DatasetToTensor(MakeDataset(ctx))); }
  KernelCost cost() const override { return KernelCost::kCheap; }

 protected:
  virtual DatasetRef MakeDataset(OpKernelContext* ctx) = 0;
  DatasetRef Input(OpKernelContext* ctx) const { return DatasetFromTensor(ctx->input(0), name()); }
  int64_t ScalarInt(OpKernelContext* ctx, int i) const { return ctx->input(i).scalar<int64_t>(); }
};

struct TensorSliceDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    Element components;
    for (int i = 0; i < ctx->num_inputs(); ++i) components.push_back(ctx->input(i));
    return std::make_shared<TensorSliceDataset>(std::move(components));
  }
};

struct TFRecordDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const Tensor& names = ctx->input(0);
    if (names.dims() > 1) InvalidArgument("TFRecordDataset: filenames must be a scalar or a vector");
    std::vector<std::string> files(names.flat<std::string>().begin(), names.flat<std::string>().end());
    return std::make_shared<TFRecordDataset>(std::move(files), ctx->input(1).scalar<std::string>(),
                                             ScalarInt(ctx, 2));
  }
};

struct MapDatasetOp : DatasetOpKernel {
  explicit MapDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c),
        function_(c.node().GetAttrValue("f").func().name()),
        types_(c.GetAttr<std::vector<DataType>>("output_types")) {
    LookupMapFunction(function_);  // NotFound now rather than at the first element
  }
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    int parallelism = 1;
    if (ctx->num_inputs() > 1) parallelism = std::max(1, ctx->input(1).scalar<int32_t>());
    return std::make_shared<MapDataset>(Input(ctx), function_, types_, parallelism);
  }
  std::string function_;
  std::vector<DataType> types_;
};

struct FilterDatasetOp : DatasetOpKernel {
  explicit FilterDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c), function_(c.node().GetAttrValue("predicate").func().name()) {
    LookupPredicateFunction(function_);
  }
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return std::make_shared<FilterDataset>(Input(ctx), function_);
  }
  std::string function_;
};

struct ShuffleDatasetOp : DatasetOpKernel {
  explicit ShuffleDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c), reshuffle_(c.GetAttr<bool>("reshuffle_each_iteration")) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int64_t buffer_size = ScalarInt(ctx, 1);
    if (buffer_size < 1) InvalidArgument("buffer_size must be greater than zero.");
    return std::make_shared<ShuffleDataset>(Input(ctx), buffer_size, ScalarInt(ctx, 2), ScalarInt(ctx, 3),
                                            reshuffle_);
  }
  bool reshuffle_;
};

struct RepeatDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return std::make_shared<RepeatDataset>(Input(ctx), ScalarInt(ctx, 1));
  }
};

struct BatchDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int64_t batch_size = ScalarInt(ctx, 1);
    if (batch_size < 1) InvalidArgument("Batch size must be greater than zero.");
    return std::make_shared<BatchDataset>(Input(ctx), batch_size, ctx->input(2).scalar<bool>());
  }
};

struct PrefetchDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int64_t buffer_size = ScalarInt(ctx, 1);
    if (buffer_size < -1) {
      InvalidArgument("PrefetchDataset: buffer_size must be >= 0 or set buffer_size to be -1 for auto-tuning, got ",
                      buffer_size);
    }
    return std::make_shared<PrefetchDataset>(Input(ctx), buffer_size);
  }
};

template <bool kTake>
struct TakeSkipDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return std::make_shared<TakeSkipDataset>(Input(ctx), ScalarInt(ctx, 1), kTake);
  }
};

FT_REGISTER_KERNEL("TensorSliceDataset", TensorSliceDatasetOp);
FT_REGISTER_KERNEL("TFRecordDataset", TFRecordDatasetOp);
FT_REGISTER_KERNEL("MapDataset", MapDatasetOp);
FT_REGISTER_KERNEL("ParallelMapDataset", MapDatasetOp);
FT_REGISTER_KERNEL("FilterDataset", FilterDatasetOp);
FT_REGISTER_KERNEL("ShuffleDataset", ShuffleDatasetOp);
FT_REGISTER_KERNEL("RepeatDataset", RepeatDatasetOp);
FT_REGISTER_KERNEL("BatchDatasetV2", BatchDatasetOp);
FT_REGISTER_KERNEL("PrefetchDataset", PrefetchDatasetOp);
FT_REGISTER_KERNEL("TakeDataset", TakeSkipDatasetOp<true>);
FT_REGISTER_KERNEL("SkipDataset", TakeSkipDatasetOp<false>);

// ---- Iterator resource and its ops ----

// The session's iterator: the dataset it was made from and the current position. A position
// restored before the iterator has a dataset waits in `pending_state` for the next
// MakeIterator (a monitored session restores checkpoints before it runs local_init_op).
class IteratorResource : public ResourceBase {
 public:
  std::string DebugString() const override { return "Iterator"; }
  absl::Mutex mu;
  DatasetRef dataset ABSL_GUARDED_BY(mu);
  std::unique_ptr<IteratorBase> iterator ABSL_GUARDED_BY(mu);
  std::optional<IteratorState> pending_state ABSL_GUARDED_BY(mu);
  bool delivered_origins ABSL_GUARDED_BY(mu) = false;  // has an entry in DeliveredOrigins
  ~IteratorResource() override {
    if (delivered_origins) DeliveredOrigins::Forget(this);
  }
};

constexpr char kIteratorPrefix[] = "Iterator";

class IteratorHandleOp : public OpKernel {
 public:
  explicit IteratorHandleOp(OpKernelConstruction& c) : OpKernel(c) {
    const std::string shared_name = c.GetAttr<std::string>("shared_name");
    handle_ = Tensor(DT_RESOURCE, TensorShape());
    handle_.scalar<ResourceHandle>() = {.container = c.GetAttr<std::string>("container"),
                                        .name = shared_name.empty() ? c.name() : shared_name,
                                        .type_name = "Iterator"};
  }
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle& h = handle_.scalar<ResourceHandle>();
    ctx->resource_manager()->LookupOrCreate<IteratorResource>(
        h.container, h.name, [] { return std::make_shared<IteratorResource>(); });
    ctx->set_output(0, handle_);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  Tensor handle_;
};
FT_REGISTER_KERNEL("IteratorV2", IteratorHandleOp);

std::shared_ptr<IteratorResource> LookupIterator(OpKernelContext* ctx, int input) {
  const Tensor& t = ctx->input(input);
  if (t.dtype() != DT_RESOURCE) InvalidArgument(ctx->node().name(), " expects an iterator handle");
  const ResourceHandle& h = t.scalar<ResourceHandle>();
  auto it = ctx->resource_manager()->Lookup<IteratorResource>(h.container, h.name);
  if (it == nullptr) NotFound("Resource ", h.DebugString(), "/Iterator does not exist.");
  return it;
}

[[noreturn]] void NotInitialized() {
  FailedPrecondition(
      "GetNext() failed because the iterator has not been initialized. Ensure that you have run "
      "the initializer operation for this iterator before getting the next element.");
}

struct MakeIteratorOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    DatasetRef dataset = DatasetFromTensor(ctx->input(0), name());
    auto resource = LookupIterator(ctx, 1);
    std::unique_ptr<IteratorBase> fresh = dataset->MakeIterator(kIteratorPrefix);
    std::unique_ptr<IteratorBase> old;
    {
      absl::MutexLock lock(&resource->mu);
      if (resource->pending_state) {
        // Taken first: a state from another pipeline fails this initialization only.
        IteratorState pending = std::move(*resource->pending_state);
        resource->pending_state.reset();
        fresh->Restore(pending);
      }
      old = std::move(resource->iterator);
      resource->iterator = std::move(fresh);
      resource->dataset = std::move(dataset);
    }
    // `old` (and any prefetch thread it runs) ends here, outside the lock.
  }
};
FT_REGISTER_KERNEL("MakeIterator", MakeIteratorOp);

class IteratorGetNextOp : public OpKernel {
 public:
  explicit IteratorGetNextOp(OpKernelConstruction& c)
      : OpKernel(c), shapes_(c.GetAttr<std::vector<PartialTensorShape>>("output_shapes")) {}
  void Compute(OpKernelContext* ctx) override {
    auto resource = LookupIterator(ctx, 0);
    IteratorContext ictx{.cancellation = ctx->cancellation_manager(), .deadline = ctx->deadline()};
    Element element;
    {
      absl::MutexLock lock(&resource->mu);
      if (resource->iterator == nullptr) NotInitialized();
      if (!resource->iterator->GetNext(ictx, &element)) OutOfRange("End of sequence");
      // Kernels that fail on the records later in the step name them (ParseExample).
      const RecordOrigins& origins = resource->iterator->origins();
      if (!origins.empty() || resource->delivered_origins) {
        DeliveredOrigins::Record(resource.get(), element, origins);
        resource->delivered_origins = !origins.empty();
      }
    }
    if (static_cast<int>(element.size()) != ctx->num_outputs()) {
      InvalidArgument(name(), ": the iterator produced ", element.size(), " components, expected ",
                      ctx->num_outputs());
    }
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      if (element[i].dtype() != ctx->output_type(i)) {
        InvalidArgument(name(), ": component ", i, " is ", DataTypeString(element[i].dtype()), ", expected ",
                        DataTypeString(ctx->output_type(i)));
      }
      if (i < static_cast<int>(shapes_.size()) && !shapes_[i].IsCompatibleWith(element[i].shape())) {
        InvalidArgument(name(), ": component ", i, " has shape ", element[i].shape().DebugString(),
                        ", expected ", shapes_[i].DebugString());
      }
      ctx->set_output(i, std::move(element[i]));
    }
  }

 private:
  std::vector<PartialTensorShape> shapes_;
};
FT_REGISTER_KERNEL("IteratorGetNext", IteratorGetNextOp);

struct SerializeIteratorOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto resource = LookupIterator(ctx, 0);
    IteratorState state;
    {
      absl::MutexLock lock(&resource->mu);
      if (resource->iterator == nullptr) NotInitialized();
      resource->iterator->Save(state);
    }
    ctx->set_output(0, Tensor::Scalar<std::string>(state.Serialize()));
  }
};
FT_REGISTER_KERNEL("SerializeIterator", SerializeIteratorOp);

struct DeserializeIteratorOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto resource = LookupIterator(ctx, 0);
    IteratorState state = IteratorState::Parse(ctx->input(1).scalar<std::string>());
    std::unique_ptr<IteratorBase> old;
    absl::MutexLock lock(&resource->mu);
    if (resource->dataset == nullptr) {
      resource->pending_state = std::move(state);
      return;
    }
    std::unique_ptr<IteratorBase> restored = resource->dataset->MakeIterator(kIteratorPrefix);
    restored->Restore(state);
    old = std::move(resource->iterator);
    resource->iterator = std::move(restored);
  }
};
FT_REGISTER_KERNEL("DeserializeIterator", DeserializeIteratorOp);

}  // namespace
}  // namespace flowtrain::data
