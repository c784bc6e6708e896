// The kernel of TextLineDataset: the lines of text files (optionally ZLIB- or GZIP-compressed),
// one file after the other, each without its '\n' (and, as TF, without any '\r').
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/io/input_stream.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class TextLineDataset : public DatasetBase {
 public:
  TextLineDataset(std::vector<std::string> files, io::CompressionType compression, int64_t buffer_size)
      : files_(std::move(files)), compression_(compression), buffer_size_(buffer_size) {}
  std::string DebugString() const override { return "TextLineDataset"; }

  class Iter : public IteratorBase {
   public:
    Iter(const TextLineDataset& ds, std::string prefix) : IteratorBase(std::move(prefix)), ds_(ds) {}
    bool GetNext(IteratorContext&, Element* out) override {
      std::string line;
      for (;;) {
        if (in_ == nullptr) {
          if (file_index_ >= static_cast<int64_t>(ds_.files_.size())) return false;
          Open();
        }
        if (in_->ReadLine(&line)) {
          out->assign(1, Tensor::Scalar<std::string>(std::move(line)));
          return true;
        }
        in_.reset();
        ++file_index_;
      }
    }
    // The position is the file and the (decompressed) bytes read from it.
    void Save(IteratorState& state) override {
      state.WriteInt(Key("file_index"), file_index_);
      state.WriteInt(Key("offset"), in_ == nullptr ? 0 : static_cast<int64_t>(in_->position()));
    }
    void Restore(IteratorState& state) override {
      file_index_ = state.ReadInt(Key("file_index"));
      const int64_t offset = state.ReadInt(Key("offset"));
      in_.reset();
      if (file_index_ >= static_cast<int64_t>(ds_.files_.size()) || offset == 0) return;
      Open();
      std::string skipped;
      while (static_cast<int64_t>(in_->position()) < offset) {
        skipped.clear();
        const size_t want = static_cast<size_t>(std::min<int64_t>(offset - in_->position(), 1 << 20));
        if (in_->Read(want, &skipped) < want) {
          DataLoss("Cannot restore the position of TextLineDataset: ", ds_.files_[file_index_], " has only ",
                   in_->position(), " bytes, the saved position is byte ", offset);
        }
      }
    }

   private:
    void Open() {
      in_ = std::make_unique<io::InputStream>(ds_.files_[file_index_], ds_.compression_,
                                              static_cast<size_t>(ds_.buffer_size_));
    }

    const TextLineDataset& ds_;
    int64_t file_index_ = 0;
    std::unique_ptr<io::InputStream> in_;  // of files_[file_index_], null between files
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::TextLine");
  }

 private:
  std::vector<std::string> files_;
  io::CompressionType compression_;
  int64_t buffer_size_;
};

struct TextLineDatasetOp : DatasetOpKernel {
  using DatasetOpKernel::DatasetOpKernel;
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const Tensor& names = ctx->input(0);
    if (names.dims() > 1) InvalidArgument("`filenames` must be a scalar or a vector.");
    std::vector<std::string> files(names.flat<std::string>().begin(), names.flat<std::string>().end());
    const io::CompressionType compression = io::ParseCompressionType(ctx->input(1).scalar<std::string>());
    int64_t buffer_size = ScalarInt(ctx, 2);
    if (buffer_size < 0) InvalidArgument("`buffer_size` must be >= 0 (0 == default)");
    if (buffer_size == 0) buffer_size = 256 * 1024;
    return std::make_shared<TextLineDataset>(std::move(files), compression, buffer_size);
  }
};
FT_REGISTER_KERNEL("TextLineDataset", TextLineDatasetOp);

}  // namespace
}  // namespace flowtrain::data
