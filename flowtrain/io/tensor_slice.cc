#include "flowtrain/io/tensor_slice.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::io {
namespace {

// OrderedCode (TF's strings/ordered_code.cc), the three encodings slice keys use.

// A length byte, then the value's big-endian bytes without leading zeros.
void WriteNumIncreasing(std::string* dest, uint64_t value) {
  unsigned char buf[9];
  int len = 0;
  while (value > 0) {
    ++len;
    buf[9 - len] = static_cast<unsigned char>(value & 0xff);
    value >>= 8;
  }
  dest->push_back(static_cast<char>(len));
  dest->append(reinterpret_cast<const char*>(buf + 9 - len), static_cast<size_t>(len));
}

// The bytes with 0x00 and 0xff escaped, then the separator 0x00 0x01.
void WriteString(std::string* dest, std::string_view s) {
  for (const char c : s) {
    if (c == '\0') {
      dest->append("\x00\xff", 2);
    } else if (c == '\xff') {
      dest->append("\xff\x00", 2);
    } else {
      dest->push_back(c);
    }
  }
  dest->append("\x00\x01", 2);
}

// Sign-extended big-endian bytes whose leading bits encode the length (1 to 10 bytes).
void WriteSignedNumIncreasing(std::string* dest, int64_t value) {
  static constexpr unsigned char kLengthToHeaderBits[11][2] = {
      {0, 0},    {0x80, 0}, {0xc0, 0}, {0xe0, 0},    {0xf0, 0},   {0xf8, 0},
      {0xfc, 0}, {0xfe, 0}, {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}};
  const uint64_t x = value < 0 ? ~static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  if (x < 64) {
    dest->push_back(static_cast<char>(kLengthToHeaderBits[1][0] ^ static_cast<unsigned char>(value)));
    return;
  }
  const int bits = 64 - std::countl_zero(x);  // x >= 64, so bits >= 7
  const int len = bits / 7 + 1;
  unsigned char buf[10];
  const unsigned char sign = value < 0 ? 0xff : 0x00;
  buf[0] = sign;
  buf[1] = sign;
  const uint64_t u = static_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) buf[2 + i] = static_cast<unsigned char>(u >> (56 - 8 * i));
  unsigned char* begin = buf + sizeof(buf) - len;
  begin[0] ^= kLengthToHeaderBits[len][0];
  begin[1] ^= kLengthToHeaderBits[len][1];
  dest->append(reinterpret_cast<const char*>(begin), static_cast<size_t>(len));
}

bool ParseInt64(std::string_view text, int64_t* out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc() && ptr == end;
}

// `text` cut at every `sep`; empty pieces are dropped when `skip_empty`.
std::vector<std::string_view> Split(std::string_view text, char sep, bool skip_empty = false) {
  std::vector<std::string_view> pieces;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(sep, begin);
    const std::string_view piece = text.substr(begin, end == std::string_view::npos ? end : end - begin);
    if (!skip_empty || !piece.empty()) pieces.push_back(piece);
    if (end == std::string_view::npos) return pieces;
    begin = end + 1;
  }
}

}  // namespace

TensorSlice::TensorSlice(int dims)
    : starts_(static_cast<size_t>(dims), 0), lengths_(static_cast<size_t>(dims), kFullExtent) {}

TensorSlice::TensorSlice(std::vector<int64_t> starts, std::vector<int64_t> lengths)
    : starts_(std::move(starts)), lengths_(std::move(lengths)) {
  FT_REQUIRE(starts_.size() == lengths_.size(), "TensorSlice: ", starts_.size(), " starts but ",
             lengths_.size(), " lengths");
  for (size_t d = 0; d < starts_.size(); ++d) {
    FT_REQUIRE(
        starts_[d] >= 0 && lengths_[d] >= kFullExtent && (lengths_[d] != kFullExtent || starts_[d] == 0),
        "TensorSlice: dimension ", d, " has start ", starts_[d], " and length ", lengths_[d]);
  }
}

TensorSlice TensorSlice::FromProto(const tensorflow::TensorSliceProto& proto, std::string_view what) {
  std::vector<int64_t> starts;
  std::vector<int64_t> lengths;
  for (const auto& extent : proto.extent()) {
    const int64_t length = extent.has_length_case() == tensorflow::TensorSliceProto::Extent::kLength
                               ? extent.length()
                               : kFullExtent;
    if (extent.start() < 0 || length < kFullExtent || (length == kFullExtent && extent.start() != 0)) {
      DataLoss("Slice of ", what, " has an invalid extent: start ", extent.start(), ", length ", length);
    }
    starts.push_back(extent.start());
    lengths.push_back(length);
  }
  return TensorSlice(std::move(starts), std::move(lengths));
}

