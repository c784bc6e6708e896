#include "flowtrain/io/internal/table_check.h"

#include <snappy.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/internal/crc32c.h"
#include "flowtrain/io/internal/record_format.h"
#include "flowtrain/io/internal/varint.h"

namespace flowtrain::io {
namespace {

// LevelDB's table format (table/format.h): a 48-byte footer of two block handles, padding
// and a magic number; each block is followed by a type byte and a masked CRC-32C.
constexpr size_t kFooterSize = 48;
constexpr size_t kHandlesSize = 40;
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kBlockTrailerSize = 5;
constexpr char kNoCompression = 0;
constexpr char kSnappyCompression = 1;

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

class TableChecker {
 public:
  TableChecker(std::string_view table, const std::string& path) : table_(table), path_(path) {}

  void Check() {
    if (table_.size() < kFooterSize) {
      Fail("it has ", table_.size(), " bytes, fewer than a table's ", kFooterSize, "-byte footer");
    }
    const char* footer = table_.data() + table_.size() - kFooterSize;
    if (DecodeFixed64(footer + kHandlesSize) != kTableMagic) Fail("its footer lacks the table magic number");
    const BlockHandle metaindex =
        DecodeHandle(&footer, footer + kHandlesSize, "the footer's metaindex handle");
    const BlockHandle index = DecodeHandle(&footer, footer + kHandlesSize, "the footer's index handle");
    std::string scratch;
    ForEachEntry(Contents(metaindex, "metaindex block", &scratch), "metaindex block",
                 [](std::string_view, std::string_view) {});
    std::string index_scratch;
    ForEachEntry(Contents(index, "index block", &index_scratch), "index block",
                 [&](std::string_view /*key*/, std::string_view value) {
                   const char* p = value.data();
                   const BlockHandle data =
                       DecodeHandle(&p, value.data() + value.size(), "a data block handle");
                   ForEachEntry(Contents(data, "data block", &scratch), "data block",
                                [](std::string_view, std::string_view) {});
                 });
  }

 private:
  template <typename... Args>
  [[noreturn]] void Fail(const Args&... args) const {
    DataLoss("Checkpoint index '", path_, "' is damaged: ", args...);
  }

  BlockHandle DecodeHandle(const char** p, const char* limit, std::string_view what) const {
    BlockHandle handle;
    if (!GetVarint64(p, limit, &handle.offset) || !GetVarint64(p, limit, &handle.size)) {
      Fail(what, " is not a valid block handle");
    }
    // Blocks and their trailers lie before the footer.
    const uint64_t end = table_.size() - kFooterSize;
    if (handle.offset > end || handle.size > end - handle.offset ||
        kBlockTrailerSize > end - handle.offset - handle.size) {
      Fail(what, " claims bytes [", handle.offset, ", ", handle.offset, " + ", handle.size, " + ",
           kBlockTrailerSize, ") of a file whose blocks end at ", end);
    }
    return handle;
  }

  // The block's contents, after its checksum and compression are checked; a compressed block
  // is expanded into `scratch`.
  std::string_view Contents(const BlockHandle& handle, std::string_view what, std::string* scratch) const {
    const char* data = table_.data() + handle.offset;
    const size_t size = static_cast<size_t>(handle.size);
    const uint32_t stored = crc32c::Unmask(DecodeFixed32(data + size + 1));
    const uint32_t actual = crc32c::Value(data, size + 1);
    if (stored != actual) Fail("the checksum of the ", what, " at offset ", handle.offset, " does not match");
    switch (data[size]) {
      case kNoCompression:
        return std::string_view(data, size);
      case kSnappyCompression: {
        // A valid snappy buffer expands by at most ~22 times, so its stated length is bounded
        // by the file once the whole buffer is known to decode to it.
        size_t expanded = 0;
        if (!snappy::GetUncompressedLength(data, size, &expanded) ||
            !snappy::IsValidCompressedBuffer(data, size)) {
          Fail("the ", what, " at offset ", handle.offset, " is not valid snappy data");
        }
        scratch->resize(expanded);
        if (!snappy::RawUncompress(data, size, scratch->data())) {
          Fail("the ", what, " at offset ", handle.offset, " is not valid snappy data");
        }
        return *scratch;
      }
      default:
        Fail("the ", what, " at offset ", handle.offset, " has unknown compression type ",
             static_cast<int>(static_cast<unsigned char>(data[size])));
    }
  }

  // Walks a block's entries as LevelDB's block iterator decodes them: (shared, non_shared,
  // value_length) varints, then the key's new bytes and the value; then the restart points,
  // which must each be where an entry starts (LevelDB decodes from them when it seeks).
  template <typename OnEntry>
  void ForEachEntry(std::string_view block, std::string_view what, const OnEntry& on_entry) const {
    if (block.size() < sizeof(uint32_t))
      Fail("a ", what, " of ", block.size(), " bytes has no restart count");
    const uint64_t restarts = DecodeFixed32(block.data() + block.size() - sizeof(uint32_t));
    if (restarts > (block.size() - sizeof(uint32_t)) / sizeof(uint32_t)) {
      Fail("a ", what, " of ", block.size(), " bytes claims ", restarts, " restart points");
    }
    const size_t entries_end = block.size() - (1 + restarts) * sizeof(uint32_t);
    const char* const base = block.data();
    const char* const limit = base + entries_end;
    std::vector<uint32_t> starts;
    std::string key;
    for (const char* p = base; p < limit;) {
      starts.push_back(static_cast<uint32_t>(p - base));
      uint32_t shared, non_shared, value_length;
      if (!GetVarint32(&p, limit, &shared) || !GetVarint32(&p, limit, &non_shared) ||
          !GetVarint32(&p, limit, &value_length)) {
        Fail("an entry of a ", what, " at offset ", starts.back(), " is cut off");
      }
      if (shared > key.size() || uint64_t{non_shared} + value_length > static_cast<uint64_t>(limit - p)) {
        Fail("an entry of a ", what, " at offset ", starts.back(), " claims ", shared, " + ", non_shared,
             " + ", value_length, " bytes that are not there");
      }
      key.resize(shared);
      key.append(p, non_shared);
      on_entry(std::string_view(key), std::string_view(p + non_shared, value_length));
      p += non_shared + value_length;
    }
    for (uint64_t i = 0; i < restarts; ++i) {
      const uint32_t restart = DecodeFixed32(limit + i * sizeof(uint32_t));
      if (restart != entries_end && !std::binary_search(starts.begin(), starts.end(), restart)) {
        Fail("restart point ", i, " of a ", what, " (offset ", restart, ") is not where an entry starts");
      }
    }
  }

  const std::string_view table_;
  const std::string& path_;
};

}  // namespace

void CheckTableLayout(std::string_view table, const std::string& path) { TableChecker(table, path).Check(); }

}  // namespace flowtrain::io
