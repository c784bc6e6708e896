// Compatibility with checkpoints written by real TensorFlow (the fixtures, docs/tf_behaviour.md §4.5):
// every fixture reads with the right names, dtypes, shapes and values, and re-writing a TF
// checkpoint's tensors reproduces TF's files byte for byte.
#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/internal/crc32c.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;

std::string Fixture(const std::string& relative) { return testing::FixturePath(relative); }

std::vector<float> Floats(const Tensor& t) {
  auto v = t.flat<float>();
  return std::vector<float>(v.begin(), v.end());
}

TEST(TensorBundleNaming, MatchesTensorFlow) {
  EXPECT_EQ(MetaFilename("a/model.ckpt-10"), "a/model.ckpt-10.index");
  EXPECT_EQ(DataFilename("a/model.ckpt-10", 0, 1), "a/model.ckpt-10.data-00000-of-00001");
  EXPECT_EQ(DataFilename("p", 3, 12), "p.data-00003-of-00012");
}

TEST(TensorBundleNaming, HeaderSerializesAsTensorFlowWritesIt) {
  // Every fixture's header entry is these six bytes.
  EXPECT_EQ(MakeBundleHeader(1).SerializeAsString(), std::string("\x08\x01\x1a\x02\x08\x01", 6));
}

TEST(TensorBundleFixtures, EstimatorCheckpointHasTheExpectedVariables) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  BundleReader reader(Fixture("tf1_estimator_model_dir/model.ckpt-2000"));
  EXPECT_EQ(reader.num_shards(), 1);
  EXPECT_THAT(reader.ListKeys(),
              ElementsAre("beta1_power", "beta2_power", "dense/bias", "dense/bias/Adam", "dense/bias/Adam_1",
                          "dense/kernel", "dense/kernel/Adam", "dense/kernel/Adam_1", "dense_1/bias",
                          "dense_1/bias/Adam", "dense_1/bias/Adam_1", "dense_1/kernel", "dense_1/kernel/Adam",
                          "dense_1/kernel/Adam_1", "global_step"));
  auto kernel = reader.LookupDtypeAndShape("dense/kernel");
  EXPECT_EQ(kernel.dtype, DT_FLOAT);
  EXPECT_EQ(kernel.shape, TensorShape({2, 4}));
  EXPECT_EQ(reader.LookupDtypeAndShape("dense_1/kernel").shape, TensorShape({4, 1}));
  EXPECT_EQ(reader.LookupDtypeAndShape("dense/bias").shape, TensorShape({4}));
  EXPECT_EQ(reader.LookupDtypeAndShape("beta1_power").shape, TensorShape({}));
  EXPECT_EQ(reader.LookupDtypeAndShape("global_step").dtype, DT_INT64);

  // Data is packed densely in key order: dense/kernel at 56, global_step last.
  const auto& entry = reader.GetBundleEntryProto("dense/kernel");
  EXPECT_EQ(entry.offset(), 56);
  EXPECT_EQ(entry.size(), 32);
  EXPECT_EQ(entry.crc32c(), 0x54a0ecabu);  // the entry docs/tf_behaviour.md §4.4 decodes
  EXPECT_EQ(reader.GetBundleEntryProto("global_step").offset(), 212);

  EXPECT_EQ(reader.Lookup("global_step").scalar<int64_t>(), 2000);
  EXPECT_THAT(Floats(reader.Lookup("dense/bias")), ElementsAre(FloatEq(-7.3163056f), FloatEq(3.8426712f),
                                                               FloatEq(17.333664f), FloatEq(4.293669f)));
  EXPECT_THAT(
      Floats(reader.Lookup("dense_1/kernel")),
      ElementsAre(FloatEq(0.4876374f), FloatEq(-0.82099587f), FloatEq(-0.7761993f), FloatEq(0.7485965f)));
  EXPECT_FLOAT_EQ(reader.Lookup("beta2_power").scalar<float>(), 0.13506827f);
  EXPECT_FLOAT_EQ(reader.Lookup("dense_1/bias").scalar<float>(), 16.962736f);
  reader.VerifyAll();
}

