// Damaged checkpoints: every kind of damage is a clear error naming the file (and the tensor),
// never a crash or wrong values.
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/internal/crc32c.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

using ::testing::HasSubstr;

// Copies a fixture bundle into a fresh directory (tests may damage the copy, never the fixture).
std::string CopyBundle(const std::string& fixture, const std::string& name = "model.ckpt-2000") {
  const std::string src = testing::FixturePath(fixture);
  const std::string dst = testing::MakeTempDir("damaged") + "/" + name;
  WriteFileAtomically(MetaFilename(dst), ReadFileToString(MetaFilename(src)));
  WriteFileAtomically(DataFilename(dst, 0, 1), ReadFileToString(DataFilename(src, 0, 1)));
  return dst;
}

void FlipBit(const std::string& path, size_t offset) {
  std::string bytes = ReadFileToString(path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x10);
  WriteFileAtomically(path, bytes);
}

void Truncate(const std::string& path, size_t size) { std::filesystem::resize_file(path, size); }

// Runs `fn`, expecting a DataLossError whose message contains every one of `parts`.
template <typename Fn>
void ExpectDataLoss(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const DataLossError& e) {
    for (const std::string& part : parts) EXPECT_THAT(e.what(), HasSubstr(part));
  }
}

constexpr char kEstimator[] = "tf1_estimator_model_dir/model.ckpt-2000";

TEST(TensorBundleDamage, BitFlipInEachTensorIsDetected) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::vector<std::string> keys = BundleReader(testing::FixturePath(kEstimator)).ListKeys();
  for (const std::string& key : keys) {
    SCOPED_TRACE(key);
    const std::string prefix = CopyBundle(kEstimator);
    const std::string data = DataFilename(prefix, 0, 1);
    {
      BundleReader pristine(prefix);
      const auto& entry = pristine.GetBundleEntryProto(key);
      FlipBit(data, entry.offset() + entry.size() / 2);
    }
    BundleReader reader(prefix);
    ExpectDataLoss([&] { reader.Lookup(key); }, {"'" + key + "'", data, "Checksum"});
    ExpectDataLoss([&] { reader.VerifyAll(); }, {"'" + key + "'", data});
    // Undamaged tensors still read.
    for (const std::string& other : keys) {
      if (other != key) {
        EXPECT_NO_THROW(reader.Lookup(other)) << other;
      }
    }
  }
}

TEST(TensorBundleDamage, TruncatedDataFileIsDetected) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::string prefix = CopyBundle(kEstimator);
  const std::string data = DataFilename(prefix, 0, 1);
  Truncate(data, 100);  // cuts dense/kernel/Adam (bytes 88..120) in the middle
  BundleReader reader(prefix);
  EXPECT_EQ(reader.Lookup("dense/kernel").NumElements(), 8);  // bytes 56..88 survive
  ExpectDataLoss([&] { reader.Lookup("dense/kernel/Adam"); }, {"'dense/kernel/Adam'", data, "truncated"});
  ExpectDataLoss([&] { reader.Lookup("global_step"); }, {"'global_step'", data, "truncated"});
  ExpectDataLoss([&] { reader.VerifyAll(); }, {data, "truncated"});
  Truncate(data, 0);
  ExpectDataLoss([&] { BundleReader(prefix).Lookup("beta1_power"); }, {"'beta1_power'"});
}

TEST(TensorBundleDamage, DamagedStringTensorIsDetected) {
  FLOWTRAIN_REQUIRE_FIXTURES("keras_tf_text_regression");
  const char* fixture = "keras_tf_text_regression/variables/variables";
  for (size_t offset : {0u, 1u, 2u, 4u, 100u, 926u}) {  // lengths, length checksum, payload
    SCOPED_TRACE(offset);
    const std::string prefix = CopyBundle(fixture, "variables");
    const std::string data = DataFilename(prefix, 0, 1);
    FlipBit(data, offset);
    BundleReader reader(prefix);
    ExpectDataLoss([&] { reader.Lookup("_CHECKPOINTABLE_OBJECT_GRAPH"); },
                   {"'_CHECKPOINTABLE_OBJECT_GRAPH'", data});
    ExpectDataLoss([&] { reader.VerifyAll(); }, {"'_CHECKPOINTABLE_OBJECT_GRAPH'"});
  }
  const std::string prefix = CopyBundle(fixture, "variables");
  Truncate(DataFilename(prefix, 0, 1), 500);
  ExpectDataLoss([&] { BundleReader(prefix).Lookup("_CHECKPOINTABLE_OBJECT_GRAPH"); },
                 {"truncated", "'_CHECKPOINTABLE_OBJECT_GRAPH'"});
}

TEST(TensorBundleDamage, MissingKeyIsNotFoundNamingKeyAndPrefix) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::string prefix = testing::FixturePath(kEstimator);
  BundleReader reader(prefix);
  EXPECT_FALSE(reader.Contains("dense/kernel/Momentum"));
  EXPECT_FALSE(reader.Contains(""));  // the header is not a tensor
  try {
    reader.Lookup("dense/kernel/Momentum");
    FAIL();
  } catch (const NotFoundError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'dense/kernel/Momentum'"));
    EXPECT_THAT(e.what(), HasSubstr(prefix));
  }
  EXPECT_THROW(reader.LookupDtypeAndShape(""), NotFoundError);
}

TEST(TensorBundleDamage, MissingFilesAreNotFound) {
  const std::string dir = testing::MakeTempDir("damaged");
  try {
    BundleReader reader(dir + "/nothing");
    FAIL();
  } catch (const NotFoundError& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir + "/nothing.index"));
  }
}

