// BundleWriter round trips, temporary-file discipline, alignment, and sharded save + merge.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

using testing::Values;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(BundleWriter, RoundTripsEveryTensorType) {
  const std::string prefix = testing::MakeTempDir("bundle") + "/ckpt";
  BundleWriter writer(prefix);
  writer.Add("f32", Tensor::FromVector<float>({1.5f, -2.0f, 3.25f}, TensorShape({3, 1})));
  writer.Add("f64", Tensor::FromVector<double>({1e300, -0.0}));
  writer.Add("i32", Tensor::FromVector<int32_t>({-7, 8}));
  writer.Add("i64", Tensor::Scalar<int64_t>(1LL << 40));
  writer.Add("u8", Tensor::FromVector<uint8_t>({0, 255}));
  writer.Add("i16", Tensor::FromVector<int16_t>({-300}));
  writer.Add("i8", Tensor::FromVector<int8_t>({-1, 1}));
  writer.Add("u16", Tensor::FromVector<uint16_t>({65535}));
  writer.Add("u32", Tensor::FromVector<uint32_t>({4000000000u}));
  writer.Add("u64", Tensor::FromVector<uint64_t>({~0ull}));
  writer.Add("bool", Tensor::FromVector<bool>({true, false, true}));
  writer.Add("half", Tensor::FromVector<half>({half(0.5f), half(-2.0f)}));
  writer.Add("bf16", Tensor::FromVector<bfloat16>({bfloat16(1.0f)}));
  writer.Add("strings",
             Tensor::FromVector<std::string>({"", "a", std::string(300, 'x'), std::string("\0\xff", 2)}));
  writer.Add("empty", Tensor(DT_FLOAT, TensorShape({0, 4})));
  writer.Add("empty_strings", Tensor(DT_STRING, TensorShape({0})));
  writer.Finish();

  BundleReader reader(prefix);
  EXPECT_THAT(reader.ListKeys(),
              ElementsAre("bf16", "bool", "empty", "empty_strings", "f32", "f64", "half", "i16", "i32", "i64",
                          "i8", "strings", "u16", "u32", "u64", "u8"));
  EXPECT_THAT(Values<float>(reader.Lookup("f32")), ElementsAre(1.5f, -2.0f, 3.25f));
  EXPECT_EQ(reader.Lookup("f32").shape(), TensorShape({3, 1}));
  EXPECT_THAT(Values<double>(reader.Lookup("f64")), ElementsAre(1e300, -0.0));
  EXPECT_THAT(Values<int32_t>(reader.Lookup("i32")), ElementsAre(-7, 8));
  EXPECT_EQ(reader.Lookup("i64").scalar<int64_t>(), 1LL << 40);
  EXPECT_THAT(Values<uint8_t>(reader.Lookup("u8")), ElementsAre(0, 255));
  EXPECT_THAT(Values<int16_t>(reader.Lookup("i16")), ElementsAre(-300));
  EXPECT_THAT(Values<int8_t>(reader.Lookup("i8")), ElementsAre(-1, 1));
  EXPECT_THAT(Values<uint16_t>(reader.Lookup("u16")), ElementsAre(65535));
  EXPECT_THAT(Values<uint32_t>(reader.Lookup("u32")), ElementsAre(4000000000u));
  EXPECT_THAT(Values<uint64_t>(reader.Lookup("u64")), ElementsAre(~0ull));
  EXPECT_THAT(Values<bool>(reader.Lookup("bool")), ElementsAre(true, false, true));
  EXPECT_EQ(static_cast<float>(reader.Lookup("half").flat<half>()[1]), -2.0f);
  EXPECT_EQ(static_cast<float>(reader.Lookup("bf16").flat<bfloat16>()[0]), 1.0f);
  EXPECT_THAT(Values<std::string>(reader.Lookup("strings")),
              ElementsAre("", "a", std::string(300, 'x'), std::string("\0\xff", 2)));
  EXPECT_EQ(reader.Lookup("empty").shape(), TensorShape({0, 4}));
  EXPECT_EQ(reader.Lookup("empty_strings").NumElements(), 0);
  EXPECT_EQ(reader.LookupDtypeAndShape("bool").dtype, DT_BOOL);
  reader.VerifyAll();
}

