// The kernels of MapDataset, ParallelMapDataset, ParallelMapDatasetV2 and MapAndBatchDataset: a
// function applied to each element, on up to num_parallel_calls threads, in order (and, for
// MapAndBatch, the results batched). The function is a C++ function
// registered in this process or, failing that, a function of the graph's library given the
// element and the op's captured inputs (kernels/internal/dataset_function.h).
#include <algorithm>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/dataset_function.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class MapDataset : public DatasetBase {
 public:
  // Exactly one of `cpp` and `graph_fn` is set.
  MapDataset(DatasetRef input, std::string function_name, const RegisteredMapFunction* cpp,
             std::shared_ptr<const GraphDatasetFunction> graph_fn, std::vector<DataType> types,
             int parallelism)
      : input_(std::move(input)),
        function_name_(std::move(function_name)),
        cpp_(cpp),
        graph_fn_(std::move(graph_fn)),
        types_(std::move(types)),
        parallelism_(parallelism) {}
  std::string DebugString() const override { return "MapDataset(" + function_name_ + ")"; }

  // Calls the function and checks that it returned what the op promised. Errors name the
  // records the element came from, unless the function names them itself.
  Element Apply(const IteratorContext& ctx, const Element& in, const RecordOrigins& origins) const {
    Element out;
    try {
      out = cpp_ != nullptr ? cpp_->fn(in, origins) : graph_fn_->Call(ctx, in);
    } catch (...) {
      if (origins.empty() || (cpp_ != nullptr && cpp_->names_records)) throw;
      RethrowWithContext(ErrorFromException(std::current_exception()),
                         StrCat("In ", DescribeOrigins(origins), ": "));
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
  static const RecordOrigins& KeptOrigins(const RecordOrigins& in) {
    return in.size() == 1 ? in : NoOrigins();
  }

  class SequentialIter : public IteratorBase {
   public:
    SequentialIter(const MapDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      Element in;
      if (!input_->GetNext(ctx, &in)) return false;
      *out = ds_.Apply(ctx, in, input_->origins());
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
          // Calls run past the GetNext that queued them, so they cannot wait on its run's
          // cancellation; the caller does (WaitOnce).
          result = ds_.Apply(IteratorContext{}, call.input, call.slot->origins);
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
    absl::CondVar cv_;                             // a call finished
    absl::CondVar work_cv_;                        // a call was queued, or stopping_
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
  const RegisteredMapFunction* cpp_;                      // never removed from the registry
  std::shared_ptr<const GraphDatasetFunction> graph_fn_;  // when cpp_ is null
  std::vector<DataType> types_;
  int parallelism_;
};

// The threads a num_parallel_calls input asks for: AUTOTUNE (-1) and 0 ask the runtime to
// choose, which gives the cores it may use.
int Parallelism(int64_t calls) {
  return calls > 0 ? static_cast<int>(std::min<int64_t>(calls, 256))
                   : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

class MapDatasetOp : public DatasetOpKernel {
 public:
  explicit MapDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c),
        func_(c.node().GetAttrValue("f").func()),
        cpp_(FindMapFunction(func_.name())),
        types_(c.GetAttr<std::vector<DataType>>("output_types")),
        num_captured_(NumCapturedInputs(c.node())) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int parallel_input = FirstInputAfterCaptures();
    if (ctx->num_inputs() <= parallel_input) return MakeMap(ctx, 1);
    const Tensor& n = ctx->input(parallel_input);
    return MakeMap(ctx, Parallelism(n.dtype() == DT_INT64 ? n.scalar<int64_t>() : n.scalar<int32_t>()));
  }

 protected:
  int FirstInputAfterCaptures() const { return 1 + num_captured_; }
  std::shared_ptr<MapDataset> MakeMap(OpKernelContext* ctx, int parallelism) const {
    std::shared_ptr<const GraphDatasetFunction> graph_fn;
    if (cpp_ == nullptr) graph_fn = GraphDatasetFunction::Instantiate(ctx, func_, CapturedInputs(ctx, 1));
    return std::make_shared<MapDataset>(Input(ctx), func_.name(), cpp_, std::move(graph_fn), types_,
                                        parallelism);
  }

 private:
  tensorflow::NameAttrList func_;
  const RegisteredMapFunction* cpp_;  // null: a function of the graph's library
  std::vector<DataType> types_;
  int num_captured_;
};

// MapAndBatchDataset: the map's dataset batched, its inputs (after the captured tensors)
// batch_size, num_parallel_calls and drop_remainder.
struct MapAndBatchDatasetOp : MapDatasetOp {
  using MapDatasetOp::MapDatasetOp;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int first = FirstInputAfterCaptures();
    const int64_t batch_size = ScalarInt(ctx, first);
    if (batch_size < 1) InvalidArgument("batch_size must be greater than zero.");
    return MakeBatchDataset(MakeMap(ctx, Parallelism(ScalarInt(ctx, first + 1))), batch_size,
                            ctx->input(first + 2).scalar<bool>());
  }
};
FT_REGISTER_KERNEL("MapAndBatchDataset", MapAndBatchDatasetOp);

FT_REGISTER_KERNEL("MapDataset", MapDatasetOp);
FT_REGISTER_KERNEL("ParallelMapDataset", MapDatasetOp);
FT_REGISTER_KERNEL("ParallelMapDatasetV2", MapDatasetOp);

}  // namespace
}  // namespace flowtrain::data