TEST(TensorBundleFixtures, EstimatorCheckpointZeroMatchesTheDocumentedEntry) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  BundleReader reader(Fixture("tf1_estimator_model_dir/model.ckpt-0"));
  // int64 0 -> eight zero bytes -> masked crc 0x07980329.
  EXPECT_EQ(reader.GetBundleEntryProto("global_step").crc32c(), 0x07980329u);
  EXPECT_EQ(reader.Lookup("global_step").scalar<int64_t>(), 0);
  EXPECT_FLOAT_EQ(reader.Lookup("beta1_power").scalar<float>(), 0.9f);
  EXPECT_FLOAT_EQ(reader.Lookup("beta2_power").scalar<float>(), 0.999f);
  EXPECT_THAT(
      Floats(reader.Lookup("dense/kernel")),
      ElementsAre(FloatEq(0.3477564f), FloatEq(-0.8419459f), FloatEq(0.6130245f), FloatEq(0.63513374f),
                  FloatEq(0.92945695f), FloatEq(0.051344395f), FloatEq(0.8146007f), FloatEq(-0.23437595f)));
  EXPECT_THAT(Floats(reader.Lookup("dense/bias/Adam")), ElementsAre(0, 0, 0, 0));
}

TEST(TensorBundleFixtures, EveryEstimatorCheckpointVerifies) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  for (const char* step : {"0", "1000", "2000"}) {
    BundleReader reader(Fixture(std::string("tf1_estimator_model_dir/model.ckpt-") + step));
    EXPECT_EQ(reader.ListKeys().size(), 15u) << step;
    reader.VerifyAll();
  }
  BundleReader reader(Fixture("tf1_estimator_model_dir/model.ckpt-1000"));
  EXPECT_EQ(reader.Lookup("global_step").scalar<int64_t>(), 1000);
}

TEST(TensorBundleFixtures, HalfPlusTwoWithSnappyIndex) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_half_plus_two_cpu");
  BundleReader reader(Fixture("tf1_half_plus_two_cpu/variables/variables"));
  EXPECT_THAT(reader.ListKeys(), ElementsAre("a", "a2", "b", "c", "c2"));
  EXPECT_FLOAT_EQ(reader.Lookup("a").scalar<float>(), 0.5f);
  EXPECT_FLOAT_EQ(reader.Lookup("a2").scalar<float>(), 0.5f);
  EXPECT_FLOAT_EQ(reader.Lookup("b").scalar<float>(), 2.0f);
  EXPECT_FLOAT_EQ(reader.Lookup("c").scalar<float>(), 3.0f);
  EXPECT_FLOAT_EQ(reader.Lookup("c2").scalar<float>(), 3.0f);
  EXPECT_EQ(reader.LookupDtypeAndShape("c2").shape, TensorShape({}));
}

TEST(TensorBundleFixtures, Counter) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_counter");
  BundleReader reader(Fixture("tf1_counter/variables/variables"));
  EXPECT_THAT(reader.ListKeys(), ElementsAre("counter"));
  EXPECT_EQ(reader.LookupDtypeAndShape("counter").dtype, DT_FLOAT);
  EXPECT_EQ(reader.Lookup("counter").scalar<float>(), 0.0f);
}

TEST(TensorBundleFixtures, Tf2ObjectBasedCheckpointWithStringTensor) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf2_half_plus_two_cpu");
  BundleReader reader(Fixture("tf2_half_plus_two_cpu/variables/variables"));
  EXPECT_THAT(reader.ListKeys(), ElementsAre("_CHECKPOINTABLE_OBJECT_GRAPH", "a/.ATTRIBUTES/VARIABLE_VALUE",
                                             "b/.ATTRIBUTES/VARIABLE_VALUE", "c/.ATTRIBUTES/VARIABLE_VALUE"));
  EXPECT_FLOAT_EQ(reader.Lookup("a/.ATTRIBUTES/VARIABLE_VALUE").scalar<float>(), 0.5f);
  EXPECT_FLOAT_EQ(reader.Lookup("b/.ATTRIBUTES/VARIABLE_VALUE").scalar<float>(), 2.0f);
  EXPECT_FLOAT_EQ(reader.Lookup("c/.ATTRIBUTES/VARIABLE_VALUE").scalar<float>(), 3.0f);
  const auto& graph_entry = reader.GetBundleEntryProto("_CHECKPOINTABLE_OBJECT_GRAPH");
  EXPECT_EQ(graph_entry.offset(), 12);
  EXPECT_EQ(graph_entry.size(), 619);
  Tensor graph = reader.Lookup("_CHECKPOINTABLE_OBJECT_GRAPH");
  EXPECT_EQ(graph.dtype(), DT_STRING);
  EXPECT_EQ(graph.NumElements(), 1);
  // 2 varint bytes + 4 checksum bytes + 613 payload bytes.
  EXPECT_EQ(graph.scalar<std::string>().size(), 613u);
  EXPECT_NE(graph.scalar<std::string>().find("VARIABLE_VALUE"), std::string::npos);
  reader.VerifyAll();
}

