// Writes TFRecord files: each record is framed with its length and masked CRC32C checksums
// exactly as TensorFlow's tf.io.TFRecordWriter does, so TF, TensorBoard and RecordReader read
// them. The whole stream may be ZLIB- or GZIP-compressed, as TF's TFRecordOptions allow.
//
//   RecordWriter writer("data/train.tfrecord", {.compression_type = "GZIP"});
//   for (const tensorflow::Example& example : examples) {
//     writer.WriteRecord(example.SerializeAsString());
//   }
//   writer.Close();                          // the destructor closes too, but cannot report errors
//
// Records are buffered in memory and handed to the OS when the buffer fills, on Flush() and on
// Close(). Errors are flowtrain errors naming the file (ResourceExhausted for a full disk,
// PermissionDenied, ...). Not thread-safe: one writer per thread, or lock around it.
#ifndef FLOWTRAIN_IO_RECORD_WRITER_H_
#define FLOWTRAIN_IO_RECORD_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "flowtrain/io/compression.h"

namespace flowtrain::io {

struct RecordWriterOptions {
  // "" (none), "ZLIB" or "GZIP", as TF spells them.
  std::string compression_type{};
  // zlib's level, -1 = zlib's default (TF's default too).
  int compression_level = -1;
  // Bytes gathered in memory before they are written to the file.
  size_t buffer_bytes = 256 * 1024;
  // AlreadyExists instead of truncating an existing file (used to pick unique event files).
  bool fail_if_exists = false;
};

class RecordWriter {
 public:
  // Creates (or truncates) `path`. Its directory must exist.
  explicit RecordWriter(std::string path, RecordWriterOptions options = {});
  ~RecordWriter();  // closes; errors are logged, never thrown
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void WriteRecord(std::string_view payload);
  // Hands every record written so far to the OS, so other processes can read them (a
  // compressed stream is sync-flushed so that they can be decoded too). Does not fsync.
  void Flush();
  // Flush, then fsync: the records survive a machine crash.
  void Sync();
  // Ends the compressed stream, flushes and closes the file. Later writes are
  // FailedPrecondition; a second Close does nothing.
  void Close();

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // Framed bytes written so far, before compression.
  uint64_t uncompressed_bytes() const { return uncompressed_bytes_; }

 private:
  void WritePending();
  void CheckOpen(std::string_view action) const;

  std::string path_;
  RecordWriterOptions options_;
  int fd_ = -1;
  std::unique_ptr<StreamCompressor> compressor_;  // null when uncompressed
  std::string pending_;                           // bytes not yet given to the OS
  std::string framed_;                            // scratch for compressed writes
  uint64_t uncompressed_bytes_ = 0;
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_RECORD_WRITER_H_
