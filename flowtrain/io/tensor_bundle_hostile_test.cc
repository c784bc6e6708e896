// Hostile checkpoints: tiny files whose sizes lie (block handles, entry lengths, shard counts,
// string lengths). Each is DataLoss naming the file, read without allocating what it claims.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/internal/crc32c.h"
#include "flowtrain/io/internal/record_format.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>(v | 0x80));
  out.push_back(static_cast<char>(v));
  return out;
}

std::string Fixed32(uint32_t v) {
  std::string out(4, '\0');
  EncodeFixed32(v, out.data());
  return out;
}

// One LevelDB block entry with no key prefix shared; `header` overrides the three lengths.
std::string Entry(std::string_view key, std::string_view value) {
  return Varint(0) + Varint(key.size()) + Varint(value.size()) + std::string(key) + std::string(value);
}

// Entries followed by one restart point at 0.
std::string Block(const std::string& entries) { return entries + Fixed32(0) + Fixed32(1); }

// Appends `contents` with its trailer (uncompressed, checksummed) and returns its handle.
std::string AppendBlock(std::string* table, const std::string& contents) {
  const std::string handle = Varint(table->size()) + Varint(contents.size());
  const std::string typed = contents + '\0';
  *table += typed + Fixed32(crc32c::Mask(crc32c::Value(typed)));
  return handle;
}

std::string Footer(const std::string& metaindex, const std::string& index) {
  std::string footer = metaindex + index;
  footer.resize(40, '\0');
  std::string magic(8, '\0');
  EncodeFixed64(0xdb4775248b80fb57ull, magic.data());
  return footer + magic;
}

// A table whose one data block is `data_block` and whose index points at it.
std::string TableWith(const std::string& data_block) {
  std::string table;
  const std::string data = AppendBlock(&table, data_block);
  const std::string meta = AppendBlock(&table, Block(""));
  const std::string index = AppendBlock(&table, Block(Entry("\xff", data)));
  return table + Footer(meta, index);
}

std::string HeaderValue(int num_shards) {
  std::string value;
  MakeBundleHeader(num_shards).SerializeToString(&value);
  return value;
}

class HostileIndex : public ::testing::Test {
 protected:
  void Write(const std::string& bytes) { WriteFileAtomically(MetaFilename(prefix_), bytes); }
  void ExpectDataLoss(std::initializer_list<std::string_view> parts) {
    testing::ExpectError<DataLossError>([&] { BundleReader reader(prefix_); }, parts);
  }

  const std::string prefix_ = testing::MakeTempDir("hostile") + "/ckpt";
  const std::string index_ = MetaFilename(prefix_);
};

TEST_F(HostileIndex, TheBuilderMakesAReadableTable) {
  Write(TableWith(Block(Entry("", HeaderValue(1)))));
  EXPECT_TRUE(BundleReader(prefix_).ListKeys().empty());
}

// The entry's key and value lengths, 0xfffffff0 + 0x20, wrap to 16 in LevelDB's 32-bit bounds
// check, which then copied a 4 GB key out of a 60-byte block (SIGSEGV).
TEST_F(HostileIndex, EntryLengthsThatWrapAreDataLoss) {
  const std::string entry = Varint(0) + Varint(0xfffffff0u) + Varint(0x20) + std::string(16, 'k');
  Write(TableWith(Block(Entry("", HeaderValue(1)) + entry)));
  ExpectDataLoss({index_, "entry of a data block", "claims 0 + 4294967280 + 32 bytes"});
  Write(TableWith(Block(entry)));
  ExpectDataLoss({index_, "claims"});
}

