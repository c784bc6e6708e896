#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/compression.h"
#include "flowtrain/io/internal/record_format.h"
#include "flowtrain/io/record_reader.h"
#include "flowtrain/io/record_writer.h"
#include "flowtrain/proto/example.pb.h"
#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

using ::flowtrain::testing::FixturePath;
using ::flowtrain::testing::MakeTempDir;

std::vector<std::string> ReadAll(const std::string& path, RecordReaderOptions options = {}) {
  RecordReader reader(path, options);
  std::vector<std::string> records;
  std::string record;
  while (reader.ReadRecord(&record)) records.push_back(record);
  return records;
}

void WriteAll(const std::string& path, const std::vector<std::string>& records,
              RecordWriterOptions options = {}) {
  RecordWriter writer(path, options);
  for (const std::string& record : records) writer.WriteRecord(record);
  writer.Close();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void AppendBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> SampleRecords() {
  std::vector<std::string> records = {"", "a", "hello world", std::string(1000, 'x')};
  std::string binary;
  for (int i = 0; i < 70000; ++i) binary.push_back(static_cast<char>((i * 7919) % 256));
  records.push_back(binary);  // larger than a read buffer in the small-buffer test below
  for (int i = 0; i < 100; ++i) records.push_back(StrCat("record ", i));
  return records;
}

// ---- Round trips ----------------------------------------------------------------------------

class RecordRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordRoundTripTest, ReadsBackWhatWasWritten) {
  const std::string path = JoinPath(MakeTempDir(), "data.tfrecord");
  const std::vector<std::string> records = SampleRecords();
  WriteAll(path, records, {.compression_type = GetParam()});
  EXPECT_EQ(ReadAll(path, {.compression_type = GetParam()}), records);
  // A tiny read buffer forces every record to be assembled from many reads.
  EXPECT_EQ(ReadAll(path, {.compression_type = GetParam(), .buffer_bytes = 7}), records);
}

TEST_P(RecordRoundTripTest, EmptyFileHasNoRecords) {
  const std::string path = JoinPath(MakeTempDir(), "empty.tfrecord");
  WriteAll(path, {}, {.compression_type = GetParam()});
  EXPECT_TRUE(ReadAll(path, {.compression_type = GetParam()}).empty());
}

INSTANTIATE_TEST_SUITE_P(Compression, RecordRoundTripTest, ::testing::Values("", "ZLIB", "GZIP"),
                         [](const auto& info) {
                           return info.param.empty() ? std::string("None") : info.param;
                         });

TEST(RecordWriterTest, FramingMatchesTensorFlowBytes) {
  const std::string path = JoinPath(MakeTempDir(), "framing.tfrecord");
  WriteAll(path, {""});
  // docs/tf_behaviour.md §4.1: an empty record is 8 zero bytes, masked CRC 0x07980329, then Mask(0).
  const std::string expected("\0\0\0\0\0\0\0\0\x29\x03\x98\x07\xd8\xea\x82\xa2", 16);
  EXPECT_EQ(ReadFileToString(path), expected);

  // The first header of the TF-written fixture: an 87-byte record.
  WriteAll(path, {std::string(87, 'z')});
  const std::string header = ReadFileToString(path).substr(0, 12);
  EXPECT_EQ(header, std::string("\x57\0\0\0\0\0\0\0\xe6\xba\x94\x8c", 12));
}

TEST(RecordWriterTest, FramingMatchesTheTensorFlowFixture) {
  FLOWTRAIN_REQUIRE_FIXTURES("tfrecord_examples");
  const std::string path = JoinPath(MakeTempDir(), "framing.tfrecord");
  WriteAll(path, {std::string(87, 'z')});
  EXPECT_EQ(ReadFileToString(FixturePath("tfrecord_examples/test.tfrecord")).substr(0, 12),
            ReadFileToString(path).substr(0, 12));
}