TEST(TensorBundleDamage, MissingDataFileIsNotFoundWhenATensorIsRead) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::string prefix = CopyBundle(kEstimator);
  DeleteFileIfExists(DataFilename(prefix, 0, 1));
  BundleReader reader(prefix);  // the index alone opens: names and shapes are there
  EXPECT_EQ(reader.LookupDtypeAndShape("dense/kernel").shape, TensorShape({2, 4}));
  try {
    reader.Lookup("dense/kernel");
    FAIL();
  } catch (const NotFoundError& e) {
    EXPECT_THAT(e.what(), HasSubstr(DataFilename(prefix, 0, 1)));
  }
}

TEST(TensorBundleDamage, TruncatedOrGarbageIndexIsDataLoss) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::string index_bytes = ReadFileToString(MetaFilename(testing::FixturePath(kEstimator)));
  // Every possible truncation, from empty to one byte short.
  for (size_t size = 0; size < index_bytes.size(); size += (size < 60 ? 1 : 37)) {
    SCOPED_TRACE(size);
    const std::string prefix = CopyBundle(kEstimator);
    WriteFileAtomically(MetaFilename(prefix), index_bytes.substr(0, size));
    ExpectDataLoss([&] { BundleReader reader(prefix); }, {MetaFilename(prefix)});
  }
  const std::string prefix = CopyBundle(kEstimator);
  WriteFileAtomically(MetaFilename(prefix), std::string(4096, 'g'));
  ExpectDataLoss([&] { BundleReader reader(prefix); }, {MetaFilename(prefix)});
}

TEST(TensorBundleDamage, BitFlipsInTheIndexAreDetected) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::string index_bytes = ReadFileToString(MetaFilename(testing::FixturePath(kEstimator)));
  // Every byte of the data block, metaindex, index block and footer.
  for (size_t offset = 0; offset < index_bytes.size(); ++offset) {
    SCOPED_TRACE(offset);
    const std::string prefix = CopyBundle(kEstimator);
    FlipBit(MetaFilename(prefix), offset);
    try {
      BundleReader reader(prefix);
      // A flip the table format cannot see (e.g. in the footer's padding) must not change
      // any value.
      BundleReader original(testing::FixturePath(kEstimator));
      for (const std::string& key : original.ListKeys()) {
        EXPECT_EQ(reader.Lookup(key).DebugString(100), original.Lookup(key).DebugString(100));
      }
    } catch (const DataLossError& e) {
      EXPECT_THAT(e.what(), HasSubstr(MetaFilename(prefix)));
    }
  }
}

TEST(TensorBundleDamage, WrongSizeInEntryIsDataLoss) {
  // An index whose entry claims more bytes than the shape needs.
  const std::string dir = testing::MakeTempDir("damaged");
  const std::string prefix = dir + "/ckpt";
  {
    BundleWriter writer(prefix);
    writer.Add("w", Tensor::FromVector<float>({1, 2}));
    writer.Finish();
  }
  bundle_internal::IndexContents contents = bundle_internal::ReadIndexTable(MetaFilename(prefix));
  contents.entries["w"].set_size(4);
  WriteFileAtomically(MetaFilename(prefix),
                      bundle_internal::BuildIndexTable(contents.header, contents.entries));
  ExpectDataLoss([&] { BundleReader(prefix).Lookup("w"); }, {"'w'", "size"});
  contents.entries["w"].mutable_shape()->mutable_dim(0)->set_size(-3);
  WriteFileAtomically(MetaFilename(prefix),
                      bundle_internal::BuildIndexTable(contents.header, contents.entries));
  ExpectDataLoss([&] { BundleReader reader(prefix); }, {"'w'", "shape"});
}

TEST(TensorBundleDamage, NewerFormatVersionIsRejected) {
  const std::string prefix = testing::MakeTempDir("damaged") + "/ckpt";
  {
    BundleWriter writer(prefix);
    writer.Add("w", Tensor::Scalar<float>(1));
    writer.Finish();
  }
  bundle_internal::IndexContents contents = bundle_internal::ReadIndexTable(MetaFilename(prefix));
  contents.header.mutable_version()->set_min_consumer(kTensorBundleVersion + 1);
  WriteFileAtomically(MetaFilename(prefix),
                      bundle_internal::BuildIndexTable(contents.header, contents.entries));
  EXPECT_THROW(BundleReader reader(prefix), InvalidArgumentError);
}

TEST(TensorBundleDamage, BigEndianBundleIsByteSwapped) {
  // Writes by hand what a big-endian host writes: element bytes reversed, checksummed as stored.
  const std::string prefix = testing::MakeTempDir("damaged") + "/ckpt";
  const std::string data("\x3f\xc0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x07", 12);  // 1.5f, 7
  WriteFileAtomically(DataFilename(prefix, 0, 1), data);
  tensorflow::BundleHeaderProto header = MakeBundleHeader(1);
  header.set_endianness(tensorflow::BundleHeaderProto::BIG);
  BundleEntryMap entries;
  auto& f = entries["f"];
  f.set_dtype(tensorflow::DT_FLOAT);
  f.mutable_shape();
  f.set_size(4);
  f.set_crc32c(crc32c::Mask(crc32c::Value(data.data(), 4)));
  auto& i = entries["i"];
  i.set_dtype(tensorflow::DT_INT64);
  i.mutable_shape();
  i.set_offset(4);
  i.set_size(8);
  i.set_crc32c(crc32c::Mask(crc32c::Value(data.data() + 4, 8)));
  WriteFileAtomically(MetaFilename(prefix), bundle_internal::BuildIndexTable(header, entries));
  BundleReader reader(prefix);
  EXPECT_EQ(reader.Lookup("f").scalar<float>(), 1.5f);
  EXPECT_EQ(reader.Lookup("i").scalar<int64_t>(), 7);
}

}  // namespace
}  // namespace flowtrain::io