// Handles naming blocks past the end of the file: LevelDB allocated the claimed size first
// (std::bad_alloc for 2^40 bytes).
TEST_F(HostileIndex, BlockHandlesBeyondTheFileAreDataLoss) {
  std::string table;
  const std::string data = AppendBlock(&table, Block(Entry("", HeaderValue(1))));
  const std::string meta = AppendBlock(&table, Block(""));
  const std::string huge = Varint(0) + Varint(uint64_t{1} << 40);
  Write(table + Footer(meta, huge));
  ExpectDataLoss({index_, "the footer's index handle claims bytes [0, 0 + 1099511627776 + 5)"});
  std::string with_index = table;
  const std::string index_handle = AppendBlock(&with_index, Block(Entry("\xff", data)));
  Write(with_index + Footer(huge, index_handle));
  ExpectDataLoss({index_, "the footer's metaindex handle claims"});

  std::string with_bad_entry = table;
  const std::string index = AppendBlock(&with_bad_entry, Block(Entry("\xff", Varint(3) + Varint(1u << 30))));
  Write(with_bad_entry + Footer(meta, index));
  ExpectDataLoss({index_, "a data block handle claims bytes [3, 3 + 1073741824 + 5)"});
  // Offset and size summing past 2^64.
  with_bad_entry = table;
  const std::string wrapping =
      AppendBlock(&with_bad_entry, Block(Entry("\xff", Varint(~uint64_t{0} - 2) + Varint(8))));
  Write(with_bad_entry + Footer(meta, wrapping));
  ExpectDataLoss({index_, "a data block handle claims"});
}

TEST_F(HostileIndex, RestartPointsInsideEntriesAreDataLoss) {
  const std::string entries = Entry("", HeaderValue(1));
  Write(TableWith(entries + Fixed32(3) + Fixed32(1)));
  ExpectDataLoss({index_, "restart point 0", "offset 3"});
  Write(TableWith(entries + Fixed32(0) + Fixed32(1u << 30)));
  ExpectDataLoss({index_, "claims 1073741824 restart points"});
}

// A 124-byte index claiming 2^31-1 shards made the reader allocate state for each (1.2 GB
// for 10^8); TF names shards with five digits.
TEST_F(HostileIndex, ShardCountsBeyondFiveDigitsAreDataLoss) {
  for (int shards : {100000, -1}) {
    SCOPED_TRACE(shards);
    Write(bundle_internal::BuildIndexTable(MakeBundleHeader(shards), {}));
    ExpectDataLoss({index_, "shards"});
  }
  Write(bundle_internal::BuildIndexTable(MakeBundleHeader(99999), {}));
  EXPECT_EQ(BundleReader(prefix_).num_shards(), 99999);
}

// Two string lengths of 2^63 and 2^63 + 3 add up (mod 2^64) to the 3 bytes that follow them:
// the sum matched, and the first string was copied 2^63 bytes long.
TEST_F(HostileIndex, StringLengthsThatWrapAreDataLoss) {
  const uint64_t lengths[2] = {uint64_t{1} << 63, (uint64_t{1} << 63) + 3};
  std::string data = Varint(lengths[0]) + Varint(lengths[1]);
  const uint32_t length_crc = crc32c::Value(lengths, sizeof(lengths));  // 64-bit lengths, as written
  data += Fixed32(crc32c::Mask(length_crc)) + "abc";
  WriteFileAtomically(DataFilename(prefix_, 0, 1), data);
  BundleEntryMap entries;
  auto& s = entries["s"];
  s.set_dtype(tensorflow::DT_STRING);
  s.mutable_shape()->add_dim()->set_size(2);
  s.set_size(static_cast<int64_t>(data.size()));
  Write(bundle_internal::BuildIndexTable(MakeBundleHeader(1), entries));
  BundleReader reader(prefix_);
  const std::string data_file = DataFilename(prefix_, 0, 1);
  testing::ExpectError<DataLossError>([&] { reader.Lookup("s"); }, {data_file, "'s'", "string lengths"});
  testing::ExpectError<DataLossError>([&] { reader.VerifyAll(); }, {data_file, "'s'"});
}

}  // namespace
}  // namespace flowtrain::io
