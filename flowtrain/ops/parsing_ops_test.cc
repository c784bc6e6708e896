// ParseExample, ParseSingleExample and DecodeRaw in a session, on the TF-written fixture.
#include "flowtrain/ops/parsing_ops.h"

#include <gtest/gtest.h>

#include "flowtrain/io/record_reader.h"
#include "flowtrain/io/record_writer.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/proto/example.pb.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain::ops {
namespace {

std::vector<std::string> FixtureRecords() {
  io::RecordReader reader(testing::FixturePath("tfrecord_examples/test.tfrecord"));
  std::vector<std::string> records;
  std::string record;
  while (reader.ReadRecord(&record)) records.push_back(record);
  return records;
}

// 42 Examples with the fixture's features (feature0 and feature1 int64, feature2 bytes,
// feature3 float), made here, for the tests of errors that need no TF-written values.
std::vector<std::string> FixtureLikeRecords() {
  std::vector<std::string> records;
  for (int i = 0; i < 42; ++i) {
    tensorflow::Example example;
    auto& features = *example.mutable_features()->mutable_feature();
    features["feature0"].mutable_int64_list()->add_value(i % 2);
    features["feature1"].mutable_int64_list()->add_value(i % 5);
    features["feature2"].mutable_bytes_list()->add_value(i % 3 == 0 ? "chicken" : "goat");
    features["feature3"].mutable_float_list()->add_value(0.25f * static_cast<float>(i) - 3.0f);
    records.push_back(example.SerializeAsString());
  }
  return records;
}

std::map<std::string, FeatureSpec> FixtureFeatures() {
  return {{"feature0", FixedLenFeature{DT_INT64, TensorShape({})}},
          {"feature1", FixedLenFeature{DT_INT64, TensorShape({})}},
          {"feature2", FixedLenFeature{DT_STRING, TensorShape({})}},
          {"feature3", FixedLenFeature{DT_FLOAT, TensorShape({})}},
          {"missing", FixedLenFeature{DT_FLOAT, TensorShape({2}), Tensor::FromVector<float>({7, 8})}},
          {"tags", VarLenFeature{DT_STRING}}};
}

TEST(ParseExample, ParsesTheFixtureBatchThroughADataset) {
  FLOWTRAIN_REQUIRE_FIXTURES("tfrecord_examples");
  ASSERT_EQ(FixtureRecords().size(), 42u);
  Graph g;
  auto as_default = g.AsDefault();
  auto it = data::Dataset::TFRecord({testing::FixturePath("tfrecord_examples/test.tfrecord")})
                .Batch(64)
                .MakeInitializableIterator();
  ParsedExample parsed = ParseExample(it.GetNext()[0], FixtureFeatures());
  EXPECT_EQ(parsed.dense.at("missing").shape().DebugString(), "[?,2]");
  EXPECT_EQ(parsed.dense.at("feature0").op().type(), "ParseExample");
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  std::vector<Tensor> out =
      sess.Run({}, {parsed.dense.at("feature0"), parsed.dense.at("feature1"), parsed.dense.at("feature2"),
                    parsed.dense.at("feature3"), parsed.dense.at("missing"), parsed.sparse.at("tags").indices,
                    parsed.sparse.at("tags").dense_shape});
  ASSERT_EQ(out[0].shape(), TensorShape({42}));
  int64_t sum0 = 0, sum1 = 0;
  for (int64_t v : out[0].flat<int64_t>()) sum0 += v;
  for (int64_t v : out[1].flat<int64_t>()) sum1 += v;
  EXPECT_EQ(sum0, 25);
  EXPECT_EQ(sum1, 82);
  EXPECT_EQ(out[1].flat<int64_t>()[0], 2);
  EXPECT_EQ(out[2].flat<std::string>()[0], "chicken");
  EXPECT_EQ(out[2].flat<std::string>()[1], "goat");
  EXPECT_EQ(out[2].flat<std::string>()[41], "dog");
  EXPECT_FLOAT_EQ(out[3].flat<float>()[0], -1.12375057f);
  EXPECT_FLOAT_EQ(out[3].flat<float>()[41], -1.45109355f);
  EXPECT_EQ(out[4].shape(), TensorShape({42, 2}));
  EXPECT_EQ(out[4].flat<float>()[83], 8.0f);       // default
  EXPECT_EQ(out[5].shape(), TensorShape({0, 2}));  // no example has tags
  EXPECT_EQ(out[6].flat<int64_t>()[0], 42);
}

// Parsing inside the pipeline (batched ParseExample in a parallel Map) gives what the
// ParseExample op in the step's graph gives.
TEST(ParseExample, MapParseExampleInThePipelineMatchesTheOp) {
  FLOWTRAIN_REQUIRE_FIXTURES("tfrecord_examples");
  const std::string path = testing::FixturePath("tfrecord_examples/test.tfrecord");
  Graph g;
  auto as_default = g.AsDefault();
  auto op_it = data::Dataset::TFRecord({path}).Batch(10).MakeInitializableIterator();
  ParsedExample parsed = ParseExample(op_it.GetNext()[0], FixtureFeatures());
  data::Dataset in_pipeline =
      MapParseExample(data::Dataset::TFRecord({path}).Batch(10), FixtureFeatures(), /*num_parallel_calls=*/3)
          .Prefetch(2);
  // tags' indices, values, shape; then feature0..3, missing (keys in order).
  EXPECT_EQ(in_pipeline.output_types(), (std::vector<DataType>{DT_INT64, DT_STRING, DT_INT64, DT_INT64,
                                                               DT_INT64, DT_STRING, DT_FLOAT, DT_FLOAT}));
  EXPECT_EQ(in_pipeline.output_shapes()[7].DebugString(), "[?,2]");
  auto pipe_it = in_pipeline.MakeInitializableIterator();
  std::vector<Output> pipe_next = pipe_it.GetNext();
  std::vector<Output> op_next = {parsed.sparse.at("tags").indices,     parsed.sparse.at("tags").values,
                                 parsed.sparse.at("tags").dense_shape, parsed.dense.at("feature0"),
                                 parsed.dense.at("feature1"),          parsed.dense.at("feature2"),
                                 parsed.dense.at("feature3"),          parsed.dense.at("missing")};
  Session sess(g);
  sess.Run({}, {}, {op_it.initializer(), pipe_it.initializer()});
  int batches = 0;
  for (;; ++batches) {
    std::vector<Tensor> expected, actual;
    try {
      expected = sess.Run({}, op_next);
    } catch (const OutOfRangeError&) {
      EXPECT_THROW(sess.Run({}, pipe_next), OutOfRangeError);
      break;
    }
    actual = sess.Run({}, pipe_next);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      EXPECT_EQ(actual[i].DebugString(1000), expected[i].DebugString(1000))
          << "component " << i << ", batch " << batches;
    }
  }
  EXPECT_EQ(batches, 5);  // 42 records in batches of 10
}

