#include "flowtrain/io/input_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"

namespace flowtrain::io {

InputStream::InputStream(std::string path, CompressionType compression, size_t buffer_bytes)
    : path_(std::move(path)), buffer_bytes_(buffer_bytes) {
  FT_REQUIRE(buffer_bytes_ > 0, "InputStream: buffer_bytes must be positive");
  if (compression != CompressionType::kNone)
    decompressor_ = std::make_unique<StreamDecompressor>(compression, path_);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) ThrowIOError("opening", path_, errno);
}

InputStream::~InputStream() {
  if (fd_ >= 0) ::close(fd_);
}

bool InputStream::FillBuffer() {
  if (start_ > 0) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  const size_t size_before = buffer_.size();
  for (;;) {
    // Compressed bytes are decoded a buffer's worth at a time: a small file may inflate to a
    // great many bytes.
    if (decompressor_ != nullptr && raw_start_ < raw_.size()) {
      raw_start_ +=
          decompressor_->Decompress(std::string_view(raw_).substr(raw_start_), &buffer_, buffer_bytes_);
      if (buffer_.size() > size_before) return true;
    }
    std::string* target = &buffer_;
    if (decompressor_ != nullptr) {
      raw_.erase(0, raw_start_);
      raw_start_ = 0;
      target = &raw_;
    }
    const size_t old_size = target->size();
    target->resize(old_size + buffer_bytes_);
    const ssize_t n = ::read(fd_, target->data() + old_size, buffer_bytes_);
    if (n < 0) {
      target->resize(old_size);
      if (errno == EINTR) continue;
      ThrowIOError("reading", path_, errno);
    }
    target->resize(old_size + static_cast<size_t>(n));
    if (n == 0) {
      // The end of the file: a compressed stream must also have ended (its trailer read).
      if (decompressor_ != nullptr && decompressor_->compressed_offset() > 0 &&
          !decompressor_->at_stream_end()) {
        DataLoss("Compressed stream in '", path_, "' is truncated: the file ends after ",
                 decompressor_->compressed_offset(), " bytes, before the stream's end and trailer");
      }
      return buffer_.size() > size_before;
    }
    if (decompressor_ == nullptr) return true;
  }
}

size_t InputStream::Read(size_t n, std::string* out) {
  size_t got = 0;
  while (got < n) {
    if (start_ == buffer_.size() && !FillBuffer()) break;
    const size_t take = std::min(n - got, buffer_.size() - start_);
    out->append(buffer_, start_, take);
    start_ += take;
    got += take;
  }
  position_ += got;
  return got;
}

bool InputStream::ReadLine(std::string* line) {
  line->clear();
  bool any = false;
  for (;;) {
    if (start_ == buffer_.size() && !FillBuffer()) return any;
    any = true;
    const size_t newline = buffer_.find('\n', start_);
    const size_t end = newline == std::string::npos ? buffer_.size() : newline;
    for (size_t i = start_; i < end; ++i) {
      if (buffer_[i] != '\r') line->push_back(buffer_[i]);
    }
    position_ += end - start_;
    start_ = end;
    if (newline != std::string::npos) {
      ++start_;
      ++position_;
      return true;
    }
  }
}

}  // namespace flowtrain::io
