#include "flowtrain/io/idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <memory>
#include <sys/stat.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::io {
namespace {

DataType TypeFromCode(int code, const std::string& path) {
  switch (code) {
    case 0x08:
      return DT_UINT8;
    case 0x09:
      return DT_INT8;
    case 0x0B:
      return DT_INT16;
    case 0x0C:
      return DT_INT32;
    case 0x0D:
      return DT_FLOAT;
    case 0x0E:
      return DT_DOUBLE;
    default:
      DataLoss(path, " is not an IDX file: unknown type code 0x", code);
  }
}

int CodeFromType(DataType dtype) {
  switch (dtype) {
    case DT_UINT8:
      return 0x08;
    case DT_INT8:
      return 0x09;
    case DT_INT16:
      return 0x0B;
    case DT_INT32:
      return 0x0C;
    case DT_FLOAT:
      return 0x0D;
    case DT_DOUBLE:
      return 0x0E;
    default:
      InvalidArgument("IDX files cannot hold ", DataTypeString(dtype));
  }
}

// IDX values are big-endian; swaps every element of `width` bytes in place on this host.
void ToHostOrder(char* data, size_t bytes, size_t width) {
  if (width == 1 || std::endian::native == std::endian::big) return;
  for (size_t k = 0; k + width <= bytes; k += width) std::reverse(data + k, data + k + width);
}

// Deflate encodes at best 258 bytes in 2 bits, about 1032:1.
constexpr int64_t kMaxDeflateRatio = 1032;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

}  // namespace

Tensor ReadIdxFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) NotFound("IDX file ", path, " does not exist");
  // gzread reads plain files too, so compressed and uncompressed files take one path.
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) PermissionDenied("Cannot open IDX file ", path);
  gzbuffer(file.get(), 1 << 20);
  auto read_exactly = [&](void* dst, size_t n, std::string_view what) {
    char* out = static_cast<char*>(dst);
    while (n > 0) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
      const int got = gzread(file.get(), out, chunk);
      if (got <= 0) {
        int errnum = 0;
        const char* message = gzerror(file.get(), &errnum);
        DataLoss("IDX file ", path, " ends inside its ", what,
                 errnum != Z_OK && errnum != Z_STREAM_END ? StrCat(" (", message, ")") : std::string());
      }
      out += got;
      n -= static_cast<size_t>(got);
    }
  };
  unsigned char magic[4];
  read_exactly(magic, 4, "header");
  if (magic[0] != 0 || magic[1] != 0) DataLoss(path, " is not an IDX file: bad magic number");
  const DataType dtype = TypeFromCode(magic[2], path);
  const int rank = magic[3];
  DimVector dims;
  for (int d = 0; d < rank; ++d) {
    unsigned char b[4];
    read_exactly(b, 4, "header");
    dims.push_back((int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3]);
  }
  // The header's sizes are checked against the file before the tensor is allocated: 12 bytes
  // can claim [2^31, 2^31].
  const std::string shape = StrCat("[", StrJoin(dims, ","), "]");
  int64_t bytes = static_cast<int64_t>(DataTypeSize(dtype));
  for (int64_t d : dims) {
    if (!MultiplySizes(bytes, d, &bytes)) {
      DataLoss("IDX file ", path, " is damaged: its header's shape ", shape, " overflows 64 bits");
    }
  }
  const int64_t header_bytes = 4 + 4 * int64_t{rank};
  const int64_t stored_bytes = static_cast<int64_t>(st.st_size) - header_bytes;
  // A gzip file cannot inflate beyond deflate's best ratio.
  const int64_t most =
      gzdirect(file.get()) ? stored_bytes : static_cast<int64_t>(st.st_size) * kMaxDeflateRatio;
  if (bytes > most) {
    if (gzdirect(file.get())) {
      DataLoss("IDX file ", path, " ends inside its data: its header's shape ", shape, " needs ", bytes,
               " bytes but the file holds ", std::max<int64_t>(stored_bytes, 0));
    }
    DataLoss("IDX file ", path, " is damaged: its header's shape ", shape, " needs ", bytes,
             " bytes, more than its ", st.st_size, " compressed bytes can inflate to");
  }
  Tensor tensor(dtype, TensorShape(dims));
  if (bytes > 0) read_exactly(tensor.raw_data(), static_cast<size_t>(bytes), "data");
  ToHostOrder(static_cast<char*>(tensor.raw_data()), static_cast<size_t>(bytes), DataTypeSize(dtype));
  return tensor;
}

void WriteIdxFile(const std::string& path, const Tensor& tensor) {
  const int code = CodeFromType(tensor.dtype());
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (file == nullptr) PermissionDenied("Cannot create IDX file ", path);
  std::string header = {0, 0, static_cast<char>(code), static_cast<char>(tensor.dims())};
  for (int d = 0; d < tensor.dims(); ++d) {
    const uint32_t n = static_cast<uint32_t>(tensor.dim_size(d));
    header += {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
               static_cast<char>(n)};
  }
  const size_t bytes = tensor.NumElements() * DataTypeSize(tensor.dtype());
  std::string data(static_cast<const char*>(tensor.raw_data()), bytes);
  ToHostOrder(data.data(), bytes, DataTypeSize(tensor.dtype()));
  if (std::fwrite(header.data(), 1, header.size(), file.get()) != header.size() ||
      std::fwrite(data.data(), 1, data.size(), file.get()) != data.size()) {
    ResourceExhausted("Cannot write IDX file ", path);
  }
}

}  // namespace flowtrain::io