TensorSlice TensorSlice::Parse(std::string_view text) {
  std::vector<int64_t> starts;
  std::vector<int64_t> lengths;
  if (!text.empty()) {
    for (std::string_view extent : Split(text, ':')) {
      if (extent == "-") {
        starts.push_back(0);
        lengths.push_back(kFullExtent);
        continue;
      }
      const std::vector<std::string_view> parts = Split(extent, ',');
      int64_t start = 0;
      int64_t length = 0;
      if (parts.size() != 2 || !ParseInt64(parts[0], &start) || !ParseInt64(parts[1], &length) || start < 0 ||
          length < 0) {
        InvalidArgument("Expected a pair of non-negative integers or '-' in slice '", text, "', got '",
                        extent, "'");
      }
      starts.push_back(start);
      lengths.push_back(length);
    }
  }
  return TensorSlice(std::move(starts), std::move(lengths));
}

bool TensorSlice::FitsIn(const TensorShape& shape) const {
  if (shape.dims() != dims()) return false;
  for (int d = 0; d < dims(); ++d) {
    if (IsFullAt(d)) continue;
    if (starts_[d] > shape.dim_size(d) || lengths_[d] > shape.dim_size(d) - starts_[d]) return false;
  }
  return true;
}

TensorShape TensorSlice::ShapeIn(const TensorShape& shape) const {
  TensorShape out;
  for (int d = 0; d < dims(); ++d) out.AddDim(end(d, shape) - starts_[d]);
  return out;
}

int64_t TensorSlice::IntersectionSize(const TensorSlice& other, const TensorShape& shape) const {
  int64_t elements = 1;
  for (int d = 0; d < dims(); ++d) {
    const int64_t overlap =
        std::min(end(d, shape), other.end(d, shape)) - std::max(starts_[d], other.starts_[d]);
    if (overlap <= 0) return 0;
    elements *= overlap;  // at most shape's element count, as both slices fit it
  }
  return elements;
}

SliceOverlap FindOverlap(const std::vector<TensorSlice>& slices, const TensorShape& shape,
                         int64_t max_comparisons) {
  SliceOverlap result;
  // Empty slices share nothing with anything; a rank-0 slice is the tensor's one element.
  std::vector<size_t> order;
  for (size_t i = 0; i < slices.size(); ++i) {
    if (slices[i].ShapeIn(shape).num_elements() > 0) order.push_back(i);
  }
  if (shape.dims() == 0) {
    if (order.size() > 1) result = {SliceOverlap::kOverlap, order[0], order[1], 1};
    return result;
  }
  int sweep_dim = 0;
  size_t most_starts = 0;
  for (int d = 0; d < shape.dims(); ++d) {
    std::vector<int64_t> starts;
    for (size_t i : order) starts.push_back(slices[i].start(d));
    std::sort(starts.begin(), starts.end());
    const size_t distinct = static_cast<size_t>(std::unique(starts.begin(), starts.end()) - starts.begin());
    if (distinct > most_starts) most_starts = distinct, sweep_dim = d;
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return slices[a].start(sweep_dim) < slices[b].start(sweep_dim); });
  std::vector<size_t> open;  // slices whose extent along sweep_dim reaches the current start
  for (size_t i : order) {
    const int64_t start = slices[i].start(sweep_dim);
    size_t kept = 0;
    for (size_t j : open) {
      if (slices[j].end(sweep_dim, shape) <= start) continue;  // closed: behind the sweep
      if (result.comparisons == max_comparisons) {
        result.outcome = SliceOverlap::kUndecided;
        return result;
      }
      ++result.comparisons;
      if (slices[i].IntersectionSize(slices[j], shape) > 0) {
        result.outcome = SliceOverlap::kOverlap;
        result.first = std::min(i, j), result.second = std::max(i, j);
        return result;
      }
      open[kept++] = j;
    }
    open.resize(kept);
    open.push_back(i);
  }
  return result;
}

std::string TensorSlice::DebugString() const {
  std::string out;
  for (int d = 0; d < dims(); ++d) {
    if (d > 0) out += ':';
    if (IsFullAt(d)) {
      out += '-';
    } else {
      StrAppend(&out, starts_[d], ",", lengths_[d]);
    }
  }
  return out;
}

tensorflow::TensorSliceProto TensorSlice::ToProto() const {
  tensorflow::TensorSliceProto proto;
  for (int d = 0; d < dims(); ++d) {
    auto* extent = proto.add_extent();
    if (!IsFullAt(d)) {
      extent->set_start(starts_[d]);
      extent->set_length(lengths_[d]);
    }
  }
  return proto;
}

