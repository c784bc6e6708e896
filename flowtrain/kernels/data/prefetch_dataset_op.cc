// The kernel of PrefetchDataset: a background thread keeping buffer_size elements ready (AUTOTUNE:
// a bounded buffer).
#include <algorithm>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

// Up to how many elements an autotuned prefetch buffers, and how many bytes of them at most.
constexpr int64_t kAutotuneMaxElements = 16;
constexpr int64_t kAutotuneMaxBytes = 64 << 20;

class PrefetchDataset : public DatasetBase {
 public:
  // `buffer_size` 0 or -1 (tf.data.experimental.AUTOTUNE) autotunes the buffer.
  PrefetchDataset(DatasetRef input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(buffer_size) {}
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
      capacity_ =
          std::clamp<int64_t>(kAutotuneMaxBytes / static_cast<int64_t>(bytes), 1, kAutotuneMaxElements);
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

struct PrefetchDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int64_t buffer_size = ScalarInt(ctx, 1);
    if (buffer_size < -1) {
      InvalidArgument(
          "PrefetchDataset: buffer_size must be >= 0 or set buffer_size to be -1 for auto-tuning, got ",
          buffer_size);
    }
    return std::make_shared<PrefetchDataset>(Input(ctx), buffer_size);
  }
};
FT_REGISTER_KERNEL("PrefetchDataset", PrefetchDatasetOp);

}  // namespace
}  // namespace flowtrain::data
