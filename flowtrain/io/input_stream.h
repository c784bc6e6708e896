// Reads the bytes of a file in order, optionally ZLIB- or GZIP-decompressed, for the readers
// of plain byte streams (TextLineDataset's lines, FixedLengthRecordDataset's records).
//
//   InputStream in("data/train.csv.gz", CompressionType::kGzip);
//   std::string line;
//   while (in.ReadLine(&line)) Handle(line);
//
// Positions count decompressed bytes, so a reader can save where it is and come back to it
// by reading (or skipping) that many bytes from the start.
#ifndef FLOWTRAIN_IO_INPUT_STREAM_H_
#define FLOWTRAIN_IO_INPUT_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "flowtrain/io/compression.h"

namespace flowtrain::io {

class InputStream {
 public:
  // Opens `path` (NotFound if it does not exist), reading `buffer_bytes` (> 0) at a time.
  InputStream(std::string path, CompressionType compression, size_t buffer_bytes = 256 * 1024);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Appends up to `n` bytes to *out and returns how many: fewer only at the end of the data.
  // DataLoss for a corrupt or truncated compressed stream.
  size_t Read(size_t n, std::string* out);

  // Reads the next line into *line without its '\n' and returns true; false at the end of the
  // data. As TF's buffered input stream does, every '\r' is dropped (so "\r\n" ends a line),
  // and a last line without '\n' is still a line.
  bool ReadLine(std::string* line);

  // Decompressed bytes consumed so far.
  uint64_t position() const { return position_; }
  const std::string& path() const { return path_; }

 private:
  // Appends more decoded bytes to buffer_; false at the end of the data.
  bool FillBuffer();

  std::string path_;
  size_t buffer_bytes_;
  int fd_ = -1;
  std::unique_ptr<StreamDecompressor> decompressor_;  // null when uncompressed
  std::string raw_;  // compressed bytes read, raw_[raw_start_] the first not yet decoded
  size_t raw_start_ = 0;
  std::string buffer_;  // decoded bytes, buffer_[start_] the first not yet consumed
  size_t start_ = 0;
  uint64_t position_ = 0;
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_INPUT_STREAM_H_
