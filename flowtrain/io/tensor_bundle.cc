#include "flowtrain/io/tensor_bundle.h"

#include <leveldb/comparator.h>
#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>

#include <bit>
#include <cstdio>
#include <limits>
#include <memory>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/core/types.h"
#include "flowtrain/io/internal/table_check.h"

namespace flowtrain::io {
namespace {

// TF's table_options.h defaults; LevelDB's own defaults (4 KiB blocks, snappy) would give
// different bytes. Compression stays off for writing, as TF's BundleWriter has done since 1.2.
constexpr size_t kIndexBlockSize = 262144;
constexpr int kIndexRestartInterval = 16;

// TF numbers data files with five digits (".data-00000-of-00001").
constexpr int kMaxNumShards = 99999;

// TF limits tensors to this rank.
constexpr int kMaxTensorRank = 254;

// Collects what leveldb::TableBuilder writes, so the finished index can go through an atomic
// write like every other file.
class StringSink : public leveldb::WritableFile {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  leveldb::Status Append(const leveldb::Slice& data) override {
    out_->append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }

 private:
  std::string* out_;
};

// Serves the index table from memory: index files are small (one short entry per tensor), and
// reading them whole keeps LevelDB's Env and its file-descriptor bookkeeping out of the way.
class StringSource : public leveldb::RandomAccessFile {
 public:
  explicit StringSource(std::string contents) : contents_(std::move(contents)) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result, char* /*scratch*/) const override {
    if (offset > contents_.size()) {
      *result = leveldb::Slice();
      return leveldb::Status::IOError("read past the end of the index file");
    }
    const size_t available = contents_.size() - static_cast<size_t>(offset);
    *result = leveldb::Slice(contents_.data() + offset, std::min(n, available));
    return leveldb::Status::OK();
  }
  uint64_t size() const { return contents_.size(); }

 private:
  std::string contents_;
};

[[noreturn]] void ThrowCorruptIndex(const std::string& path, std::string_view detail) {
  DataLoss("Unable to read checkpoint index '", path,
           "'; the file is damaged or was not written as a tensor bundle (", detail, ")");
}

void CheckVersions(const tensorflow::VersionDef& version, const std::string& path) {
  if (version.producer() < kTensorBundleMinProducer) {
    InvalidArgument("Checkpoint '", path, "' has producer version ", version.producer(),
                    " below the minimum producer ", kTensorBundleMinProducer,
                    " supported by flowtrain. Please regenerate your checkpoint.");
  }
  if (version.min_consumer() > kTensorBundleVersion) {
    InvalidArgument("Checkpoint '", path, "' needs min consumer version ", version.min_consumer(),
                    " above the current version ", kTensorBundleVersion,
                    " read by flowtrain; it was written by a newer TensorFlow.");
  }
  for (int bad : version.bad_consumers()) {
    if (bad == kTensorBundleVersion) {
      InvalidArgument("Checkpoint '", path, "' disallows consumer version ", bad, " read by flowtrain.");
    }
  }
}

// Rejects entries whose metadata could make a reader allocate absurd memory or index past a
// shard: a corrupt entry must become an error, never a crash.
void CheckEntry(const std::string& key, const tensorflow::BundleEntryProto& entry, int num_shards,
                const std::string& path) {
  const auto& shape = entry.shape();
  if (shape.unknown_rank() || shape.dim_size() > kMaxTensorRank) {
    DataLoss("Invalid tensor shape for '", key, "' in checkpoint index '", path, "'");
  }
  int64_t elements = 1;
  for (const auto& dim : shape.dim()) {
    if (dim.size() < 0) {
      DataLoss("Invalid tensor shape for '", key, "' in checkpoint index '", path, "': negative dimension ",
               dim.size());
    }
    if (dim.size() > 0 && elements > std::numeric_limits<int64_t>::max() / dim.size()) {
      DataLoss("Invalid tensor shape for '", key, "' in checkpoint index '", path, "': too many elements");
    }
    elements *= dim.size();
  }
  if (entry.slices_size() > 0) return;  // The whole-tensor entry of a partitioned variable.
  if (entry.shard_id() < 0 || entry.shard_id() >= num_shards) {
    DataLoss("Tensor '", key, "' in checkpoint index '", path, "' names shard ", entry.shard_id(),
             " but the bundle has ", num_shards, " shards");
  }
  if (entry.offset() < 0 || entry.size() < 0) {
    DataLoss("Tensor '", key, "' in checkpoint index '", path, "' has a negative offset or size");
  }
}

}  // namespace

