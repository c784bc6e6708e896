#include "flowtrain/io/record_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <limits>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/internal/record_format.h"

namespace flowtrain::io {
namespace {

// Deflate encodes at best 258 bytes in 2 bits (about 1032:1); inflate may also hold back up to
// a window's worth of output it has decoded but not yet written.
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr uint64_t kMaxInflatePending = 64 * 1024;

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
  for (;;) {
    // Compressed bytes are decoded a read's worth at a time, so that a few kilobytes that
    // inflate to gigabytes are not decoded all at once.
    if (decompressor_ != nullptr && raw_start_ < raw_.size()) {
      raw_start_ += decompressor_->Decompress(std::string_view(raw_).substr(raw_start_), &buffer_,
                                              options_.buffer_bytes);
      if (buffer_.size() > size_before) return true;
      // A few compressed bytes (a gzip header, say) may decode to nothing yet: read on.
    }
    std::string* target = &buffer_;
    if (decompressor_ != nullptr) {
      raw_.erase(0, raw_start_);  // what inflate could not use yet stays for the next read
      raw_start_ = 0;
      target = &raw_;
    }
    const size_t old_size = target->size();
    target->resize(old_size + options_.buffer_bytes);
    const ssize_t n = ::read(fd_, target->data() + old_size, options_.buffer_bytes);
    if (n < 0) {
      target->resize(old_size);
      if (errno == EINTR) continue;
      ThrowIOError("reading", path_, errno);
    }
    target->resize(old_size + static_cast<size_t>(n));
    if (n == 0) return buffer_.size() > size_before;
    if (decompressor_ == nullptr) return true;
  }
}

uint64_t RecordReader::MostDecompressedBytesLeft() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) ThrowIOError("getting the size of", path_, errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t unread =
      size > decompressor_->compressed_offset() ? size - decompressor_->compressed_offset() : 0;
  if (unread > (std::numeric_limits<uint64_t>::max() - kMaxInflatePending) / kMaxDeflateRatio) {
    return std::numeric_limits<uint64_t>::max();
  }
  return unread * kMaxDeflateRatio + kMaxInflatePending;
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
      // What the rest of a compressed file can inflate to bounds what is buffered for a record
      // whose length lies (a 1 MB file claiming 2^40 bytes filled 2.1 GB before it ended).
      if (decompressor_ != nullptr) {
        const uint64_t most = available + MostDecompressedBytesLeft();
        if (needed > most) {
          if (options_.follow) return false;
          DataLoss("Truncated record in '", path_, "' at offset ", offset_, ": the record claims ", length,
                   " bytes, more than the rest of the compressed file can hold (at most ", most, ")");
        }
      }
    }
    if (FillBuffer()) continue;
    const size_t have = buffer_.size() - start_;
    if (options_.follow) return false;
    if (have == 0) {
      // Every record is whole, but a compressed stream must also end with its trailer (the
      // CRC and length a cut-off gzip file lacks).
      if (decompressor_ != nullptr && decompressor_->compressed_offset() > 0 &&
          !decompressor_->at_stream_end()) {
        DataLoss("Compressed stream in '", path_, "' is truncated: the file ends after ",
                 decompressor_->compressed_offset(), " bytes, before the stream's end and trailer");
      }
      return false;
    }
    DataLoss("Truncated record in '", path_, "' at offset ", offset_, ": the file ends after ", have,
             " of the ", needed, " bytes the record needs");
  }
}

}  // namespace flowtrain::io