TEST(ParseExample, VarLenFeaturesBecomeSparseTriples) {
  tensorflow::Example a, b;
  auto* fa = a.mutable_features()->mutable_feature();
  (*fa)["ids"].mutable_int64_list()->add_value(5);
  (*fa)["ids"].mutable_int64_list()->add_value(6);
  auto* fb = b.mutable_features()->mutable_feature();
  (*fb)["ids"].mutable_int64_list()->add_value(7);
  (*fb)["ids"].mutable_int64_list()->add_value(8);
  (*fb)["ids"].mutable_int64_list()->add_value(9);
  Graph g;
  auto as_default = g.AsDefault();
  Output serialized = Const(Tensor::FromVector<std::string>({a.SerializeAsString(), b.SerializeAsString()}));
  SparseTensor ids = ParseExample(serialized, {{"ids", VarLenFeature{DT_INT64}}}).sparse.at("ids");
  SparseTensor single =
      ParseSingleExample(Const(b.SerializeAsString()), {{"ids", VarLenFeature{DT_INT64}}}).sparse.at("ids");
  Session sess(g);
  std::vector<Tensor> out =
      sess.Run({}, {ids.indices, ids.values, ids.dense_shape, single.indices, single.dense_shape});
  EXPECT_EQ(out[0].shape(), TensorShape({5, 2}));
  EXPECT_EQ(std::vector<int64_t>(out[0].flat<int64_t>().begin(), out[0].flat<int64_t>().end()),
            (std::vector<int64_t>{0, 0, 0, 1, 1, 0, 1, 1, 1, 2}));
  EXPECT_EQ(out[1].flat<int64_t>()[4], 9);
  EXPECT_EQ(out[2].flat<int64_t>()[0], 2);
  EXPECT_EQ(out[2].flat<int64_t>()[1], 3);
  EXPECT_EQ(out[3].shape(), TensorShape({3, 1}));
  EXPECT_EQ(out[4].flat<int64_t>()[0], 3);
}