TEST(BundleWriter, DataIsLaidOutInAddOrderAndIndexIsSorted) {
  const std::string prefix = testing::MakeTempDir("bundle") + "/ckpt";
  BundleWriter writer(prefix);
  writer.Add("zeta", Tensor::Scalar<float>(1));
  writer.Add("alpha", Tensor::FromVector<int64_t>({1, 2}));
  EXPECT_EQ(writer.data_size(), 20u);
  writer.Finish();
  BundleReader reader(prefix);
  EXPECT_THAT(reader.ListKeys(), ElementsAre("alpha", "zeta"));
  EXPECT_EQ(reader.GetBundleEntryProto("zeta").offset(), 0);
  EXPECT_EQ(reader.GetBundleEntryProto("alpha").offset(), 4);
  EXPECT_EQ(FileSize(DataFilename(prefix, 0, 1)), 20u);
}

TEST(BundleWriter, AlignmentPadsBetweenTensors) {
  const std::string prefix = testing::MakeTempDir("bundle") + "/ckpt";
  BundleWriter writer(prefix, {.data_alignment = 64});
  writer.Add("a", Tensor::Scalar<float>(1));
  writer.Add("b", Tensor::Scalar<float>(2));
  writer.Finish();
  BundleReader reader(prefix);
  EXPECT_EQ(reader.GetBundleEntryProto("b").offset(), 64);
  EXPECT_EQ(reader.GetBundleEntryProto("b").size(), 4);
  EXPECT_EQ(reader.Lookup("b").scalar<float>(), 2.0f);
  reader.VerifyAll();
}

TEST(BundleWriter, RejectsBadKeys) {
  const std::string prefix = testing::MakeTempDir("bundle") + "/ckpt";
  BundleWriter writer(prefix);
  EXPECT_THROW(writer.Add("", Tensor::Scalar<float>(1)), InvalidArgumentError);
  writer.Add("x", Tensor::Scalar<float>(1));
  try {
    writer.Add("x", Tensor::Scalar<float>(2));
    FAIL() << "duplicate key accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("duplicate key 'x'"));
  }
  EXPECT_THROW(writer.Add("y", Tensor()), InvalidArgumentError);
  writer.Finish();
  EXPECT_THROW(writer.Add("z", Tensor::Scalar<float>(1)), FailedPreconditionError);
  EXPECT_THROW(writer.Finish(), FailedPreconditionError);
  EXPECT_THAT(BundleReader(prefix).ListKeys(), ElementsAre("x"));
}

TEST(BundleWriter, NothingAppearsUnderTheFinalNamesBeforeFinish) {
  const std::string dir = testing::MakeTempDir("bundle");
  const std::string prefix = dir + "/model.ckpt-7";
  {
    BundleWriter writer(prefix);
    writer.Add("w", Tensor::FromVector<float>(std::vector<float>(1000, 1.0f)));
    EXPECT_FALSE(FileExists(MetaFilename(prefix)));
    EXPECT_FALSE(FileExists(DataFilename(prefix, 0, 1)));
    // The writer is abandoned, as if the process died before Finish().
  }
  EXPECT_THAT(ListDirectory(dir), IsEmpty());  // temporary files are gone too
  BundleWriter writer(prefix);
  writer.Add("w", Tensor::Scalar<float>(3));
  writer.Finish();
  EXPECT_THAT(ListDirectory(dir), ElementsAre("model.ckpt-7.data-00000-of-00001", "model.ckpt-7.index"));
}

TEST(BundleWriter, CreatesTheDirectoryAndOverwritesAnOldBundle) {
  const std::string prefix = testing::MakeTempDir("bundle") + "/sub/dir/ckpt";
  for (float value : {1.0f, 2.0f}) {
    BundleWriter writer(prefix);
    writer.Add("v", Tensor::Scalar<float>(value));
    writer.Finish();
  }
  EXPECT_EQ(BundleReader(prefix).Lookup("v").scalar<float>(), 2.0f);
}

TEST(BundleWriter, LargeTensorsAreStreamedInChunks) {
  // Larger than the staging buffer, with a size that is not a multiple of it.
  const size_t n = (9 << 20) / 4 + 3;
  Tensor big(DT_FLOAT, TensorShape({static_cast<int64_t>(n)}));
  auto v = big.flat<float>();
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000) * 0.5f;
  const std::string prefix = testing::MakeTempDir("bundle") + "/ckpt";
  BundleWriter writer(prefix);
  writer.Add("big", big);
  writer.Add("after", Tensor::Scalar<int64_t>(5));
  writer.Finish();
  BundleReader reader(prefix);
  reader.VerifyAll();
  Tensor back(DT_FLOAT, TensorShape({static_cast<int64_t>(n)}));
  reader.LookupInto("big", &back);
  EXPECT_EQ(std::memcmp(back.raw_data(), big.raw_data(), n * 4), 0);
  EXPECT_EQ(reader.Lookup("after").scalar<int64_t>(), 5);
  Tensor wrong(DT_FLOAT, TensorShape({2}));
  EXPECT_THROW(reader.LookupInto("big", &wrong), InvalidArgumentError);
}

