#include "flowtrain/io/record_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/io/internal/record_format.h"

namespace flowtrain::io {

RecordWriter::RecordWriter(std::string path, RecordWriterOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  const CompressionType type = ParseCompressionType(options_.compression_type);
  if (type != CompressionType::kNone) {
    compressor_ = std::make_unique<StreamCompressor>(type, options_.compression_level);
  }
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (options_.fail_if_exists ? O_EXCL : O_TRUNC);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) ThrowIOError("creating", path_, errno);
  pending_.reserve(options_.buffer_bytes + 1024);
}

RecordWriter::~RecordWriter() {
  try {
    Close();
  } catch (const std::exception& e) {
    FT_LOG(ERROR) << "Closing record file " << path_ << " failed: " << e.what();
  }
}

void RecordWriter::CheckOpen(std::string_view action) const {
  if (fd_ < 0) FailedPrecondition("Cannot ", action, " record file '", path_, "': it is closed");
}

void RecordWriter::WriteRecord(std::string_view payload) {
  CheckOpen("write to");
  char header[kRecordHeaderSize];
  EncodeRecordHeader(payload.size(), header);
  char footer[kRecordFooterSize];
  EncodeFixed32(RecordChecksum(payload), footer);
  // Uncompressed records are framed straight into the output buffer; compressed ones are
  // framed into scratch space and deflated from there.
  std::string* framed = compressor_ ? &framed_ : &pending_;
  if (compressor_) framed_.clear();
  framed->append(header, sizeof(header));
  framed->append(payload);
  framed->append(footer, sizeof(footer));
  if (compressor_) compressor_->Compress(framed_, &pending_);
  uncompressed_bytes_ += kRecordHeaderSize + payload.size() + kRecordFooterSize;
  if (pending_.size() >= options_.buffer_bytes) WritePending();
}

void RecordWriter::WritePending() {
  const char* data = pending_.data();
  size_t left = pending_.size();
  while (left > 0) {
    const ssize_t written = ::write(fd_, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      // The unwritten bytes are dropped: keeping them would write them twice after a
      // partial success, corrupting the framing worse than losing them.
      pending_.clear();
      ThrowIOError("writing", path_, error);
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
  pending_.clear();
}

void RecordWriter::Flush() {
  CheckOpen("flush");
  if (compressor_) compressor_->Flush(&pending_);
  WritePending();
}

void RecordWriter::Sync() {
  Flush();
  if (::fsync(fd_) != 0) ThrowIOError("syncing", path_, errno);
}

void RecordWriter::Close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  try {
    if (compressor_ && !compressor_->finished()) compressor_->Finish(&pending_);
    WritePending();
  } catch (...) {
    fd_ = -1;
    ::close(fd);
    throw;
  }
  fd_ = -1;
  if (::close(fd) != 0) ThrowIOError("closing", path_, errno);
}

}  // namespace flowtrain::io
