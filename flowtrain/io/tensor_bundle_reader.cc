#include "flowtrain/io/tensor_bundle_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

#include "flowtrain/core/internal/crc32c.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/internal/varint.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain::io {
namespace {

// Reads and checksums in pieces of this size so that each piece is checksummed while it is
// still in the core's L2 cache (2 MB here; 4 MB pieces were checksummed from L3, ~10% slower
// warm), and VerifyAll needs only this much memory.
constexpr size_t kReadChunkBytes = 1 << 20;

// The pairs of a tensor's slices compared, at most, to prove they do not overlap (about 0.1 s).
// Slices along one dimension need one comparison each; only a hostile index gets near it.
constexpr int64_t kMaxSliceComparisons = int64_t{1} << 24;

// Reads exactly `n` bytes at `offset`, or returns the count read before end of file.
size_t PreadFully(int fd, char* dest, size_t n, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, dest + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      ThrowIOError("reading", path, errno);
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

// std::byteswap arrives only in C++23.
inline uint16_t ByteSwap(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t ByteSwap(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t ByteSwap(uint64_t v) { return __builtin_bswap64(v); }

template <typename U>
void SwapEach(char* data, size_t bytes) {
  for (size_t i = 0; i + sizeof(U) <= bytes; i += sizeof(U)) {
    U v;
    std::memcpy(&v, data + i, sizeof(U));
    v = ByteSwap(v);
    std::memcpy(data + i, &v, sizeof(U));
  }
}

// Converts the elements of a bundle written on a host of the other endianness.
void ByteSwapElements(DataType dtype, char* data, size_t bytes) {
  switch (DataTypeSize(dtype)) {
    case 2:
      SwapEach<uint16_t>(data, bytes);
      break;
    case 4:
      SwapEach<uint32_t>(data, bytes);
      break;
    case 8:
      SwapEach<uint64_t>(data, bytes);
      break;
    default:
      break;  // one-byte types need nothing
  }
}

}  // namespace

BundleReader::BundleReader(std::string prefix) : prefix_(std::move(prefix)) {
  bundle_internal::IndexContents contents = bundle_internal::ReadIndexTable(MetaFilename(prefix_));
  header_ = std::move(contents.header);
  entries_ = std::move(contents.entries);
  const bool bundle_is_big_endian = header_.endianness() == tensorflow::BundleHeaderProto::BIG;
  need_to_swap_bytes_ = bundle_is_big_endian != (std::endian::native == std::endian::big);
  const int shards = std::max(0, header_.num_shards());
  data_fds_.assign(shards, -1);
  data_sizes_.assign(shards, 0);
}

BundleReader::~BundleReader() {
  for (int fd : data_fds_) {
    if (fd >= 0) ::close(fd);
  }
}

bool BundleReader::Contains(std::string_view key) const {
  return key != kHeaderEntryKey && entries_.find(key) != entries_.end();
}

const tensorflow::BundleEntryProto& BundleReader::EntryOrThrow(std::string_view key) const {
  auto it = key == kHeaderEntryKey ? entries_.end() : entries_.find(key);
  if (it == entries_.end()) {
    NotFound("Key '", key, "' not found in checkpoint '", prefix_, "'");
  }
  return it->second;
}

const tensorflow::BundleEntryProto& BundleReader::GetBundleEntryProto(std::string_view key) const {
  return EntryOrThrow(key);
}

BundleReader::DtypeAndShape BundleReader::LookupDtypeAndShape(std::string_view key) const {
  const tensorflow::BundleEntryProto& entry = EntryOrThrow(key);
  return {static_cast<DataType>(entry.dtype()), ShapeFromProto(entry.shape())};
}

std::vector<std::string> BundleReader::ListKeys() const {
  std::vector<std::string> keys;
  keys.reserve(entries_.size());
  for (const auto& [key, entry] : entries_) keys.push_back(key);
  return keys;
}

Tensor BundleReader::Lookup(std::string_view key) const {
  const tensorflow::BundleEntryProto& entry = EntryOrThrow(key);
  const DataType dtype = static_cast<DataType>(entry.dtype());
  if (!IsSupportedTensorType(dtype)) {
    Unimplemented("Tensor '", key, "' in checkpoint '", prefix_, "' has dtype ", DataTypeString(dtype),
                  ", which flowtrain tensors cannot hold");
  }
  const TensorShape shape = ShapeFromProto(entry.shape());
  if (entry.slices_size() > 0) return LookupSlice(key, TensorSlice(shape.dims()));
  // Validate sizes against the data file before allocating, so that a damaged entry cannot
  // make us allocate memory for data that is not there.
  DataFile(key, entry);
  Tensor tensor(dtype, shape);
  ReadValue(key, entry, &tensor);
  return tensor;
}

void BundleReader::LookupInto(std::string_view key, Tensor* out) const {
  const tensorflow::BundleEntryProto& entry = EntryOrThrow(key);
  const TensorShape shape = ShapeFromProto(entry.shape());
  if (out == nullptr || out->dtype() != static_cast<DataType>(entry.dtype()) || out->shape() != shape) {
    InvalidArgument("Cannot restore tensor '", key, "' of checkpoint '", prefix_, "' (",
                    DataTypeString(static_cast<DataType>(entry.dtype())), " ", shape.DebugString(),
                    ") into a tensor of ",
                    out == nullptr ? std::string("nothing")
                                   : StrCat(DataTypeString(out->dtype()), " ", out->shape().DebugString()));
  }
  if (entry.slices_size() > 0) {
    const TensorSlice whole(shape.dims());
    ReadSliceInto(key, entry, StoredSlices(key, entry, whole), whole, out);
    return;
  }
  ReadValue(key, entry, out);
}

Tensor BundleReader::LookupSlice(std::string_view key, const TensorSlice& slice) const {
  const tensorflow::BundleEntryProto& entry = EntryOrThrow(key);
  const DataType dtype = static_cast<DataType>(entry.dtype());
  if (!IsSupportedTensorType(dtype)) {
    Unimplemented("Tensor '", key, "' in checkpoint '", prefix_, "' has dtype ", DataTypeString(dtype),
                  ", which flowtrain tensors cannot hold");
  }
  const TensorShape full_shape = ShapeFromProto(entry.shape());
  if (!slice.FitsIn(full_shape)) {
    InvalidArgument("Slice ", slice.DebugString(), " requested of tensor '", key, "' in checkpoint '",
                    prefix_, "' does not fit its shape ", full_shape.DebugString());
  }
  if (entry.slices_size() == 0) {
    // Saved whole (an unpartitioned variable): read it and take the part asked for.
    const Tensor full = Lookup(key);
    Tensor out(dtype, slice.ShapeIn(full_shape));
    CopyIntersection(full, TensorSlice(full_shape.dims()), full_shape, slice, &out);
    return out;
  }
  // The slices are checked against their data before the result is allocated, so that a
  // damaged index cannot make us allocate memory for data that is not there.
  const std::vector<TensorSlice> stored = StoredSlices(key, entry, slice);
  Tensor out(dtype, slice.ShapeIn(full_shape));
  ReadSliceInto(key, entry, stored, slice, &out);
  return out;
}

std::vector<TensorSlice> BundleReader::StoredSlices(std::string_view key,
                                                    const tensorflow::BundleEntryProto& entry,
                                                    const TensorSlice& wanted) const {
  const TensorShape full_shape = ShapeFromProto(entry.shape());
  std::vector<TensorSlice> stored;
  for (const tensorflow::TensorSliceProto& proto : entry.slices()) {
    TensorSlice s = TensorSlice::FromProto(proto, StrCat("tensor '", key, "' in checkpoint '", prefix_, "'"));
    if (!s.FitsIn(full_shape)) {
      DataLoss("Checkpoint '", prefix_, "' is damaged: slice ", s.DebugString(), " of tensor '", key,
               "' does not fit the tensor's shape ", full_shape.DebugString());
    }
    stored.push_back(std::move(s));
  }
  // Before the entries: a slice moved onto another has lost its entry too, and the overlap
  // says more. Counting the covered elements below is exact only for disjoint slices.
  const SliceOverlap overlap = FindOverlap(stored, full_shape, kMaxSliceComparisons);
  if (overlap.outcome == SliceOverlap::kOverlap) {
    DataLoss("Checkpoint '", prefix_, "' is damaged: slices ", stored[overlap.first].DebugString(), " and ",
             stored[overlap.second].DebugString(), " of tensor '", key, "' overlap");
  }
  if (overlap.outcome == SliceOverlap::kUndecided) {
    DataLoss("Checkpoint '", prefix_, "' is damaged: the ", stored.size(), " slices of tensor '", key,
             "' are interleaved too finely to check that they do not overlap (", kMaxSliceComparisons,
             " pairs compared); TensorFlow's partitioners cut one dimension only");
  }
  int64_t covered = 0;
  for (const TensorSlice& s : stored) {
    const std::string slice_key = EncodeTensorNameSlice(key, s);
    auto it = entries_.find(slice_key);
    if (it == entries_.end()) {
      DataLoss("Checkpoint '", prefix_, "' is damaged: the entry of slice ", s.DebugString(), " of tensor '",
               key, "' is missing");
    }
    const tensorflow::BundleEntryProto& slice_entry = it->second;
    const TensorShape slice_shape = s.ShapeIn(full_shape);
    if (slice_entry.slices_size() > 0 || slice_entry.dtype() != entry.dtype() ||
        ShapeFromProto(slice_entry.shape()) != slice_shape) {
      DataLoss("Checkpoint '", prefix_, "' is damaged: slice ", s.DebugString(), " of tensor '", key, "' (",
               DataTypeString(static_cast<DataType>(entry.dtype())), " ", slice_shape.DebugString(),
               ") is stored as ", DataTypeString(static_cast<DataType>(slice_entry.dtype())), " ",
               ShapeFromProto(slice_entry.shape()).DebugString());
    }
    DataFile(slice_key, slice_entry);  // its bytes are in the data file
    covered += s.IntersectionSize(wanted, full_shape);
  }
  if (covered != wanted.ShapeIn(full_shape).num_elements()) {
    NotFound("Does not have sufficient slices for partitioned tensor ", key,
             " to restore in slice_spec: ", wanted.DebugString(), " (checkpoint '", prefix_, "')");
  }
  return stored;
}

void BundleReader::ReadSliceInto(std::string_view key, const tensorflow::BundleEntryProto& entry,
                                 const std::vector<TensorSlice>& stored, const TensorSlice& slice,
                                 Tensor* out) const {
  const TensorShape full_shape = ShapeFromProto(entry.shape());
  for (const TensorSlice& s : stored) {
    if (s.IntersectionSize(slice, full_shape) == 0) continue;
    const std::string slice_key = EncodeTensorNameSlice(key, s);
    Tensor values(static_cast<DataType>(entry.dtype()), s.ShapeIn(full_shape));
    ReadValue(slice_key, entries_.find(slice_key)->second, &values);
    CopyIntersection(values, s, full_shape, slice, out);
  }
}

int BundleReader::DataFile(std::string_view key, const tensorflow::BundleEntryProto& entry) const {
  if (entry.slices_size() > 0) {
    Internal("Tensor '", key, "' in checkpoint '", prefix_, "' is stored as ", entry.slices_size(),
             " slices and has no data of its own");
  }
  const int shard = entry.shard_id();
  const std::string path = DataFilename(prefix_, shard, num_shards());
  int fd;
  uint64_t file_size;
  {
    absl::MutexLock lock(&files_mu_);
    if (data_fds_[shard] < 0) {
      const int opened = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (opened < 0) {
        if (errno == ENOENT) {
          NotFound("Data file '", path, "' of checkpoint '", prefix_, "' not found (needed for tensor '", key,
                   "')");
        }
        ThrowIOError("opening", path, errno);
      }
      struct stat st;
      if (::fstat(opened, &st) != 0) {
        const int err = errno;
        ::close(opened);
        ThrowIOError("getting the size of", path, err);
      }
      // Tensors are mostly read in file order: a larger readahead window lets the disk run
      // ahead while the previous chunk is checksummed.
      ::posix_fadvise(opened, 0, 0, POSIX_FADV_SEQUENTIAL);
      data_fds_[shard] = opened;
      data_sizes_[shard] = static_cast<uint64_t>(st.st_size);
    }
    fd = data_fds_[shard];
    file_size = data_sizes_[shard];
  }
  const uint64_t offset = static_cast<uint64_t>(entry.offset());
  const uint64_t size = static_cast<uint64_t>(entry.size());
  if (offset > file_size || size > file_size - offset) {
    DataLoss("Data file '", path, "' is truncated: tensor '", key, "' needs bytes [", offset, ", ",
             offset + size, ") but the file has ", file_size, " bytes");
  }
  const DataType dtype = static_cast<DataType>(entry.dtype());
  int64_t elements = 1;
  for (const auto& dim : entry.shape().dim()) elements *= dim.size();
  if (dtype == DT_STRING) {
    // Every element takes at least one varint byte, plus the 4-byte length checksum.
    if (elements > 0 && size < static_cast<uint64_t>(elements) + 4) {
      DataLoss("Invalid size in checkpoint '", prefix_, "' for string tensor '", key, "': ", size,
               " bytes cannot hold ", elements, " elements");
    }
  } else {
    const size_t element_size = DataTypeSize(dtype);
    if (element_size != 0 &&
        (static_cast<uint64_t>(elements) > std::numeric_limits<uint64_t>::max() / element_size ||
         size != static_cast<uint64_t>(elements) * element_size)) {
      DataLoss("Invalid size in checkpoint '", prefix_, "' for tensor '", key, "': stored size ", size,
               ", expected ", static_cast<uint64_t>(elements) * element_size);
    }
  }
  return fd;
}

uint32_t BundleReader::ReadChecksummed(std::string_view key, const tensorflow::BundleEntryProto& entry,
                                       char* dest) const {
  const int fd = DataFile(key, entry);
  const std::string path = DataFilename(prefix_, entry.shard_id(), num_shards());
  const uint64_t offset = static_cast<uint64_t>(entry.offset());
  const size_t size = static_cast<size_t>(entry.size());
  std::vector<char> scratch;
  if (dest == nullptr) scratch.resize(std::min(size, kReadChunkBytes));
  uint32_t crc = 0;
  for (size_t done = 0; done < size;) {
    const size_t chunk = std::min(size - done, kReadChunkBytes);
    char* target = dest != nullptr ? dest + done : scratch.data();
    const size_t got = PreadFully(fd, target, chunk, offset + done, path);
    if (got != chunk) {
      DataLoss("Data file '", path, "' is truncated: tensor '", key, "' needs bytes [", offset, ", ",
               offset + size, ") but reading stopped at ", offset + done + got);
    }
    crc = crc32c::Extend(crc, target, chunk);
    done += chunk;
  }
  return crc;
}

void BundleReader::CheckChecksum(std::string_view key, const tensorflow::BundleEntryProto& entry,
                                 uint32_t actual) const {
  const uint32_t stored = crc32c::Unmask(entry.crc32c());
  if (stored != actual) {
    DataLoss("Checksum does not match for tensor '", key, "' in data file '",
             DataFilename(prefix_, entry.shard_id(), num_shards()), "' (", entry.size(), " bytes at offset ",
             entry.offset(), "): stored ", stored, " vs. calculated ", actual);
  }
}

void BundleReader::ReadValue(std::string_view key, const tensorflow::BundleEntryProto& entry,
                             Tensor* out) const {
  if (entry.dtype() == tensorflow::DT_STRING) {
    ReadStringValue(key, entry, out);
    return;
  }
  char* dest = static_cast<char*>(out->raw_data());
  const uint32_t actual = ReadChecksummed(key, entry, dest);
  CheckChecksum(key, entry, actual);
  // The checksum is over the bytes as stored, so any swap comes after it.
  if (need_to_swap_bytes_) ByteSwapElements(out->dtype(), dest, static_cast<size_t>(entry.size()));
}

void BundleReader::ReadStringValue(std::string_view key, const tensorflow::BundleEntryProto& entry,
                                   Tensor* out) const {
  const int fd = DataFile(key, entry);
  const std::string path = DataFilename(prefix_, entry.shard_id(), num_shards());
  const std::span<std::string> strings = out->flat<std::string>();
  if (entry.size() == 0 && strings.empty()) return;

  std::string bytes(static_cast<size_t>(entry.size()), '\0');
  if (PreadFully(fd, bytes.data(), bytes.size(), entry.offset(), path) != bytes.size()) {
    DataLoss("Data file '", path, "' is truncated: tensor '", key, "' needs bytes [", entry.offset(), ", ",
             entry.offset() + entry.size(), ")");
  }
  const char* p = bytes.data();
  const char* const limit = bytes.data() + bytes.size();
  auto damaged = [&](std::string_view what) {
    DataLoss("String tensor '", key, "' in data file '", path, "' is damaged: ", what);
  };

  std::vector<uint64_t> lengths(strings.size());
  uint32_t crc = 0;
  uint64_t total = 0;
  for (uint64_t& length : lengths) {
    if (!GetVarint64(&p, limit, &length)) damaged("bad string length");
    // Checked one by one, so that lengths whose sum wraps past 2^64 cannot match the entry.
    if (length > bytes.size() - total) {
      damaged(StrCat("string lengths add up to more than the entry's ", bytes.size(), " bytes"));
    }
    if (length <= std::numeric_limits<uint32_t>::max()) {
      uint32_t length32 = static_cast<uint32_t>(length);
      // The writer checksummed the lengths in its own byte order.
      if (need_to_swap_bytes_) length32 = ByteSwap(length32);
      crc = crc32c::Extend(crc, &length32, sizeof(length32));
    } else {
      uint64_t length64 = need_to_swap_bytes_ ? ByteSwap(length) : length;
      crc = crc32c::Extend(crc, &length64, sizeof(length64));
    }
    total += length;
  }
  uint32_t raw_length_checksum;
  if (limit - p < static_cast<ptrdiff_t>(sizeof(raw_length_checksum))) damaged("no length checksum");
  std::memcpy(&raw_length_checksum, p, sizeof(raw_length_checksum));
  p += sizeof(raw_length_checksum);
  const uint32_t length_checksum = need_to_swap_bytes_ ? ByteSwap(raw_length_checksum) : raw_length_checksum;
  if (crc32c::Unmask(length_checksum) != crc) {
    DataLoss("The length checksum does not match for string tensor '", key, "' in data file '", path,
             "': stored ", crc32c::Unmask(length_checksum), " vs. calculated ", crc);
  }
  crc = crc32c::Extend(crc, &raw_length_checksum, sizeof(raw_length_checksum));
  if (total != static_cast<uint64_t>(limit - p)) {
    damaged(StrCat("string lengths add up to ", total, " bytes but the entry holds ", limit - p));
  }
  for (size_t i = 0; i < strings.size(); ++i) {
    strings[i].assign(p, lengths[i]);
    crc = crc32c::Extend(crc, p, lengths[i]);
    p += lengths[i];
  }
  CheckChecksum(key, entry, crc);
}

void BundleReader::VerifyAll() const {
  for (const auto& [key, entry] : entries_) {
    if (entry.slices_size() > 0) continue;  // holds no data of its own
    if (entry.dtype() == tensorflow::DT_VARIANT) {
      Unimplemented("Tensor '", key, "' in checkpoint '", prefix_,
                    "' has dtype variant, whose layout flowtrain does not read");
    }
    if (entry.dtype() == tensorflow::DT_STRING) {
      DataFile(key, entry);
      Tensor scratch(DT_STRING, ShapeFromProto(entry.shape()));
      ReadStringValue(key, entry, &scratch);
    } else {
      CheckChecksum(key, entry, ReadChecksummed(key, entry, nullptr));
    }
  }
}

std::string BundleReader::DebugString() const {
  std::string out;
  for (const auto& [key, entry] : entries_) {
    if (entry.slices_size() > 0) continue;
    StrAppend(&out, key, " (", DataTypeEnumName(static_cast<DataType>(entry.dtype())), ") ",
              ShapeFromProto(entry.shape()).DebugString(), "\n");
  }
  return out;
}

}  // namespace flowtrain::io