TEST(MergeBundles, ShardedSaveMergesIntoOneCheckpoint) {
  const std::string dir = testing::MakeTempDir("bundle");
  const std::string temp_dir = dir + "/model.ckpt-5_temp_0123abcd";
  const std::string part0 = temp_dir + "/part-00000-of-00002";
  const std::string part1 = temp_dir + "/part-00001-of-00002";
  {
    BundleWriter writer(part0);
    writer.Add("ps0/w", Tensor::FromVector<float>({1, 2, 3}));
    writer.Add("global_step", Tensor::Scalar<int64_t>(5));
    writer.Finish();
  }
  {
    BundleWriter writer(part1);
    writer.Add("ps1/b", Tensor::FromVector<float>({4, 5}));
    writer.Add("names", Tensor::FromVector<std::string>({"x", "yz"}));
    writer.Finish();
  }
  const std::string merged = dir + "/model.ckpt-5";
  MergeBundles({part0, part1}, merged, {.delete_old_dirs = true});

  EXPECT_THAT(ListDirectory(dir), ElementsAre("model.ckpt-5.data-00000-of-00002",
                                              "model.ckpt-5.data-00001-of-00002", "model.ckpt-5.index"));
  BundleReader reader(merged);
  EXPECT_EQ(reader.num_shards(), 2);
  EXPECT_THAT(reader.ListKeys(), ElementsAre("global_step", "names", "ps0/w", "ps1/b"));
  EXPECT_EQ(reader.GetBundleEntryProto("ps0/w").shard_id(), 0);
  EXPECT_EQ(reader.GetBundleEntryProto("ps1/b").shard_id(), 1);
  EXPECT_THAT(Values<float>(reader.Lookup("ps0/w")), ElementsAre(1, 2, 3));
  EXPECT_THAT(Values<float>(reader.Lookup("ps1/b")), ElementsAre(4, 5));
  EXPECT_THAT(Values<std::string>(reader.Lookup("names")), ElementsAre("x", "yz"));
  EXPECT_EQ(reader.Lookup("global_step").scalar<int64_t>(), 5);
  reader.VerifyAll();
}

TEST(MergeBundles, OneShardIsIdenticalToAPlainSave) {
  const std::string dir = testing::MakeTempDir("bundle");
  const std::string part = dir + "/tmp/part-00000-of-00001";
  const std::string plain = dir + "/plain";
  for (const std::string& prefix : {part, plain}) {
    BundleWriter writer(prefix);
    writer.Add("w", Tensor::FromVector<float>({1, 2}));
    writer.Finish();
  }
  MergeBundles({part}, dir + "/merged", {.delete_old_dirs = true});
  EXPECT_EQ(ReadFileToString(MetaFilename(dir + "/merged")), ReadFileToString(MetaFilename(plain)));
  EXPECT_FALSE(FileExists(dir + "/tmp"));
}

TEST(MergeBundles, MergedPrefixMayBeOneOfTheInputs) {
  const std::string dir = testing::MakeTempDir("bundle");
  const std::string a = dir + "/a";
  const std::string b = dir + "/b";
  for (const std::string& prefix : {a, b}) {
    BundleWriter writer(prefix);
    writer.Add(prefix == a ? "from_a" : "from_b", Tensor::Scalar<float>(prefix == a ? 1 : 2));
    writer.Finish();
  }
  MergeBundles({a, b}, a);
  BundleReader reader(a);
  EXPECT_EQ(reader.num_shards(), 2);
  EXPECT_EQ(reader.Lookup("from_a").scalar<float>(), 1.0f);
  EXPECT_EQ(reader.Lookup("from_b").scalar<float>(), 2.0f);
  EXPECT_FALSE(FileExists(MetaFilename(b)));
}

TEST(MergeBundles, DuplicateKeysAreRejected) {
  const std::string dir = testing::MakeTempDir("bundle");
  for (const char* name : {"/p0", "/p1"}) {
    BundleWriter writer(dir + name);
    writer.Add("same", Tensor::Scalar<float>(1));
    writer.Finish();
  }
  try {
    MergeBundles({dir + "/p0", dir + "/p1"}, dir + "/merged");
    FAIL() << "duplicate accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Duplicate tensor keyed by 'same'"));
  }
  EXPECT_FALSE(FileExists(MetaFilename(dir + "/merged")));
  EXPECT_THROW(MergeBundles({dir + "/missing"}, dir + "/merged"), NotFoundError);
}

}  // namespace
}  // namespace flowtrain::io
