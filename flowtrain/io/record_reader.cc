#include "flowtrain/io/record_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/internal/record_format.h"

namespace flowtrain::io {
namespace {

std::string Hex32(uint32_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kDigits[(value >> shift) & 15]);
  return out;
}

}  // namespace

RecordReader::RecordReader(std::string path, RecordReaderOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  const CompressionType type = ParseCompressionType(options_.compression_type);
  if (type != CompressionType::kNone) {
    decompressor_ = std::make_unique<StreamDecompressor>(type, path_);
  }
  FT_REQUIRE(options_.buffer_bytes > 0, "RecordReaderOptions.buffer_bytes must be positive");
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) ThrowIOError("opening", path_, errno);
}

RecordReader::~RecordReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool RecordReader::FillBuffer() {
  // Drop the consumed prefix first so the buffer holds at most one record plus a read's worth.
  if (start_ > 0) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  const size_t size_before = buffer_.size();
  std::string* target = decompressor_ ? &raw_ : &buffer_;
  for (;;) {
    const size_t old_size = decompressor_ ? 0 : buffer_.size();
    target->resize(old_size + options_.buffer_bytes);
    const ssize_t n = ::read(fd_, target->data() + old_size, options_.buffer_bytes);
    if (n < 0) {
      target->resize(old_size);
      if (errno == EINTR) continue;
      ThrowIOError("reading", path_, errno);
    }
    target->resize(old_size + static_cast<size_t>(n));
    if (n == 0) return buffer_.size() > size_before;
    if (decompressor_) decompressor_->Decompress(raw_, &buffer_);
    // A few compressed bytes (a gzip header, say) may decode to nothing yet: read on.
    if (buffer_.size() > size_before) return true;
  }
}

bool RecordReader::ReadRecord(std::string* record) {
  for (;;) {
    const size_t available = buffer_.size() - start_;
    uint64_t needed = kRecordHeaderSize;
    if (available >= kRecordHeaderSize) {
      const char* header = buffer_.data() + start_;
      const uint32_t stored = DecodeFixed32(header + sizeof(uint64_t));
      const uint32_t actual = RecordChecksum(std::string_view(header, sizeof(uint64_t)));
      if (stored != actual) {
        DataLoss("Corrupted record in '", path_, "' at offset ", offset_,
                 ": length checksum mismatch (stored ", Hex32(stored), ", computed ", Hex32(actual), ")");
      }
      const uint64_t length = DecodeFixed64(header);
      const uint64_t body = available - kRecordHeaderSize;
      if (body >= kRecordFooterSize && body - kRecordFooterSize >= length) {
        const std::string_view payload(header + kRecordHeaderSize, length);
        const uint32_t stored_payload = DecodeFixed32(payload.data() + length);
        const uint32_t actual_payload = RecordChecksum(payload);
        if (stored_payload != actual_payload) {
          DataLoss("Corrupted record in '", path_, "' at offset ", offset_,
                   ": payload checksum mismatch over ", length, " bytes (stored ", Hex32(stored_payload),
                   ", computed ", Hex32(actual_payload), ")");
        }
        record->assign(payload);
        const uint64_t total = kRecordHeaderSize + length + kRecordFooterSize;
        start_ += total;
        offset_ += total;
        return true;
      }
      // The sum cannot overflow in practice: a length that large fails the checks above.
      needed = kRecordHeaderSize + length + kRecordFooterSize;
    }
    if (FillBuffer()) continue;
    const size_t have = buffer_.size() - start_;
    if (have == 0 || options_.follow) return false;
    DataLoss("Truncated record in '", path_, "' at offset ", offset_, ": the file ends after ", have,
             " of the ", needed, " bytes the record needs");
  }
}

}  // namespace flowtrain::io
