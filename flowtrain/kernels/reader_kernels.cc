// Kernels of TFRecordReaderV2 / ReaderReadV2 (records from files named by a queue).
#include <algorithm>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/record_reader.h"
#include "flowtrain/framework/dataset.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/queue.h"

namespace flowtrain {
namespace {

// The reader's position: the file it is in and the index of the next record.
class TFRecordReaderState : public ResourceBase {
 public:
  explicit TFRecordReaderState(std::string compression) : compression_(std::move(compression)) {}
  std::string DebugString() const override { return "TFRecordReader"; }

  struct Record {
    std::string key;    // "<file>:<index>", as TF's readers name records
    std::string value;  // the record's bytes
    data::RecordOrigin origin;
  };

  // The next record, taking a new file from `queue` when the current one ends.
  Record Read(Queue& queue, const Queue::Wait& wait) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::string record;
    for (;;) {
      if (reader_ == nullptr) {
        Queue::Tuple name = queue.Dequeue(wait);
        if (name.size() != 1 || name[0].dtype() != DT_STRING || name[0].NumElements() != 1) {
          InvalidArgument("ReaderReadV2 expects a queue of scalar strings (file names)");
        }
        file_ = std::make_shared<const std::string>(name[0].scalar<std::string>());
        reader_ = std::make_unique<io::RecordReader>(
            *file_, io::RecordReaderOptions{.compression_type = compression_});
        index_ = 0;
      }
      bool got;
      try {
        got = reader_->ReadRecord(&record);
      } catch (const DataLossError& e) {
        reader_.reset();  // skip the rest of a corrupt file on the next read
        DataLoss("Record ", index_, " of ", *file_, " is corrupt: ", e.what());
      }
      if (got) {
        const int64_t index = index_++;
        return {StrCat(*file_, ":", index), std::move(record), {file_, index}};
      }
      reader_.reset();
    }
  }

 private:
  const std::string compression_;
  absl::Mutex mu_;
  std::shared_ptr<const std::string> file_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<io::RecordReader> reader_ ABSL_GUARDED_BY(mu_);
  int64_t index_ ABSL_GUARDED_BY(mu_) = 0;
};

class TFRecordReaderOp : public OpKernel {
 public:
  explicit TFRecordReaderOp(OpKernelConstruction& c)
      : OpKernel(c), compression_(c.GetAttr<std::string>("compression_type")) {
    const std::string shared_name = c.GetAttr<std::string>("shared_name");
    handle_ = Tensor(DT_RESOURCE, TensorShape());
    handle_.scalar<ResourceHandle>() = {.container = c.GetAttr<std::string>("container"),
                                        .name = shared_name.empty() ? c.name() : shared_name,
                                        .type_name = "TFRecordReader"};
  }
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle& h = handle_.scalar<ResourceHandle>();
    ctx->resource_manager()->LookupOrCreate<TFRecordReaderState>(
        h.container, h.name, [&] { return std::make_shared<TFRecordReaderState>(compression_); });
    ctx->set_output(0, handle_);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  std::string compression_;
  Tensor handle_;
};
FT_REGISTER_KERNEL("TFRecordReaderV2", TFRecordReaderOp);

template <typename T>
std::shared_ptr<T> LookupHandle(OpKernelContext* ctx, int input, std::string_view what) {
  const ResourceHandle& h = ctx->input(input).scalar<ResourceHandle>();
  auto resource = ctx->resource_manager()->Lookup<T>(h.container, h.name);
  if (resource == nullptr) NotFound("Resource ", h.DebugString(), "/", what, " does not exist.");
  return resource;
}

// Remembers where the value it outputs came from (data::DeliveredOrigins), so that a
// ParseSingleExample of it in the same step names the file and record of a bad Example. One
// entry per kernel: QueueRunner threads usually run enqueue ops (and kernels) of their own;
// when two runs of one kernel overlap, the earlier value's record may go unnamed.
class ReaderReadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  ~ReaderReadOp() override { data::DeliveredOrigins::Forget(this); }
  void Compute(OpKernelContext* ctx) override {
    auto reader = LookupHandle<TFRecordReaderState>(ctx, 0, "TFRecordReader");
    auto queue = LookupHandle<Queue>(ctx, 1, "Queue");
    TFRecordReaderState::Record record =
        reader->Read(*queue, {.cancellation = ctx->cancellation_manager(), .deadline = ctx->deadline()});
    Tensor value = Tensor::Scalar<std::string>(std::move(record.value));
    data::DeliveredOrigins::Record(this, {value}, {std::move(record.origin)});
    ctx->set_output(0, Tensor::Scalar<std::string>(std::move(record.key)));
    ctx->set_output(1, std::move(value));
  }
};
FT_REGISTER_KERNEL("ReaderReadV2", ReaderReadOp);

}  // namespace
}  // namespace flowtrain
