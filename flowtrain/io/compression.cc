#include "flowtrain/io/compression.h"

#include <zlib.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::io {
namespace {

// zlib's window size selects the container: 15 alone is a zlib stream, +16 a gzip one
// (the values TF's ZlibCompressionOptions use).
int WindowBits(CompressionType type) { return type == CompressionType::kGzip ? MAX_WBITS + 16 : MAX_WBITS; }

constexpr size_t kOutputChunk = 64 * 1024;

}  // namespace

CompressionType ParseCompressionType(std::string_view name) {
  if (name.empty()) return CompressionType::kNone;
  if (name == "ZLIB") return CompressionType::kZlib;
  if (name == "GZIP") return CompressionType::kGzip;
  InvalidArgument("Unsupported compression type '", name, "': expected \"\" (none), \"ZLIB\" or \"GZIP\"");
}

std::string_view CompressionTypeName(CompressionType type) {
  switch (type) {
    case CompressionType::kNone:
      return "";
    case CompressionType::kZlib:
      return "ZLIB";
    case CompressionType::kGzip:
      return "GZIP";
  }
  return "";
}

struct StreamCompressor::State {
  z_stream stream{};
};

StreamCompressor::StreamCompressor(CompressionType type, int level) : state_(std::make_unique<State>()) {
  FT_REQUIRE(type != CompressionType::kNone, "StreamCompressor needs ZLIB or GZIP");
  const int rc = deflateInit2(&state_->stream, level, Z_DEFLATED, WindowBits(type),
                              /*memLevel=*/8, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) {
    InvalidArgument("deflateInit2 failed (zlib code ", rc, ") for level ", level);
  }
}

StreamCompressor::~StreamCompressor() { deflateEnd(&state_->stream); }

void StreamCompressor::Deflate(std::string_view data, int flush_mode, std::string* out) {
  FT_REQUIRE(!finished_, "StreamCompressor used after Finish");
  z_stream& s = state_->stream;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  // deflate fills the output window; it is done when it leaves room unused (or, with Z_FINISH,
  // reports the stream end).
  for (;;) {
    const size_t old_size = out->size();
    out->resize(old_size + kOutputChunk);
    s.next_out = reinterpret_cast<Bytef*>(out->data() + old_size);
    s.avail_out = static_cast<uInt>(kOutputChunk);
    const int rc = deflate(&s, flush_mode);
    out->resize(old_size + (kOutputChunk - s.avail_out));
    if (rc == Z_STREAM_ERROR) Internal("deflate failed with Z_STREAM_ERROR");
    if (flush_mode == Z_FINISH) {
      if (rc == Z_STREAM_END) break;
    } else if (s.avail_out != 0 && s.avail_in == 0) {
      break;
    }
  }
}

void StreamCompressor::Compress(std::string_view data, std::string* out) {
  if (!data.empty()) Deflate(data, Z_NO_FLUSH, out);
}

void StreamCompressor::Flush(std::string* out) { Deflate({}, Z_SYNC_FLUSH, out); }

void StreamCompressor::Finish(std::string* out) {
  Deflate({}, Z_FINISH, out);
  finished_ = true;
}

struct StreamDecompressor::State {
  z_stream stream{};
};

StreamDecompressor::StreamDecompressor(CompressionType type, std::string source_name)
    : state_(std::make_unique<State>()), source_name_(std::move(source_name)) {
  FT_REQUIRE(type != CompressionType::kNone, "StreamDecompressor needs ZLIB or GZIP");
  const int rc = inflateInit2(&state_->stream, WindowBits(type));
  if (rc != Z_OK) Internal("inflateInit2 failed (zlib code ", rc, ") for ", source_name_);
}

StreamDecompressor::~StreamDecompressor() { inflateEnd(&state_->stream); }

size_t StreamDecompressor::Decompress(std::string_view data, std::string* out, size_t max_output) {
  z_stream& s = state_->stream;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  const size_t out_before = out->size();
  while (s.avail_in > 0 && out->size() - out_before < max_output) {
    if (at_stream_end_) {
      // More bytes after a complete stream: the next concatenated stream starts here.
      inflateReset(&s);
      at_stream_end_ = false;
    }
    const size_t old_size = out->size();
    out->resize(old_size + kOutputChunk);
    s.next_out = reinterpret_cast<Bytef*>(out->data() + old_size);
    s.avail_out = static_cast<uInt>(kOutputChunk);
    const uInt avail_in_before = s.avail_in;
    const int rc = inflate(&s, Z_NO_FLUSH);
    out->resize(old_size + (kOutputChunk - s.avail_out));
    compressed_offset_ += avail_in_before - s.avail_in;
    if (rc == Z_STREAM_END) {
      at_stream_end_ = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string detail = s.msg != nullptr ? std::string(s.msg) : StrCat("zlib error ", rc);
      DataLoss("Corrupt compressed stream in '", source_name_, "' near compressed offset ",
               compressed_offset_, ": ", detail);
    } else if (s.avail_in == avail_in_before && s.avail_out == kOutputChunk) {
      break;  // zlib can make no progress with this input; it waits for more.
    }
  }
  return data.size() - s.avail_in;
}

}  // namespace flowtrain::io