TEST(TensorBundleFixtures, KerasStringOnlyCheckpoint) {
  FLOWTRAIN_REQUIRE_FIXTURES("keras_tf_text_regression");
  BundleReader reader(Fixture("keras_tf_text_regression/variables/variables"));
  EXPECT_THAT(reader.ListKeys(), ElementsAre("_CHECKPOINTABLE_OBJECT_GRAPH"));
  Tensor graph = reader.Lookup("_CHECKPOINTABLE_OBJECT_GRAPH");
  EXPECT_EQ(graph.shape(), TensorShape({}));
  EXPECT_EQ(graph.scalar<std::string>().size(), 921u);
  EXPECT_NE(graph.scalar<std::string>().find("trainable_variables"), std::string::npos);
}

TEST(TensorBundleFixtures, DebugStringListsEveryTensorAsTensorFlowDoes) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  BundleReader reader(Fixture("tf1_estimator_model_dir/model.ckpt-2000"));
  const std::string text = reader.DebugString();
  EXPECT_THAT(text, ::testing::StartsWith("beta1_power (DT_FLOAT) []\nbeta2_power (DT_FLOAT) []\n"
                                          "dense/bias (DT_FLOAT) [4]\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("dense/kernel (DT_FLOAT) [2,4]\n"));
  EXPECT_THAT(text, ::testing::EndsWith("global_step (DT_INT64) []\n"));
}

// Re-writes the tensors of a TF checkpoint in the order of their data offsets (the order TF's
// SaveV2 added them) and returns the new prefix.
std::string Rewrite(const std::string& fixture_prefix) {
  BundleReader reader(fixture_prefix);
  std::vector<std::string> keys = reader.ListKeys();
  std::sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
    return reader.GetBundleEntryProto(a).offset() < reader.GetBundleEntryProto(b).offset();
  });
  const std::string prefix = testing::MakeTempDir("bundle") + "/model.ckpt-2000";
  BundleWriter writer(prefix);
  for (const std::string& key : keys) writer.Add(key, reader.Lookup(key));
  writer.Finish();
  return prefix;
}

TEST(TensorBundleFixtures, RewritingEstimatorCheckpointIsByteIdentical) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::string original = Fixture("tf1_estimator_model_dir/model.ckpt-2000");
  const std::string rewritten = Rewrite(original);
  EXPECT_EQ(ReadFileToString(MetaFilename(rewritten)), ReadFileToString(MetaFilename(original)));
  EXPECT_EQ(ReadFileToString(DataFilename(rewritten, 0, 1)), ReadFileToString(DataFilename(original, 0, 1)));
}

TEST(TensorBundleFixtures, RewritingStringCheckpointsIsByteIdentical) {
  FLOWTRAIN_REQUIRE_FIXTURES("keras_tf_text_regression", "tf1_counter", "tf2_half_plus_two_cpu");
  // Uncompressed index: both files identical.
  for (const char* fixture :
       {"keras_tf_text_regression/variables/variables", "tf1_counter/variables/variables"}) {
    const std::string original = Fixture(fixture);
    const std::string rewritten = Rewrite(original);
    EXPECT_EQ(ReadFileToString(MetaFilename(rewritten)), ReadFileToString(MetaFilename(original))) << fixture;
    EXPECT_EQ(ReadFileToString(DataFilename(rewritten, 0, 1)), ReadFileToString(DataFilename(original, 0, 1)))
        << fixture;
  }
  // TF2 wrote its string tensor last and a snappy index; the data file still matches exactly.
  const std::string original = Fixture("tf2_half_plus_two_cpu/variables/variables");
  const std::string rewritten = Rewrite(original);
  EXPECT_EQ(ReadFileToString(DataFilename(rewritten, 0, 1)), ReadFileToString(DataFilename(original, 0, 1)));
  BundleReader reader(rewritten);
  EXPECT_EQ(reader.GetBundleEntryProto("_CHECKPOINTABLE_OBJECT_GRAPH").crc32c(),
            BundleReader(original).GetBundleEntryProto("_CHECKPOINTABLE_OBJECT_GRAPH").crc32c());
}

}  // namespace
}  // namespace flowtrain::io