TEST(RecordWriterTest, GzipOutputIsARealGzipFile) {
  const std::string path = JoinPath(MakeTempDir(), "data.tfrecord.gz");
  WriteAll(path, {"one", "two"}, {.compression_type = "GZIP"});
  gzFile file = gzopen(path.c_str(), "rb");
  ASSERT_NE(file, nullptr);
  char buffer[256];
  const int n = gzread(file, buffer, sizeof(buffer));
  gzclose(file);
  ASSERT_EQ(n, 2 * (12 + 3 + 4));
  const std::string plain = JoinPath(MakeTempDir(), "plain.tfrecord");
  WriteAll(plain, {"one", "two"});
  EXPECT_EQ(std::string(buffer, n), ReadFileToString(plain));
}

TEST(RecordWriterTest, ZlibOutputDecodesWithUncompress) {
  const std::string path = JoinPath(MakeTempDir(), "data.tfrecord.z");
  WriteAll(path, {"payload"}, {.compression_type = "ZLIB"});
  const std::string compressed = ReadFileToString(path);
  std::string plain(64, '\0');
  uLongf plain_size = plain.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(plain.data()), &plain_size,
                       reinterpret_cast<const Bytef*>(compressed.data()), compressed.size()),
            Z_OK);
  EXPECT_EQ(plain_size, 12u + 7 + 4);
}

TEST(RecordWriterTest, RejectsUnknownCompression) {
  const std::string path = JoinPath(MakeTempDir(), "x.tfrecord");
  EXPECT_THROW(RecordWriter(path, {.compression_type = "SNAPPY"}), InvalidArgumentError);
  WriteAll(path, {"record"});
  EXPECT_THROW(RecordReader(path, {.compression_type = "gzip"}), InvalidArgumentError);
}

TEST(RecordWriterTest, WriteAfterCloseIsFailedPrecondition) {
  RecordWriter writer(JoinPath(MakeTempDir(), "closed.tfrecord"));
  writer.Close();
  writer.Close();  // a second close is harmless
  EXPECT_THROW(writer.WriteRecord("x"), FailedPreconditionError);
}

TEST(RecordWriterTest, FailIfExistsKeepsTheOldFile) {
  const std::string path = JoinPath(MakeTempDir(), "taken.tfrecord");
  WriteAll(path, {"old"});
  EXPECT_THROW(RecordWriter(path, {.fail_if_exists = true}), AlreadyExistsError);
  EXPECT_EQ(ReadAll(path), std::vector<std::string>{"old"});
}

TEST(RecordWriterTest, MissingDirectoryIsNotFoundNamingThePath) {
  const std::string path = JoinPath(MakeTempDir(), "no/such/dir/x.tfrecord");
  try {
    RecordWriter writer(path);
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(RecordWriterTest, FullDiskIsResourceExhausted) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  RecordWriter writer("/dev/full");
  writer.WriteRecord("does not fit");
  EXPECT_THROW(writer.Flush(), ResourceExhaustedError);
}

TEST(RecordReaderTest, MissingFileIsNotFound) {
  EXPECT_THROW(RecordReader(JoinPath(MakeTempDir(), "missing.tfrecord")), NotFoundError);
}

// ---- Corruption -----------------------------------------------------------------------------

struct Corruption {
  const char* name;
  size_t offset_in_record;  // which byte of the second record gets a bit flipped
  const char* what;         // expected words in the message
};

class RecordCorruptionTest : public ::testing::TestWithParam<Corruption> {};

TEST_P(RecordCorruptionTest, BitFlipIsDataLossNamingFileAndOffset) {
  const std::string path = JoinPath(MakeTempDir(), "corrupt.tfrecord");
  WriteAll(path, {"first", "second!", "third"});
  std::string bytes = ReadFileToString(path);
  const size_t second_start = 12 + 5 + 4;  // the first record's framed size
  bytes[second_start + GetParam().offset_in_record] ^= 0x10;
  WriteBytes(path, bytes);

  RecordReader reader(path);
  std::string record;
  ASSERT_TRUE(reader.ReadRecord(&record));
  EXPECT_EQ(record, "first");
  try {
    reader.ReadRecord(&record);
    FAIL() << "expected DataLossError for " << GetParam().name;
  } catch (const DataLossError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(StrCat("at offset ", second_start)), std::string::npos) << message;
    EXPECT_NE(message.find(GetParam().what), std::string::npos) << message;
  }
  // Follow mode is no excuse for corruption: complete but wrong bytes are still DataLoss.
  RecordReader follower(path, {.follow = true});
  ASSERT_TRUE(follower.ReadRecord(&record));
  EXPECT_THROW(follower.ReadRecord(&record), DataLossError);
}