std::string MetaFilename(std::string_view prefix) { return StrCat(prefix, ".index"); }

std::string DataFilename(std::string_view prefix, int shard_id, int num_shards) {
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ".data-%05d-of-%05d", shard_id, num_shards);
  return StrCat(prefix, suffix);
}

tensorflow::BundleHeaderProto MakeBundleHeader(int num_shards) {
  tensorflow::BundleHeaderProto header;
  header.set_num_shards(num_shards);
  header.set_endianness(std::endian::native == std::endian::little ? tensorflow::BundleHeaderProto::LITTLE
                                                                   : tensorflow::BundleHeaderProto::BIG);
  header.mutable_version()->set_producer(kTensorBundleVersion);
  header.mutable_version()->set_min_consumer(kTensorBundleMinConsumer);
  return header;
}

namespace bundle_internal {

std::string BuildIndexTable(const tensorflow::BundleHeaderProto& header, const BundleEntryMap& entries) {
  leveldb::Options options;
  options.block_size = kIndexBlockSize;
  options.block_restart_interval = kIndexRestartInterval;
  options.compression = leveldb::kNoCompression;
  options.filter_policy = nullptr;  // TF never writes a filter block.
  options.comparator = leveldb::BytewiseComparator();

  std::string contents;
  StringSink sink(&contents);
  leveldb::TableBuilder builder(options, &sink);
  std::string value;
  header.SerializeToString(&value);
  builder.Add(leveldb::Slice(kHeaderEntryKey.data(), kHeaderEntryKey.size()), value);
  for (const auto& [key, entry] : entries) {
    entry.SerializeToString(&value);
    builder.Add(key, value);
  }
  const leveldb::Status status = builder.Finish();
  if (!status.ok()) Internal("Building a checkpoint index failed: ", status.ToString());
  return contents;
}

IndexContents ReadIndexTable(const std::string& index_path) {
  std::string bytes;
  try {
    bytes = ReadFileToString(index_path);
  } catch (const NotFoundError&) {
    NotFound("Checkpoint index '", index_path, "' not found");
  }
  CheckTableLayout(bytes, index_path);
  StringSource source(std::move(bytes));

  leveldb::Options options;
  options.paranoid_checks = true;  // verify the index block's checksum when opening
  leveldb::Table* raw_table = nullptr;
  const leveldb::Status open_status = leveldb::Table::Open(options, &source, source.size(), &raw_table);
  if (!open_status.ok()) ThrowCorruptIndex(index_path, open_status.ToString());
  std::unique_ptr<leveldb::Table> table(raw_table);

  leveldb::ReadOptions read_options;
  read_options.verify_checksums = true;  // TF always verifies data-block checksums
  read_options.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read_options));
  it->SeekToFirst();
  if (!it->Valid() || !it->key().empty()) {
    ThrowCorruptIndex(index_path, it->status().ok() ? "no header entry" : it->status().ToString());
  }
  IndexContents contents;
  if (!contents.header.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
    ThrowCorruptIndex(index_path, "unable to parse the header");
  }
  CheckVersions(contents.header.version(), index_path);
  const int num_shards = contents.header.num_shards();
  // Readers keep state per shard, so the count is bounded before anyone allocates it.
  if (num_shards < 0 || num_shards > kMaxNumShards) {
    ThrowCorruptIndex(index_path,
                      StrCat("the header claims ", num_shards, " shards; TF's shard file names have ",
                             "five digits, for at most ", kMaxNumShards));
  }

  for (it->Next(); it->Valid(); it->Next()) {
    std::string key = it->key().ToString();
    tensorflow::BundleEntryProto entry;
    if (!entry.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      DataLoss("Entry for key '", key, "' in checkpoint index '", index_path, "' is not parseable");
    }
    CheckEntry(key, entry, num_shards, index_path);
    contents.entries.emplace_hint(contents.entries.end(), std::move(key), std::move(entry));
  }
  if (!it->status().ok()) ThrowCorruptIndex(index_path, it->status().ToString());
  return contents;
}

}  // namespace bundle_internal
}  // namespace flowtrain::io