TEST(ParseSingleExample, ParsesOneFixtureRecord) {
  FLOWTRAIN_REQUIRE_FIXTURES("tfrecord_examples");
  const std::string record = FixtureRecords()[41];
  Graph g;
  auto as_default = g.AsDefault();
  ParsedExample parsed = ParseSingleExample(Const(record), FixtureFeatures());
  EXPECT_EQ(parsed.dense.at("missing").shape().DebugString(), "[2]");
  Session sess(g);
  std::vector<Tensor> out =
      sess.Run({}, {parsed.dense.at("feature1"), parsed.dense.at("feature2"), parsed.dense.at("missing")});
  EXPECT_EQ(out[0].scalar<int64_t>(), 1);
  EXPECT_EQ(out[1].scalar<std::string>(), "dog");
  EXPECT_EQ(out[2].flat<float>()[0], 7.0f);
}

TEST(ParseExample, BadInputIsAnErrorNamingFeatureAndIndex) {
  const std::vector<std::string> records = FixtureLikeRecords();
  Graph g;
  auto as_default = g.AsDefault();
  Output serialized = Placeholder(DT_STRING, PartialTensorShape({-1}), "serialized");
  Output wrong_type = ParseExample(serialized, {{"feature0", FixedLenFeature{DT_FLOAT, TensorShape({})}}})
                          .dense.at("feature0");
  Output required =
      ParseExample(serialized, {{"absent", FixedLenFeature{DT_FLOAT, TensorShape({})}}}).dense.at("absent");
  Output wrong_size = ParseExample(serialized, {{"feature3", FixedLenFeature{DT_FLOAT, TensorShape({2})}}})
                          .dense.at("feature3");
  Output right = ParseExample(serialized, {{"feature0", FixedLenFeature{DT_INT64, TensorShape({})}}})
                     .dense.at("feature0");
  Session sess(g);
  auto message = [&](Output fetch, const Tensor& batch) -> std::string {
    try {
      sess.Run({{serialized, batch}}, {fetch});
    } catch (const InvalidArgumentError& e) {
      return e.what();
    }
    return "no error";
  };
  const Tensor good = Tensor::FromVector<std::string>({records[0], records[1]});
  EXPECT_NE(
      message(wrong_type, good)
          .find("Feature: feature0.  Data types don't match. Data type: int64 but expected type: float"),
      std::string::npos);
  EXPECT_NE(
      message(required, good).find("Feature: absent (data type: float) is required but could not be found"),
      std::string::npos);
  EXPECT_NE(message(wrong_size, good).find("Key: feature3, Index: 0.  Number of float values != expected"),
            std::string::npos);
  const Tensor garbage = Tensor::FromVector<std::string>({records[0], std::string("\xff\xff\xff", 3)});
  EXPECT_NE(message(right, garbage).find("Could not parse example input"), std::string::npos);
  EXPECT_NE(message(right, garbage).find("(example 1 of 2)"), std::string::npos);
}

// 42 records like the fixture's written to a file, record `bad_index` replaced by `bad_record`.
std::string WriteRecordsWithBadRecord(const std::string& name, int bad_index, const std::string& bad_record) {
  const std::string path = testing::MakeTempDir("bad_example") + "/" + name;
  io::RecordWriter writer(path);
  std::vector<std::string> records = FixtureLikeRecords();
  records[bad_index] = bad_record;
  for (const std::string& record : records) writer.WriteRecord(record);
  writer.Close();
  return path;
}

// An Example whose feature0 holds a float where the fixture's features hold an int64.
std::string ExampleWithFloatFeature0() {
  tensorflow::Example example;
  (*example.mutable_features()->mutable_feature())["feature0"].mutable_float_list()->add_value(1.5f);
  return example.SerializeAsString();
}

