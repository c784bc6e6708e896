// The kernels of CacheDataset and of TF 2.x's CacheDatasetV2 (whose memory cache arrives as a
// DummyMemoryCache resource): the input's elements, kept on the first pass that reaches the end
// and replayed on every later one, in memory (filename "") or in a tensor bundle at `filename`.
//
// The file layout is TF's, so that either system reads the other's cache: component j of
// element i under the key "%7d_%*d" (i padded to 7, j to the digits of the last component's
// index), written to a bundle at `filename` that only appears, renamed into place, when the
// pass is complete; "<filename>_0.lockfile" marks a pass that is writing, so a second writer
// fails with AlreadyExists instead of racing it.
//
// Iterator positions: a reading iterator saves its index (and, in memory, the cached elements
// themselves, as a restarted process has no cache); a memory writer saves what it has cached
// so far and goes on filling after a restore. A file writer cannot keep its half-written
// bundle across processes, so after a restore it passes elements through without writing and
// leaves the cache to the next complete pass.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

// The elements of one complete pass, shared by every iterator of one memory-cached dataset.
struct MemoryCache {
  absl::Mutex mu;
  bool complete ABSL_GUARDED_BY(mu) = false;
  std::vector<Element> elements ABSL_GUARDED_BY(mu);
};

// TF's cache key of component `component` of element `index` in an element of `num_components`.
std::string CacheKey(int64_t index, size_t component, size_t num_components) {
  const int width = static_cast<int>(std::to_string(num_components > 1 ? num_components - 1 : 0).size());
  char key[64];
  std::snprintf(key, sizeof key, "%7lld_%*zu", static_cast<long long>(index), width, component);
  return key;
}

enum class Mode : int64_t { kWrite = 0, kRead = 1, kPassThrough = 2 };

class CacheDataset : public DatasetBase {
 public:
  CacheDataset(DatasetRef input, std::string filename, std::vector<DataType> types)
      : input_(std::move(input)), filename_(std::move(filename)), types_(std::move(types)) {}
  std::string DebugString() const override { return "CacheDataset"; }