ShapeAndSlice ParseShapeAndSlice(std::string_view text) {
  const std::vector<std::string_view> pieces = Split(text, ' ', /*skip_empty=*/true);
  if (pieces.empty()) InvalidArgument("Expected a shape and a slice in '", text, "'");
  ShapeAndSlice out;
  for (size_t i = 0; i + 1 < pieces.size(); ++i) {
    int64_t dim = 0;
    if (!ParseInt64(pieces[i], &dim) || dim < 0) {
      InvalidArgument("Expected a non-negative dimension in shape and slice '", text, "', got '", pieces[i],
                      "'");
    }
    out.full_shape.AddDim(dim);
  }
  out.slice = TensorSlice::Parse(pieces.back());
  if (out.slice.dims() != out.full_shape.dims()) {
    InvalidArgument("Shape and slice '", text, "': the slice has ", out.slice.dims(),
                    " dimensions but the shape ", out.full_shape.dims());
  }
  if (!out.slice.FitsIn(out.full_shape)) {
    InvalidArgument("Shape and slice '", text, "': the slice ", out.slice.DebugString(), " does not fit in ",
                    out.full_shape.DebugString());
  }
  return out;
}

std::string EncodeTensorNameSlice(std::string_view name, const TensorSlice& slice) {
  std::string key;
  WriteNumIncreasing(&key, 0);
  WriteString(&key, name);
  WriteNumIncreasing(&key, static_cast<uint64_t>(slice.dims()));
  for (int d = 0; d < slice.dims(); ++d) {
    WriteSignedNumIncreasing(&key, slice.start(d));
    WriteSignedNumIncreasing(&key, slice.length(d));
  }
  return key;
}

int64_t CopyIntersection(const Tensor& src, const TensorSlice& src_slice, const TensorShape& full_shape,
                         const TensorSlice& dst_slice, Tensor* dst) {
  const int rank = full_shape.dims();
  if (rank == 0) {
    // A scalar "slice" is the whole tensor.
    if (src.dtype() == DT_STRING) {
      dst->flat<std::string>()[0] = src.flat<std::string>()[0];
    } else {
      std::memcpy(dst->raw_data(), src.raw_data(), DataTypeSize(src.dtype()));
    }
    return 1;
  }
  // The intersection's box in full coordinates.
  std::vector<int64_t> lo(rank), hi(rank);
  for (int d = 0; d < rank; ++d) {
    lo[d] = std::max(src_slice.start(d), dst_slice.start(d));
    hi[d] = std::min(src_slice.end(d, full_shape), dst_slice.end(d, full_shape));
    if (lo[d] >= hi[d]) return 0;
  }
  const TensorShape src_shape = src_slice.ShapeIn(full_shape);
  const TensorShape dst_shape = dst_slice.ShapeIn(full_shape);
  // Row-major strides of both tensors, in elements.
  std::vector<int64_t> src_stride(rank, 1), dst_stride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) {
    src_stride[d] = src_stride[d + 1] * src_shape.dim_size(d + 1);
    dst_stride[d] = dst_stride[d + 1] * dst_shape.dim_size(d + 1);
  }
  const int64_t run = hi[rank - 1] - lo[rank - 1];  // contiguous elements per innermost row
  const bool strings = src.dtype() == DT_STRING;
  const size_t element_size = strings ? 0 : DataTypeSize(src.dtype());
  std::vector<int64_t> index(lo);  // walks the box's outer dimensions
  int64_t copied = 0;
  while (true) {
    int64_t src_at = 0;
    int64_t dst_at = 0;
    for (int d = 0; d < rank; ++d) {
      src_at += (index[d] - src_slice.start(d)) * src_stride[d];
      dst_at += (index[d] - dst_slice.start(d)) * dst_stride[d];
    }
    if (strings) {
      const auto from = src.flat<std::string>();
      auto to = dst->flat<std::string>();
      for (int64_t i = 0; i < run; ++i) to[dst_at + i] = from[src_at + i];
    } else {
      std::memcpy(static_cast<char*>(dst->raw_data()) + dst_at * element_size,
                  static_cast<const char*>(src.raw_data()) + src_at * element_size, run * element_size);
    }
    copied += run;
    int d = rank - 2;
    for (; d >= 0; --d) {
      if (++index[d] < hi[d]) break;
      index[d] = lo[d];
    }
    if (d < 0) break;
  }
  return copied;
}

}  // namespace flowtrain::io
