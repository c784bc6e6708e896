#include "flowtrain/io/tensor_bundle_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <thread>
#include <unordered_map>

#include "flowtrain/core/internal/crc32c.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain::io {
namespace {

// Large enough that each chunk bypasses AtomicFileWriter's 1 MiB buffer and goes to the file in
// one write; small enough to stay in the CPU cache between the checksum and the write.
constexpr size_t kChunkBytes = 4 << 20;
// Tensors this large are checksummed on a thread of their own while they are written.
constexpr size_t kParallelChecksumBytes = 8 << 20;

void PutVarint64(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void RenameFile(const std::string& from, const std::string& to) {
  if (from == to) return;
  if (::rename(from.c_str(), to.c_str()) != 0) ThrowIOError("renaming to", to, errno);
}

}  // namespace

BundleWriter::BundleWriter(std::string prefix, Options options)
    : prefix_(std::move(prefix)), options_(options) {
  FT_REQUIRE(!prefix_.empty(), "BundleWriter needs a non-empty prefix");
  FT_REQUIRE(options_.data_alignment >= 1, "BundleWriter data_alignment must be >= 1, got ",
             options_.data_alignment);
  CreateDirectories(Dirname(prefix_));
  data_ = std::make_unique<AtomicFileWriter>(DataFilename(prefix_, 0, 1));
  // Best effort: without it, the final fsync simply has more to write.
  writeback_fd_ = ::open(data_->temp_path().c_str(), O_RDONLY | O_CLOEXEC);
}

BundleWriter::~BundleWriter() {
  if (writeback_fd_ >= 0) ::close(writeback_fd_);
}

uint64_t BundleWriter::data_size() const { return data_ ? data_->size() : 0; }

void BundleWriter::CheckUsable() const {
  if (finished_) FailedPrecondition("BundleWriter for '", prefix_, "' is already finished");
  if (failed_) {
    FailedPrecondition("BundleWriter for '", prefix_, "' failed earlier; its checkpoint cannot be completed");
  }
}

void BundleWriter::Add(std::string_view key, const Tensor& tensor) {
  CheckUsable();
  if (key == kHeaderEntryKey) {
    InvalidArgument("BundleWriter for '", prefix_, "': the empty key is reserved for the bundle header");
  }
  if (entries_.find(key) != entries_.end()) {
    InvalidArgument("Adding duplicate key '", key, "' to bundle '", prefix_, "'");
  }
  if (!tensor.IsInitialized()) {
    InvalidArgument("Adding an empty (uninitialized) tensor under '", key, "' to bundle '", prefix_, "'");
  }
  if (tensor.dtype() != DT_STRING && DataTypeSize(tensor.dtype()) == 0) {
    InvalidArgument("Cannot save tensor '", key, "' of dtype ", DataTypeString(tensor.dtype()),
                    " in bundle '", prefix_, "'");
  }
  tensorflow::BundleEntryProto entry;
  entry.set_dtype(static_cast<tensorflow::DataType>(tensor.dtype()));
  *entry.mutable_shape() = ShapeToProto(tensor.shape());
  entry.set_shard_id(0);
  entry.set_offset(static_cast<int64_t>(data_->size()));
  try {
    if (tensor.dtype() == DT_STRING) {
      WriteStringTensor(tensor, &entry);
    } else {
      WriteNumericTensor(tensor, &entry);
    }
    PadToAlignment();
  } catch (...) {
    // The data file now holds a partial tensor; nothing more can be added consistently.
    failed_ = true;
    throw;
  }
  entries_.emplace(std::string(key), std::move(entry));
}

void BundleWriter::AddSlice(std::string_view full_key, const TensorShape& full_shape,
                            const TensorSlice& slice, const Tensor& slice_tensor) {
  CheckUsable();
  if (full_key == kHeaderEntryKey) {
    InvalidArgument("BundleWriter for '", prefix_, "': the empty key is reserved for the bundle header");
  }
  if (!slice.FitsIn(full_shape)) {
    InvalidArgument("Slice ", slice.DebugString(), " of tensor '", full_key, "' does not fit its shape ",
                    full_shape.DebugString());
  }
  if (!slice_tensor.IsInitialized() || slice_tensor.shape() != slice.ShapeIn(full_shape)) {
    InvalidArgument("Slice ", slice.DebugString(), " of tensor '", full_key, "' ", full_shape.DebugString(),
                    " needs a tensor of shape ", slice.ShapeIn(full_shape).DebugString(), ", got ",
                    slice_tensor.IsInitialized() ? slice_tensor.shape().DebugString() : "none");
  }
  auto it = entries_.find(full_key);
  if (it != entries_.end()) {
    const tensorflow::BundleEntryProto& existing = it->second;
    if (existing.slices().empty() ||
        existing.dtype() != static_cast<tensorflow::DataType>(slice_tensor.dtype()) ||
        ShapeFromProto(existing.shape()) != full_shape) {
      InvalidArgument("Adding slice ", slice.DebugString(), " of '", full_key, "' (",
                      DataTypeString(slice_tensor.dtype()), " ", full_shape.DebugString(), ") to bundle '",
                      prefix_, "', which holds '", full_key, "' as ",
                      DataTypeString(static_cast<DataType>(existing.dtype())), " ",
                      ShapeFromProto(existing.shape()).DebugString(),
                      existing.slices().empty() ? " (a whole tensor)" : "");
    }
  }
  // The slice's values first: a failure leaves the full entry as it was.
  Add(EncodeTensorNameSlice(full_key, slice), slice_tensor);
  tensorflow::BundleEntryProto& full_entry = entries_[std::string(full_key)];
  // dtype, shape and slices only: shard, offset and size mean nothing for the full entry.
  full_entry.set_dtype(static_cast<tensorflow::DataType>(slice_tensor.dtype()));
  *full_entry.mutable_shape() = ShapeToProto(full_shape);
  *full_entry.add_slices() = slice.ToProto();
}

uint32_t BundleWriter::AppendChecksummed(const void* data, size_t n, uint32_t crc) {
  // Written straight from the tensor in chunks. Tensors are values: a variable being saved is
  // copied before an update writes to it (the save holds a reference to its buffer), so the
  // bytes cannot change between the checksum and the write. A large tensor is checksummed on a
  // second thread while this one copies it into the page cache, so the checksum costs no time
  // when a core is free.
  const char* p = static_cast<const char*>(data);
  std::thread checksummer;
  uint32_t parallel_crc = crc;
  if (n >= kParallelChecksumBytes) {
    checksummer = std::thread([&parallel_crc, p, n] { parallel_crc = crc32c::Extend(parallel_crc, p, n); });
  }
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{checksummer};
  for (size_t left = n; left > 0;) {
    const size_t chunk = std::min(left, kChunkBytes);
    if (!checksummer.joinable()) crc = crc32c::Extend(crc, p, chunk);
    data_->Append(p, chunk);
    p += chunk;
    left -= chunk;
    StartWriteback();
  }
  if (checksummer.joinable()) {
    checksummer.join();
    crc = parallel_crc;
  }
  return crc;
}

void BundleWriter::StartWriteback() {
  // Starts the disk writing what is already in the page cache while the next chunk is being
  // checksummed, so that Finish()'s fsync has little left to do and saving runs at
  // the disk's speed instead of disk time plus CPU time. Bytes still in the file writer's
  // buffer are not in the page cache yet; the hint skips them and fsync covers them later.
  if (writeback_fd_ < 0) return;
  const uint64_t end = data_->size();
  if (end - writeback_started_ < kChunkBytes) return;
  ::sync_file_range(writeback_fd_, static_cast<off64_t>(writeback_started_),
                    static_cast<off64_t>(end - writeback_started_), SYNC_FILE_RANGE_WRITE);
  writeback_started_ = end;
}

void BundleWriter::WriteNumericTensor(const Tensor& tensor, tensorflow::BundleEntryProto* entry) {
  const size_t bytes = tensor.TotalBytes();
  const uint32_t crc = AppendChecksummed(tensor.raw_data(), bytes, 0);
  entry->set_size(static_cast<int64_t>(bytes));
  entry->set_crc32c(crc32c::Mask(crc));
}

// Layout: varint64 length of every element, then the masked CRC of the lengths (4 bytes), then
// the elements' bytes. The checksum covers each length as a fixed-width little-endian uint32
// (uint64 past 4 GiB) rather than its varint bytes, then the 4 stored bytes, then the strings.
void BundleWriter::WriteStringTensor(const Tensor& tensor, tensorflow::BundleEntryProto* entry) {
  const std::span<std::string> strings = tensor.flat<std::string>();
  std::string lengths;
  lengths.reserve(strings.size());
  uint32_t crc = 0;
  for (const std::string& s : strings) {
    const uint64_t length = s.size();
    PutVarint64(&lengths, length);
    if (length <= std::numeric_limits<uint32_t>::max()) {
      const uint32_t length32 = static_cast<uint32_t>(length);
      crc = crc32c::Extend(crc, &length32, sizeof(length32));
    } else {
      crc = crc32c::Extend(crc, &length, sizeof(length));
    }
  }
  data_->Append(lengths);
  const uint32_t length_checksum = crc32c::Mask(crc);
  data_->Append(&length_checksum, sizeof(length_checksum));
  crc = crc32c::Extend(crc, &length_checksum, sizeof(length_checksum));
  uint64_t size = lengths.size() + sizeof(length_checksum);
  for (const std::string& s : strings) {
    data_->Append(s);
    crc = crc32c::Extend(crc, s.data(), s.size());
    size += s.size();
  }
  entry->set_size(static_cast<int64_t>(size));
  entry->set_crc32c(crc32c::Mask(crc));
}

void BundleWriter::PadToAlignment() {
  const uint64_t over = data_->size() % static_cast<uint64_t>(options_.data_alignment);
  if (over == 0) return;
  data_->Append(std::string(options_.data_alignment - over, '\0'));
}

void BundleWriter::Finish() {
  CheckUsable();
  try {
    // Data before index: a checkpoint is identified by its index, so the index must never
    // name data that is not yet in place.
    data_->Commit();
    data_.reset();
    WriteFileAtomically(MetaFilename(prefix_),
                        bundle_internal::BuildIndexTable(MakeBundleHeader(1), entries_));
  } catch (...) {
    failed_ = true;
    throw;
  }
  finished_ = true;
}

void MergeBundles(const std::vector<std::string>& prefixes, const std::string& merged_prefix,
                  const MergeBundlesOptions& options) {
  FT_REQUIRE(!prefixes.empty(), "MergeBundles needs at least one bundle to merge into '", merged_prefix, "'");
  CreateDirectories(Dirname(merged_prefix));

  BundleEntryMap merged;
  tensorflow::BundleHeaderProto first_header;
  // Data files in the order they are first referenced: their position is the new shard id.
  std::vector<std::string> data_files;
  std::unordered_map<std::string, int> shard_of_file;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const std::string& prefix = prefixes[i];
    bundle_internal::IndexContents contents = bundle_internal::ReadIndexTable(MetaFilename(prefix));
    if (i == 0) {
      first_header = contents.header;
    } else {
      if (contents.header.endianness() != first_header.endianness()) {
        InvalidArgument("Merging bundles with conflicting endianness: '", prefix, "' vs. '", prefixes[0],
                        "'");
      }
      if (contents.header.version().SerializeAsString() != first_header.version().SerializeAsString()) {
        InvalidArgument("Merging bundles with different format versions: '", prefix, "' vs. '", prefixes[0],
                        "'");
      }
    }
    const int num_shards = contents.header.num_shards();
    for (auto& [key, entry] : contents.entries) {
      auto existing = merged.find(key);
      if (existing != merged.end()) {
        if (existing->second.slices().empty() || entry.slices().empty()) {
          InvalidArgument("Duplicate tensor keyed by '", key, "' encountered when merging '", prefix,
                          "' into '", merged_prefix, "'");
        }
        // Whole-tensor entries of a partitioned variable saved from several devices: the
        // merged entry lists every device's slices.
        for (const auto& slice : entry.slices()) *existing->second.add_slices() = slice;
        continue;
      }
      if (entry.slices().empty()) {
        const std::string file = DataFilename(prefix, entry.shard_id(), num_shards);
        auto [it, inserted] = shard_of_file.emplace(file, static_cast<int>(data_files.size()));
        if (inserted) data_files.push_back(file);
        entry.set_shard_id(it->second);
      }
      merged.emplace(key, std::move(entry));
    }
  }
  if (data_files.empty()) {
    // No tensor data at all: keep the layout of an empty single-shard bundle.
    const std::string file = DataFilename(prefixes[0], 0, 1);
    if (FileExists(file)) data_files.push_back(file);
  }
  const int merged_shards = std::max<int>(1, static_cast<int>(data_files.size()));

  for (size_t shard = 0; shard < data_files.size(); ++shard) {
    RenameFile(data_files[shard], DataFilename(merged_prefix, static_cast<int>(shard), merged_shards));
  }
  tensorflow::BundleHeaderProto header = first_header;
  header.set_num_shards(merged_shards);
  WriteFileAtomically(MetaFilename(merged_prefix), bundle_internal::BuildIndexTable(header, merged));

  // Best-effort cleanup, as TF does: the merged checkpoint is complete already.
  const std::string merged_dir = Dirname(merged_prefix);
  for (const std::string& prefix : prefixes) {
    if (prefix == merged_prefix) continue;
    try {
      DeleteFileIfExists(MetaFilename(prefix));
    } catch (const Error& e) {
      FT_LOG(WARNING) << "Ignoring: " << e.what();
    }
    if (options.delete_old_dirs) {
      const std::string dir = Dirname(prefix);
      if (dir != merged_dir && !dir.empty()) ::rmdir(dir.c_str());  // fails if not empty: fine
    }
  }
}

}  // namespace flowtrain::io