  class MemoryIter : public IteratorBase {
   public:
    MemoryIter(const CacheDataset& ds, std::string prefix) : IteratorBase(std::move(prefix)), ds_(ds) {
      absl::MutexLock lock(&ds_.memory_->mu);
      mode_ = ds_.memory_->complete ? Mode::kRead : Mode::kWrite;
    }
    bool GetNext(IteratorContext& ctx, Element* out) override {
      if (mode_ == Mode::kRead) {
        absl::MutexLock lock(&ds_.memory_->mu);
        if (index_ >= static_cast<int64_t>(ds_.memory_->elements.size())) return false;
        *out = ds_.memory_->elements[index_++];
        return true;
      }
      if (input_ == nullptr) input_ = ds_.input_->MakeIterator(prefix());
      if (input_->GetNext(ctx, out)) {
        written_.push_back(*out);  // tensors share their buffers: no copy of the data
        return true;
      }
      absl::MutexLock lock(&ds_.memory_->mu);
      if (!ds_.memory_->complete) {  // a concurrent pass may have finished first
        ds_.memory_->elements = std::move(written_);
        ds_.memory_->complete = true;
      }
      written_.clear();
      return false;
    }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("mode"), static_cast<int64_t>(mode_));
      if (mode_ == Mode::kRead) {
        state.WriteInt(Key("index"), index_);
        absl::MutexLock lock(&ds_.memory_->mu);
        SaveElements(state, ds_.memory_->elements);
        return;
      }
      SaveElements(state, written_);
      state.WriteInt(Key("has_input"), input_ != nullptr);
      if (input_ != nullptr) input_->Save(state);
    }
    void Restore(IteratorState& state) override {
      mode_ = static_cast<Mode>(state.ReadInt(Key("mode")));
      std::vector<Element> elements = RestoreElements(state);
      if (mode_ == Mode::kRead) {
        index_ = state.ReadInt(Key("index"));
        absl::MutexLock lock(&ds_.memory_->mu);
        if (!ds_.memory_->complete) {
          ds_.memory_->elements = std::move(elements);
          ds_.memory_->complete = true;
        }
        return;
      }
      if (mode_ != Mode::kWrite) DataLoss("Iterator state of CacheDataset has an unknown mode");
      written_ = std::move(elements);
      input_.reset();
      if (state.ReadInt(Key("has_input")) != 0) {
        input_ = ds_.input_->MakeIterator(prefix());
        input_->Restore(state);
      }
    }

   private:
    void SaveElements(IteratorState& state, const std::vector<Element>& elements) {
      state.WriteInt(Key("cached"), static_cast<int64_t>(elements.size()));
      for (size_t i = 0; i < elements.size(); ++i) SaveElement(state, Key(StrCat("cached.", i)), elements[i]);
    }
    std::vector<Element> RestoreElements(const IteratorState& state) {
      std::vector<Element> elements(state.ReadInt(Key("cached")));
      for (size_t i = 0; i < elements.size(); ++i)
        elements[i] = RestoreElement(state, Key(StrCat("cached.", i)));
      return elements;
    }

    const CacheDataset& ds_;
    Mode mode_;
    int64_t index_ = 0;                    // kRead: the next element
    std::unique_ptr<IteratorBase> input_;  // kWrite
    std::vector<Element> written_;         // kWrite: this pass's elements so far
  };

  class FileIter : public IteratorBase {
   public:
    FileIter(const CacheDataset& ds, std::string prefix)
        : IteratorBase(std::move(prefix)),
          ds_(ds),
          lockfile_(ds.filename_ + "_0.lockfile"),
          mode_(FileExists(ds.filename_ + ".index") ? Mode::kRead : Mode::kWrite) {}
    ~FileIter() override { AbandonWrite(); }

    bool GetNext(IteratorContext& ctx, Element* out) override {
      if (mode_ == Mode::kRead) return Read(out);
      if (input_ == nullptr) {
        input_ = ds_.input_->MakeIterator(prefix());
        if (mode_ == Mode::kWrite) StartWrite();
      }
      if (!input_->GetNext(ctx, out)) {
        if (writer_ != nullptr) FinishWrite();
        return false;
      }
      if (writer_ != nullptr) {
        for (size_t j = 0; j < out->size(); ++j) writer_->Add(CacheKey(index_, j, out->size()), (*out)[j]);
      }
      ++index_;
      return true;
    }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("mode"), static_cast<int64_t>(mode_));
      state.WriteInt(Key("index"), index_);
      if (mode_ == Mode::kRead) return;
      state.WriteInt(Key("has_input"), input_ != nullptr);
      if (input_ != nullptr) input_->Save(state);
    }
    void Restore(IteratorState& state) override {
      AbandonWrite();
      const auto mode = static_cast<Mode>(state.ReadInt(Key("mode")));
      index_ = state.ReadInt(Key("index"));
      if (mode == Mode::kRead) {
        if (!FileExists(ds_.filename_ + ".index")) {
          NotFound("CacheDataset: the iterator was saved reading the cache '", ds_.filename_,
                   "', which no longer exists");
        }
        mode_ = Mode::kRead;
        return;
      }
      if (mode != Mode::kWrite && mode != Mode::kPassThrough) {
        DataLoss("Iterator state of CacheDataset has an unknown mode");
      }
      input_.reset();
      if (state.ReadInt(Key("has_input")) == 0) {  // saved before its first element: start afresh
        mode_ = Mode::kWrite;
        return;
      }
      mode_ = Mode::kPassThrough;
      input_ = ds_.input_->MakeIterator(prefix());
      input_->Restore(state);
    }

   private:
    bool Read(Element* out) {
      if (reader_ == nullptr) reader_ = std::make_unique<io::BundleReader>(ds_.filename_);
      const size_t n = ds_.types_.size();
      if (!reader_->Contains(CacheKey(index_, 0, n))) return false;
      out->resize(n);
      for (size_t j = 0; j < n; ++j) {
        const std::string key = CacheKey(index_, j, n);
        if (!reader_->Contains(key)) {
          DataLoss("The cache '", ds_.filename_, "' has no component ", j, " of element ", index_, " (key '",
                   key, "'): it was written by a dataset of another structure");
        }
        const DataType stored = reader_->LookupDtypeAndShape(key).dtype;
        if (stored != ds_.types_[j]) {
          InvalidArgument("The cache '", ds_.filename_, "' holds ", DataTypeString(stored), " for component ",
                          j, " of element ", index_, ", but the dataset's component is ",
                          DataTypeString(ds_.types_[j]));
        }
        (*out)[j] = reader_->Lookup(key);
      }
      ++index_;
      return true;
    }
    void StartWrite() {
      CreateDirectories(Dirname(ds_.filename_));
      const int fd = ::open(lockfile_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) {
        if (errno != EEXIST) {
          ThrowError(Code::kUnknown, StrCat("CacheDataset: cannot create the lockfile '", lockfile_,
                                            "': ", std::strerror(errno)));
        }
        std::string contents;
        try {
          contents = ReadFileToString(lockfile_);
        } catch (const Error&) {
        }
        AlreadyExists(
            "There appears to be a concurrent caching iterator running - cache lockfile already "
            "exists ('",
            lockfile_,
            "'). If you are sure no other running computation is using this cache prefix, delete "
            "the lockfile and re-initialize the iterator. Lockfile contents: ",
            contents);
      }
      const std::string contents = StrCat("Created at: ", std::time(nullptr));
      const ssize_t written = ::write(fd, contents.data(), contents.size());
      ::close(fd);
      locked_ = true;
      if (written != static_cast<ssize_t>(contents.size())) {
        AbandonWrite();
        ThrowError(Code::kUnknown, StrCat("CacheDataset: cannot write the lockfile '", lockfile_, "'"));
      }
      writer_ = std::make_unique<io::BundleWriter>(ds_.filename_);
    }
    void FinishWrite() {
      writer_->Finish();
      writer_.reset();
      DeleteFileIfExists(lockfile_);
      locked_ = false;
    }
    // Drops a pass that did not reach the end: the bundle's temporary files and the lockfile.
    void AbandonWrite() {
      writer_.reset();
      if (locked_) {
        try {
          DeleteFileIfExists(lockfile_);
        } catch (const Error&) {
        }
        locked_ = false;
      }
    }

    const CacheDataset& ds_;
    const std::string lockfile_;
    Mode mode_;
    int64_t index_ = 0;  // elements read or passed so far
    std::unique_ptr<IteratorBase> input_;
    std::unique_ptr<io::BundleWriter> writer_;  // kWrite, once started
    std::unique_ptr<io::BundleReader> reader_;  // kRead, once started
    bool locked_ = false;                       // this iterator created the lockfile
  };

  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    if (filename_.empty()) return std::make_unique<MemoryIter>(*this, prefix + "::MemoryCache");
    return std::make_unique<FileIter>(*this, prefix + "::FileCache");
  }

 private:
  DatasetRef input_;
  std::string filename_;
  std::vector<DataType> types_;
  std::shared_ptr<MemoryCache> memory_ = std::make_shared<MemoryCache>();
};

// CacheDataset and CacheDatasetV2 alike: the V2 op's cache resource (input 2) only stands for
// the memory cache, which each dataset keeps itself.
struct CacheDatasetOp : DatasetOpKernel {
  explicit CacheDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c), types_(c.GetAttr<std::vector<DataType>>("output_types")) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    return std::make_shared<CacheDataset>(Input(ctx), ctx->input(1).scalar<std::string>(), types_);
  }
  std::vector<DataType> types_;
};
FT_REGISTER_KERNEL("CacheDataset", CacheDatasetOp);
FT_REGISTER_KERNEL("CacheDatasetV2", CacheDatasetOp);

// TF 2.x's placeholder for the memory cache resource CacheDatasetV2 takes.
struct DummyMemoryCacheOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor handle(DT_RESOURCE, TensorShape());
    handle.scalar<ResourceHandle>() = {.container = "", .name = name(), .type_name = "MemoryCache"};
    ctx->set_output(0, handle);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("DummyMemoryCache", DummyMemoryCacheOp);

}  // namespace
}  // namespace flowtrain::data
