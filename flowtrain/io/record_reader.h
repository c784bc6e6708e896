// Reads TFRecord files record by record, checking both masked CRC32C checksums of every record
// (the one over the length and the one over the payload). Reads what RecordWriter and
// TensorFlow's TFRecordWriter write, optionally ZLIB- or GZIP-compressed.
//
//   RecordReader reader("data/train.tfrecord");
//   std::string record;
//   while (reader.ReadRecord(&record)) {
//     tensorflow::Example example;
//     example.ParseFromString(record);
//   }
//
// A corrupt record (a checksum mismatch) or a file that ends inside a record is DataLossError
// naming the file and the byte offset where the record starts (for a compressed file, the
// offset in the decompressed stream).
//
// Follow mode reads a file another process is still appending to, as TensorBoard reads live
// event files: a partial record at the end is "no more data yet", not an error; ReadRecord
// returns false and a later call continues from the same place once more bytes arrived.
//
//   RecordReader tail(path, {.follow = true});
//   for (;;) {
//     while (tail.ReadRecord(&record)) Handle(record);
//     std::this_thread::sleep_for(std::chrono::seconds(5));
//   }
#ifndef FLOWTRAIN_IO_RECORD_READER_H_
#define FLOWTRAIN_IO_RECORD_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "flowtrain/io/compression.h"

namespace flowtrain::io {

struct RecordReaderOptions {
  // "" (none), "ZLIB" or "GZIP": must match how the file was written.
  std::string compression_type{};
  // Treat a partial record at the end of the file as data still being written.
  bool follow = false;
  // Bytes read from the file at a time.
  size_t buffer_bytes = 256 * 1024;
};

class RecordReader {
 public:
  // Opens `path`; NotFound if it does not exist.
  explicit RecordReader(std::string path, RecordReaderOptions options = {});
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // Reads the next record into *record and returns true; returns false at the end of the data
  // (and, in follow mode, at a partial record). DataLossError for corrupt or truncated records,
  // a record longer than the rest of the file can hold, and a compressed stream without its end.
  bool ReadRecord(std::string* record);

  // Offset of the next record in the (decompressed) stream.
  uint64_t offset() const { return offset_; }
  // Bytes read past offset() that do not make a whole record yet: in follow mode, after
  // ReadRecord returned false, the part of a record a writer has not finished (0 if none).
  uint64_t partial_bytes() const { return buffer_.size() - start_; }
  const std::string& path() const { return path_; }

 private:
  // Appends more decoded bytes to buffer_; false when the file has none to give right now.
  bool FillBuffer();
  // An upper bound on the bytes the unread rest of a compressed file decodes to.
  uint64_t MostDecompressedBytesLeft() const;

  std::string path_;
  RecordReaderOptions options_;
  int fd_ = -1;
  std::unique_ptr<StreamDecompressor> decompressor_;  // null when uncompressed
  std::string raw_;  // compressed bytes read from the file; raw_[raw_start_] is the first not decoded
  size_t raw_start_ = 0;
  std::string buffer_;  // decoded bytes; buffer_[start_] is at stream offset offset_
  size_t start_ = 0;
  uint64_t offset_ = 0;
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_RECORD_READER_H_
