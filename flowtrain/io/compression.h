// Whole-stream compression for TFRecord files, as TF's TFRecordWriter/TFRecordReader offer it:
// the entire byte stream of framed records is one zlib or gzip stream (not each record).
// zlib (Debian's libz) does the work; these classes only drive it incrementally.
//
//   CompressionType type = ParseCompressionType("GZIP");      // "", "ZLIB" or "GZIP"
//   StreamCompressor deflater(type);
//   std::string out;
//   deflater.Compress(bytes, &out);           // appends whatever zlib emits
//   deflater.Flush(&out);                     // everything so far becomes decodable
//   deflater.Finish(&out);                    // stream trailer; the compressor is then done
//
//   StreamDecompressor inflater(type, "data.tfrecord.gz");
//   size_t used = inflater.Decompress(compressed_chunk, &plain, 1 << 20);  // DataLoss on corrupt input
#ifndef FLOWTRAIN_IO_COMPRESSION_H_
#define FLOWTRAIN_IO_COMPRESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace flowtrain::io {

enum class CompressionType {
  kNone,  // ""
  kZlib,  // "ZLIB": zlib header and Adler-32 trailer (RFC 1950)
  kGzip,  // "GZIP": gzip header and CRC-32 trailer (RFC 1952)
};

// TF's option spelling ("", "ZLIB", "GZIP") to the enum; InvalidArgument for anything else.
CompressionType ParseCompressionType(std::string_view name);
// The enum back to TF's spelling.
std::string_view CompressionTypeName(CompressionType type);

// Feeds bytes through deflate, appending the compressed output to a caller's string.
class StreamCompressor {
 public:
  // `level` is zlib's (-1 = Z_DEFAULT_COMPRESSION, as TF uses). `type` must not be kNone.
  explicit StreamCompressor(CompressionType type, int level = -1);
  ~StreamCompressor();
  StreamCompressor(const StreamCompressor&) = delete;
  StreamCompressor& operator=(const StreamCompressor&) = delete;

  void Compress(std::string_view data, std::string* out);
  // Z_SYNC_FLUSH: a reader can decode every byte given so far, so a live file can be followed.
  void Flush(std::string* out);
  // Ends the stream (Z_FINISH). Compress/Flush may not be called afterwards.
  void Finish(std::string* out);
  bool finished() const { return finished_; }

 private:
  void Deflate(std::string_view data, int flush_mode, std::string* out);

  struct State;
  std::unique_ptr<State> state_;
  bool finished_ = false;
};

// Feeds compressed bytes through inflate. Concatenated streams (e.g. gzip members appended
// to one file) are decoded one after the other, as `zcat` does.
class StreamDecompressor {
 public:
  // `source_name` names the file in error messages.
  StreamDecompressor(CompressionType type, std::string source_name);
  ~StreamDecompressor();
  StreamDecompressor(const StreamDecompressor&) = delete;
  StreamDecompressor& operator=(const StreamDecompressor&) = delete;

  // Appends the bytes `data` decodes to, stopping once `max_output` bytes or more were appended
  // (at most 64 KiB more), and returns how many bytes of `data` it consumed: the caller passes
  // the rest again, with more after it. DataLoss naming the file and the compressed offset when
  // the stream is corrupt.
  size_t Decompress(std::string_view data, std::string* out, size_t max_output);
  // Compressed bytes consumed so far.
  uint64_t compressed_offset() const { return compressed_offset_; }
  // True when the input so far ends exactly at the end of a complete stream.
  bool at_stream_end() const { return at_stream_end_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string source_name_;
  uint64_t compressed_offset_ = 0;
  bool at_stream_end_ = false;
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_COMPRESSION_H_
