// The kernel of FixedLengthRecordDatasetV2: the records of `record_bytes` bytes each between a
// header and a footer of fixed sizes, in files optionally ZLIB- or GZIP-compressed, one file
// after the other.
#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/input_stream.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

struct RecordLayout {
  uint64_t header = 0, record = 0, footer = 0;
};

// TF's error for a body that is not whole records. Sizes are unsigned as TF's: a file shorter
// than its header and footer has a body length just below 2^64.
[[noreturn]] void NotWholeRecords(bool compressed, const std::string& file, const RecordLayout& layout,
                                  uint64_t body) {
  const std::string message =
      StrCat("Excluding the header (", layout.header, " bytes) and footer (", layout.footer,
             " bytes), input file \"", file, "\" has body length ", body,
             " bytes, which is not an exact multiple of the record length (", layout.record, " bytes).");
  // A compressed file's size is only known at its end, where TF reports data loss.
  if (compressed) DataLoss(message);
  InvalidArgument(message);
}

class FixedLengthRecordDataset : public DatasetBase {
 public:
  FixedLengthRecordDataset(std::vector<std::string> files, RecordLayout layout, int64_t buffer_size,
                           io::CompressionType compression)
      : files_(std::move(files)), layout_(layout), buffer_size_(buffer_size), compression_(compression) {}
  std::string DebugString() const override { return "FixedLengthRecordDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const FixedLengthRecordDataset& ds, std::string prefix) : IteratorBase(std::move(prefix)), ds_(ds) {}
    bool GetNext(IteratorContext&, Element* out) override {
      std::string record;
      for (;;) {
        if (in_ == nullptr) {
          if (file_index_ >= static_cast<int64_t>(ds_.files_.size())) return false;
          Open();
        }
        if (ReadRecord(&record)) {
          out->assign(1, Tensor::Scalar<std::string>(std::move(record)));
          return true;
        }
        in_.reset();
        ++file_index_;
        record_index_ = 0;
      }
    }
    void Save(IteratorState& state) override {
      state.WriteInt(Key("file_index"), file_index_);
      state.WriteInt(Key("record_index"), record_index_);
    }
    void Restore(IteratorState& state) override {
      file_index_ = state.ReadInt(Key("file_index"));
      const int64_t skip = state.ReadInt(Key("record_index"));
      in_.reset();
      record_index_ = 0;
      if (file_index_ >= static_cast<int64_t>(ds_.files_.size()) || skip == 0) return;
      Open();
      std::string record;
      while (record_index_ < skip) {
        if (!ReadRecord(&record)) {
          DataLoss("Cannot restore the position of FixedLengthRecordDataset: ", ds_.files_[file_index_],
                   " has only ", record_index_, " records, the saved position is record ", skip);
        }
      }
    }

   private:
    // Opens the current file and reads past its header. An uncompressed file's size is
    // checked here, as TF does, before any of its records.
    void Open() {
      const std::string& file = ds_.files_[file_index_];
      const RecordLayout& layout = ds_.layout_;
      in_ = std::make_unique<io::InputStream>(file, ds_.compression_, static_cast<size_t>(ds_.buffer_size_));
      pending_.clear();
      if (ds_.compression_ == io::CompressionType::kNone) {
        struct stat st;
        if (::stat(file.c_str(), &st) != 0) ThrowIOError("getting the size of", file, errno);
        const uint64_t body = static_cast<uint64_t>(st.st_size) - layout.header - layout.footer;
        if (body % layout.record != 0) NotWholeRecords(false, file, layout, body);
        records_in_file_ = static_cast<int64_t>(body / layout.record);
      }
      std::string header;
      in_->Read(layout.header, &header);
    }

    // The next record of the current file; false after its last one.
    bool ReadRecord(std::string* record) {
      const RecordLayout& layout = ds_.layout_;
      record->clear();
      if (ds_.compression_ == io::CompressionType::kNone) {
        if (record_index_ >= records_in_file_) return false;
        if (in_->Read(layout.record, record) < layout.record) {
          DataLoss(ds_.files_[file_index_], " ended inside record ", record_index_, " (was it truncated?)");
        }
        ++record_index_;
        return true;
      }
      // Compressed: a record is one only when the footer still follows it.
      const uint64_t needed = layout.record + layout.footer;
      if (pending_.size() < needed) in_->Read(needed - pending_.size(), &pending_);
      if (pending_.size() < needed) {
        const uint64_t body = record_index_ * layout.record + pending_.size() - layout.footer;
        if (pending_.size() != layout.footer) NotWholeRecords(true, ds_.files_[file_index_], layout, body);
        return false;
      }
      record->assign(pending_, 0, layout.record);
      pending_.erase(0, layout.record);
      ++record_index_;
      return true;
    }

    const FixedLengthRecordDataset& ds_;
    int64_t file_index_ = 0;
    int64_t record_index_ = 0;     // records of the current file returned
    int64_t records_in_file_ = 0;  // uncompressed files only
    std::string pending_;          // compressed files: bytes read past the last record
    std::unique_ptr<io::InputStream> in_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::FixedLengthRecord");
  }

 private:
  std::vector<std::string> files_;
  RecordLayout layout_;
  int64_t buffer_size_;
  io::CompressionType compression_;
};

struct FixedLengthRecordDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const Tensor& names = ctx->input(0);
    if (names.dims() > 1) InvalidArgument("`filenames` must be a scalar or a vector.");
    std::vector<std::string> files(names.flat<std::string>().begin(), names.flat<std::string>().end());
    const int64_t header = ScalarInt(ctx, 1), record = ScalarInt(ctx, 2), footer = ScalarInt(ctx, 3);
    int64_t buffer_size = ScalarInt(ctx, 4);
    if (header < 0) InvalidArgument("`header_bytes` must be >= 0 but got ", header);
    if (record <= 0) InvalidArgument("`record_bytes` must be > 0 but got ", record);
    if (footer < 0) InvalidArgument("`footer_bytes` must be >= 0 but got ", footer);
    if (buffer_size < 0) InvalidArgument("`buffer_size` must be >= 0 but got ", buffer_size);
    if (buffer_size == 0) buffer_size = 256 * 1024;
    const io::CompressionType compression = io::ParseCompressionType(ctx->input(5).scalar<std::string>());
    const RecordLayout layout{static_cast<uint64_t>(header), static_cast<uint64_t>(record),
                              static_cast<uint64_t>(footer)};
    return std::make_shared<FixedLengthRecordDataset>(std::move(files), layout, buffer_size, compression);
  }
};
FT_REGISTER_KERNEL("FixedLengthRecordDatasetV2", FixedLengthRecordDatasetOp);

}  // namespace
}  // namespace flowtrain::data