// Runs `fetches` until an error and returns its message ("no error" at the end of the data).
std::string FirstError(Session& sess, const std::vector<Output>& fetches) {
  try {
    for (;;) sess.Run({}, fetches);
  } catch (const OutOfRangeError&) {
    return "no error";
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
}

// A bad Example read from a file is named by file and record index wherever it is parsed:
// by the ParseExample op after the iterator (also when shuffled into a random row of a
// batch), by ParseSingleExample, and by ParseExample inside the pipeline.
TEST(ParseExample, BadExampleFromAFileIsNamedByFileAndRecordIndex) {
  const std::string wrong_type =
      WriteRecordsWithBadRecord("wrong_type.tfrecord", 13, ExampleWithFloatFeature0());
  const std::string garbage =
      WriteRecordsWithBadRecord("garbage.tfrecord", 27, std::string("\xff\xff\xff", 3));
  const std::map<std::string, FeatureSpec> features = {
      {"feature0", FixedLenFeature{DT_INT64, TensorShape({})}}};
  struct Case {
    std::string what, path;
    // Records in; the parsed feature0 and the iterator's initializer out.
    std::function<std::pair<Output, Operation>(data::Dataset)> parse;
    std::string expected;
  };
  auto op = [&](data::Dataset records) {
    auto it = records.MakeInitializableIterator();
    return std::pair(ParseExample(it.GetNext()[0], features).dense.at("feature0"), it.initializer());
  };
  std::vector<Case> cases = {
      {"op after Batch", wrong_type, [&](data::Dataset ds) { return op(ds.Batch(10).Prefetch(2)); },
       "Name: record 13 of " + wrong_type + ", Feature: feature0.  Data types don't match"},
      {"op after Shuffle and Batch", wrong_type,
       [&](data::Dataset ds) { return op(ds.Shuffle(50, 7).Batch(8)); },
       "Name: record 13 of " + wrong_type + ", Feature: feature0"},
      {"op on garbage", garbage, [&](data::Dataset ds) { return op(ds.Batch(10)); },
       "Name: record 27 of " + garbage + ", Could not parse example input"},
      {"single op", wrong_type,
       [&](data::Dataset ds) {
         auto it = ds.MakeInitializableIterator();
         return std::pair(ParseSingleExample(it.GetNext()[0], features).dense.at("feature0"),
                          it.initializer());
       },
       "Name: record 13 of " + wrong_type + ", Feature: feature0"},
      {"in the pipeline", wrong_type,
       [&](data::Dataset ds) {
         auto it = MapParseExample(ds.Batch(10).Prefetch(2), features, /*num_parallel_calls=*/2)
                       .Prefetch(2)
                       .MakeInitializableIterator();
         return std::pair(it.GetNext()[0], it.initializer());
       },
       "Name: record 13 of " + wrong_type + ", Feature: feature0.  Data types don't match"},
      {"in the pipeline, garbage", garbage,
       [&](data::Dataset ds) {
         auto it = MapParseExample(ds.Batch(10), features).MakeInitializableIterator();
         return std::pair(it.GetNext()[0], it.initializer());
       },
       "Name: record 27 of " + garbage + ", Could not parse example input"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph g;
    auto as_default = g.AsDefault();
    auto [parsed, init] = c.parse(data::Dataset::TFRecord({c.path}));
    Session sess(g);
    sess.Run({}, {}, {init});
    const std::string message = FirstError(sess, {parsed});
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
}

TEST(DecodeRaw, ReinterpretsBytes) {
  Graph g;
  auto as_default = g.AsDefault();
  const float values[2] = {1.5f, -2.0f};
  std::string bytes(reinterpret_cast<const char*>(values), sizeof(values));
  Output decoded = DecodeRaw(Const(Tensor::FromVector<std::string>({bytes, bytes})), DT_FLOAT);
  Output big = DecodeRaw(Const(std::string("\x01\x02", 2)), DT_INT16, /*little_endian=*/false);
  Output ragged = DecodeRaw(Const(Tensor::FromVector<std::string>({"ab", "abcd"})), DT_UINT8);
  Output odd = DecodeRaw(Const(std::string("abc")), DT_INT16);
  EXPECT_EQ(decoded.shape().DebugString(), "[2,?]");
  Session sess(g);
  Tensor out = decoded.Eval(sess);
  EXPECT_EQ(out.shape(), TensorShape({2, 2}));
  EXPECT_EQ(out.flat<float>()[3], -2.0f);
  EXPECT_EQ(big.Eval(sess).flat<int16_t>()[0], 0x0102);
  EXPECT_THROW(ragged.Eval(sess), InvalidArgumentError);
  EXPECT_THROW(odd.Eval(sess), InvalidArgumentError);
}

}  // namespace
}  // namespace flowtrain::ops