INSTANTIATE_TEST_SUITE_P(Fields, RecordCorruptionTest,
                         ::testing::Values(Corruption{"Length", 0, "length checksum"},
                                           Corruption{"LengthHighByte", 7, "length checksum"},
                                           Corruption{"LengthCrc", 9, "length checksum"},
                                           Corruption{"Payload", 12 + 3, "payload checksum"},
                                           Corruption{"PayloadCrc", 12 + 7 + 2, "payload checksum"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RecordReaderTest, CorruptCompressedStreamIsDataLoss) {
  const std::string path = JoinPath(MakeTempDir(), "corrupt.tfrecord.gz");
  std::vector<std::string> records;
  for (int i = 0; i < 200; ++i) records.push_back(StrCat("record number ", i, " of many"));
  WriteAll(path, records, {.compression_type = "GZIP"});
  std::string bytes = ReadFileToString(path);
  for (size_t i = bytes.size() / 3; i < bytes.size() / 3 + 16; ++i) bytes[i] ^= 0x5a;
  WriteBytes(path, bytes);
  try {
    ReadAll(path, {.compression_type = "GZIP"});
    FAIL() << "expected DataLossError";
  } catch (const DataLossError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// A record header claiming 2^40 bytes, then 16 MB of zeros: 16 KB of gzip. The reader decoded
// and buffered all 16 MB before finding that the stream ends first (2.1 GB from a 1 MB file).
TEST(RecordReaderTest, CompressedRecordLongerThanTheFileCanHoldIsDataLoss) {
  const std::string path = JoinPath(MakeTempDir(), "bomb.tfrecord.gz");
  StreamCompressor compressor(CompressionType::kGzip);
  std::string bytes;
  char header[kRecordHeaderSize];
  EncodeRecordHeader(uint64_t{1} << 40, header);
  compressor.Compress(std::string_view(header, sizeof(header)), &bytes);
  const std::string zeros(1 << 20, '\0');
  for (int i = 0; i < 16; ++i) compressor.Compress(zeros, &bytes);
  compressor.Finish(&bytes);
  WriteBytes(path, bytes);
  ASSERT_LT(bytes.size(), 100u * 1024);
  testing::ExpectError<DataLossError>([&] { ReadAll(path, {.compression_type = "GZIP"}); },
                                      {path, "at offset 0", "claims 1099511627776 bytes"});
  RecordReader follower(path, {.compression_type = "GZIP", .follow = true});
  std::string record;
  EXPECT_FALSE(follower.ReadRecord(&record));
  EXPECT_LT(follower.partial_bytes(), 1u << 20);
}

// TF reads a gzip file whose CRC-32 and length trailer is cut off as if it were whole.
TEST(RecordReaderTest, CutOrCorruptCompressedTrailerIsDataLoss) {
  const std::string dir = MakeTempDir();
  for (const std::string compression : {"GZIP", "ZLIB"}) {
    SCOPED_TRACE(compression);
    const std::string path = JoinPath(dir, "whole.tfrecord");
    WriteAll(path, {"one", "two"}, {.compression_type = compression});
    const std::string whole = ReadFileToString(path);
    const size_t trailer = compression == "GZIP" ? 8 : 4;
    const std::string cut_path = JoinPath(dir, "cut.tfrecord");
    for (size_t cut = 1; cut <= trailer + 2; ++cut) {
      SCOPED_TRACE(cut);
      WriteBytes(cut_path, whole.substr(0, whole.size() - cut));
      testing::ExpectError<DataLossError>([&] { ReadAll(cut_path, {.compression_type = compression}); },
                                          {cut_path});
    }
    for (size_t back = 1; back <= trailer; ++back) {
      SCOPED_TRACE(back);
      std::string damaged = whole;
      damaged[damaged.size() - back] ^= 0x01;
      WriteBytes(cut_path, damaged);
      testing::ExpectError<DataLossError>([&] { ReadAll(cut_path, {.compression_type = compression}); },
                                          {cut_path});
    }
    EXPECT_EQ(ReadAll(path, {.compression_type = compression}), std::vector<std::string>({"one", "two"}));
  }
}

// ---- Truncation and follow mode -------------------------------------------------------------

class RecordTruncationTest : public ::testing::TestWithParam<std::string> {};

// Cuts a small file at every byte. A cut at a record boundary reads as a shorter file; any other
// cut is DataLoss at the offset of the cut record, or, in follow mode, "no more data yet" until
// the rest is appended.
TEST_P(RecordTruncationTest, EveryCutIsCleanEofOrDataLoss) {
  const std::string compression = GetParam();
  const std::string dir = MakeTempDir();
  const std::vector<std::string> records = {"alpha", "", "the third record"};
  const std::string full_path = JoinPath(dir, "full.tfrecord");
  WriteAll(full_path, records);
  const std::string full = ReadFileToString(full_path);
  std::vector<size_t> boundaries = {0};
  for (const std::string& record : records) {
    boundaries.push_back(boundaries.back() + 12 + record.size() + 4);
  }
  ASSERT_EQ(boundaries.back(), full.size());

  const std::string cut_path = JoinPath(dir, "cut.tfrecord");
  for (size_t cut = 0; cut < full.size(); ++cut) {
    SCOPED_TRACE(StrCat("cut at ", cut));
    size_t complete = 0;
    while (boundaries[complete + 1] <= cut) ++complete;
    const bool at_boundary = boundaries[complete] == cut;
    const std::vector<std::string> expected(records.begin(), records.begin() + complete);

    if (compression.empty()) {
      WriteBytes(cut_path, full.substr(0, cut));
      RecordReader reader(cut_path);
      std::string record;
      for (size_t i = 0; i < complete; ++i) {
        ASSERT_TRUE(reader.ReadRecord(&record));
        EXPECT_EQ(record, records[i]);
      }
      if (at_boundary) {
        EXPECT_FALSE(reader.ReadRecord(&record));
      } else {
        try {
          reader.ReadRecord(&record);
          ADD_FAILURE() << "expected DataLossError";
        } catch (const DataLossError& e) {
          const std::string message = e.what();
          EXPECT_NE(message.find(cut_path), std::string::npos) << message;
          EXPECT_NE(message.find(StrCat("at offset ", boundaries[complete])), std::string::npos) << message;
        }
      }
      // Follow mode: the same prefix is a file still being written.
      RecordReader follower(cut_path, {.follow = true});
      for (size_t i = 0; i < complete; ++i) ASSERT_TRUE(follower.ReadRecord(&record));
      EXPECT_FALSE(follower.ReadRecord(&record));
      EXPECT_FALSE(follower.ReadRecord(&record));  // asking again changes nothing
      EXPECT_EQ(follower.offset(), boundaries[complete]);
      EXPECT_EQ(follower.partial_bytes(), cut - boundaries[complete]);  // 0 at a boundary
      AppendBytes(cut_path, full.substr(cut));
      for (size_t i = complete; i < records.size(); ++i) {
        ASSERT_TRUE(follower.ReadRecord(&record));
        EXPECT_EQ(record, records[i]);
      }
      EXPECT_FALSE(follower.ReadRecord(&record));
      EXPECT_EQ(follower.partial_bytes(), 0u);
    } else {
      // Compressed: a sync-flushed stream of the first `cut` plain bytes (a writer that was
      // interrupted mid-record), later completed with the rest.
      StreamCompressor compressor(ParseCompressionType(compression));
      std::string head;
      compressor.Compress(full.substr(0, cut), &head);
      compressor.Flush(&head);
      WriteBytes(cut_path, head);
      RecordReader follower(cut_path, {.compression_type = compression, .follow = true});
      std::string record;
      for (size_t i = 0; i < complete; ++i) ASSERT_TRUE(follower.ReadRecord(&record));
      EXPECT_FALSE(follower.ReadRecord(&record));
      std::string tail;
      compressor.Compress(full.substr(cut), &tail);
      compressor.Finish(&tail);
      AppendBytes(cut_path, tail);
      for (size_t i = complete; i < records.size(); ++i) {
        ASSERT_TRUE(follower.ReadRecord(&record));
        EXPECT_EQ(record, records[i]);
      }
      EXPECT_FALSE(follower.ReadRecord(&record));
      if (!at_boundary) {
        WriteBytes(cut_path, head);
        EXPECT_THROW(ReadAll(cut_path, {.compression_type = compression}), DataLossError);
      } else {
        EXPECT_EQ(ReadAll(cut_path, {.compression_type = compression}).size(), records.size());
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Compression, RecordTruncationTest, ::testing::Values("", "GZIP"),
                         [](const auto& info) {
                           return info.param.empty() ? std::string("None") : info.param;
                         });

TEST(RecordReaderTest, FollowsAFileAsTheWriterFlushes) {
  for (const std::string compression : {"", "ZLIB", "GZIP"}) {
    SCOPED_TRACE(compression);
    const std::string path = JoinPath(MakeTempDir(), "live.tfrecord");
    RecordWriter writer(path, {.compression_type = compression});
    RecordReader reader(path, {.compression_type = compression, .follow = true});
    std::string record;
    EXPECT_FALSE(reader.ReadRecord(&record));
    for (int round = 0; round < 5; ++round) {
      writer.WriteRecord(StrCat("event ", round));
      EXPECT_FALSE(reader.ReadRecord(&record)) << "not flushed yet, so not visible";
      writer.Flush();
      ASSERT_TRUE(reader.ReadRecord(&record));
      EXPECT_EQ(record, StrCat("event ", round));
      EXPECT_FALSE(reader.ReadRecord(&record));
    }
    writer.Close();
    EXPECT_FALSE(reader.ReadRecord(&record));
  }
}

// ---- TF-written fixture ---------------------------------------------------------------------

TEST(RecordReaderTest, ReadsTheTensorFlowExamplesFixture) {
  FLOWTRAIN_REQUIRE_FIXTURES("tfrecord_examples");
  const std::string path = FixturePath("tfrecord_examples/test.tfrecord");
  const std::vector<std::string> records = ReadAll(path);
  ASSERT_EQ(records.size(), 42u);
  std::map<std::string, int> animals;
  for (const std::string& record : records) {
    tensorflow::Example example;
    ASSERT_TRUE(example.ParseFromString(record));
    const auto& features = example.features().feature();
    ASSERT_EQ(features.size(), 4u);
    EXPECT_EQ(features.at("feature0").int64_list().value_size(), 1);
    EXPECT_EQ(features.at("feature1").int64_list().value_size(), 1);
    EXPECT_EQ(features.at("feature3").float_list().value_size(), 1);
    ASSERT_EQ(features.at("feature2").bytes_list().value_size(), 1);
    ++animals[features.at("feature2").bytes_list().value(0)];
  }
  tensorflow::Example first;
  ASSERT_TRUE(first.ParseFromString(records[0]));
  const auto& features = first.features().feature();
  EXPECT_EQ(features.at("feature0").int64_list().value(0), 0);
  EXPECT_EQ(features.at("feature1").int64_list().value(0), 2);
  EXPECT_EQ(features.at("feature2").bytes_list().value(0), "chicken");
  EXPECT_FLOAT_EQ(features.at("feature3").float_list().value(0), -1.1237507f);
  EXPECT_EQ(animals["chicken"], 10);
  EXPECT_EQ(animals["horse"], 8);
  EXPECT_EQ(animals["goat"], 7);
  EXPECT_EQ(ReadAll(path, {.follow = true}).size(), 42u);
}

}  // namespace
}  // namespace flowtrain::io
