// The kernel of TFRecordDataset: the records of TFRecord files, one file after the other.
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/io/record_reader.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

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
FT_REGISTER_KERNEL("TFRecordDataset", TFRecordDatasetOp);

}  // namespace
}  // namespace flowtrain::data
