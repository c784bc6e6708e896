// io::ExampleParser: the in-place wire-format scanner gives what the protobuf parser gives,
// for the encodings protobuf writes and for the ones it only reads (unpacked lists, repeated
// map keys, unknown fields, several `features` fields), and bad input is an error naming the
// example.
#include "flowtrain/io/example_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/thread_pool.h"
#include "flowtrain/proto/example.pb.h"

namespace flowtrain::io {
namespace {

// Protobuf wire format by hand, for encodings the protobuf serializer never writes.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Field(int number, const std::string& bytes) {  // length-delimited
  return Varint(static_cast<uint64_t>(number) << 3 | 2) + Varint(bytes.size()) + bytes;
}
std::string Entry(const std::string& key, const std::string& feature) {
  return Field(1, Field(1, key) + Field(2, feature));
}
std::string UnpackedFloats(const std::vector<float>& values) {
  std::string list;
  for (float v : values) {
    list += Varint(1 << 3 | 5);
    list.append(reinterpret_cast<const char*>(&v), 4);
  }
  return Field(2, list);  // Feature.float_list
}
std::string UnpackedInts(const std::vector<int64_t>& values) {
  std::string list;
  for (int64_t v : values) list += Varint(1 << 3 | 0) + Varint(static_cast<uint64_t>(v));
  return Field(3, list);  // Feature.int64_list
}

std::string Serialize(const tensorflow::Example& example) { return example.SerializeAsString(); }

tensorflow::Example MakeExample(int i) {
  tensorflow::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  for (int k = 0; k < 5; ++k)
    features["image"].mutable_float_list()->add_value(static_cast<float>(i * 10 + k));
  features["label"].mutable_int64_list()->add_value(-i);  // negative: ten-byte varints
  features["name"].mutable_bytes_list()->add_value("example " + std::to_string(i));
  for (int k = 0; k < i; ++k) features["tags"].mutable_bytes_list()->add_value("t" + std::to_string(k));
  return example;
}

ExampleParser MakeParser() {
  return ExampleParser({{.key = "tags", .dtype = DT_STRING}},
                       {{.key = "image", .dtype = DT_FLOAT, .shape = TensorShape({5})},
                        {.key = "label", .dtype = DT_INT64, .shape = TensorShape({})},
                        {.key = "name",
                         .dtype = DT_STRING,
                         .shape = TensorShape({}),
                         .default_value = Tensor::Scalar<std::string>("none")}});
}

TEST(ExampleParser, ParsesABatchInParallelAsSerially) {
  std::vector<std::string> records;
  for (int i = 0; i < 100; ++i) records.push_back(Serialize(MakeExample(i)));
  const Tensor batch = Tensor::FromVector<std::string>(records);
  ThreadPool pool("parse", 2);
  const ExampleParser parser = MakeParser();
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::vector<Tensor> out = parser.Parse(batch, nullptr, false, {}, p);
    ASSERT_EQ(out.size(), 6u);  // tags indices, values, shape; image, label, name
    EXPECT_EQ(out[3].shape(), TensorShape({100, 5}));
    for (int i = 0; i < 100; ++i) {
      for (int k = 0; k < 5; ++k) EXPECT_EQ(out[3].flat<float>()[i * 5 + k], static_cast<float>(i * 10 + k));
      EXPECT_EQ(out[4].flat<int64_t>()[i], -i);
      EXPECT_EQ(out[5].flat<std::string>()[i], "example " + std::to_string(i));
    }
    // Sparse: example i has i tags.
    EXPECT_EQ(out[0].shape(), TensorShape({99 * 100 / 2, 2}));
    EXPECT_EQ(out[2].flat<int64_t>()[0], 100);
    EXPECT_EQ(out[2].flat<int64_t>()[1], 99);
    EXPECT_EQ(out[1].flat<std::string>()[0], "t0");  // example 1's only tag
    EXPECT_EQ(out[0].flat<int64_t>()[0], 1);
    EXPECT_EQ(out[0].flat<int64_t>()[1], 0);
  }
}

TEST(ExampleParser, ReadsEveryEncodingProtobufReads) {
  // Unpacked lists, the key given twice (the last wins, as in a protobuf map), an unknown
  // field at every level, and the features split over two `features` fields.
  const std::string unknown = Varint(15 << 3 | 0) + Varint(12345);
  const std::string record =
      Field(1, Entry("image", UnpackedFloats({9, 9, 9, 9, 9})) + unknown) + unknown +
      Field(1, Entry("image", UnpackedFloats({1, 2, 3, 4, 5})) + Entry("label", UnpackedInts({-7})) +
                   Entry("ignored", UnpackedInts({1})));
  // The protobuf parser agrees on what this record is.
  tensorflow::Example reference;
  ASSERT_TRUE(reference.ParseFromString(record));
  ASSERT_EQ(reference.features().feature().at("image").float_list().value(4), 5.f);
  const ExampleParser parser = MakeParser();
  std::vector<Tensor> out = parser.Parse(Tensor::Scalar<std::string>(record), nullptr, /*single=*/true);
  EXPECT_EQ(out[3].shape(), TensorShape({5}));
  for (int k = 0; k < 5; ++k) EXPECT_EQ(out[3].flat<float>()[k], static_cast<float>(k + 1));
  EXPECT_EQ(out[4].scalar<int64_t>(), -7);
  EXPECT_EQ(out[5].scalar<std::string>(), "none");  // the default
  EXPECT_EQ(out[0].shape(), TensorShape({0, 1}));   // no tags
}

TEST(ExampleParser, AFeatureWithTwoListsIsLeftToProtobufsMerge) {
  // float_list given twice in one Feature: protobuf merges the two lists into one.
  const std::string feature = Field(2, std::string(Varint(1 << 3 | 5) + std::string("\0\0\x80\x3f", 4))) +
                              Field(2, std::string(Varint(1 << 3 | 5) + std::string("\0\0\0\x40", 4)));
  const std::string record = Field(1, Entry("pair", feature));
  ExampleParser parser({}, {{.key = "pair", .dtype = DT_FLOAT, .shape = TensorShape({2})}});
  std::vector<Tensor> out = parser.Parse(Tensor::FromVector<std::string>({record}));
  EXPECT_EQ(out[0].flat<float>()[0], 1.f);
  EXPECT_EQ(out[0].flat<float>()[1], 2.f);
}

// A list holding anything but its values: protobuf keeps it as an unknown field, TF 2.21's
// parse_example says "Can't parse serialized Example" (checked with tf.io.parse_example on these
// bytes). A value of the wrong wire type in a bytes_list was Internal.
TEST(ExampleParser, ListsWithOtherFieldsAreInvalidArgumentAsInTF) {
  const std::string value_a = Field(1, "a");
  const std::vector<std::pair<DataType, std::string>> features = {
      {DT_STRING, Field(1, Varint(1 << 3 | 0) + Varint(5))},                // varint value
      {DT_STRING, Field(1, Varint(1 << 3 | 5) + std::string("\1\2\3\4"))},  // fixed32 value
      {DT_STRING, Field(1, value_a + Varint(1 << 3 | 0) + Varint(5))},      // value, then a varint
      {DT_STRING, Field(1, value_a + Varint(2 << 3 | 0) + Varint(5))},      // unknown field 2
      {DT_FLOAT, Field(2, Varint(1 << 3 | 0) + Varint(5))},                 // varint float
      {DT_FLOAT, Field(2, Field(1, std::string(4, '\0')) + Varint(2 << 3 | 0) + Varint(5))},
      {DT_INT64, Field(3, Varint(1 << 3 | 5) + std::string("\1\2\3\4"))},  // fixed32 int
      {DT_INT64, Field(3, Varint(1 << 3 | 0) + Varint(5) + Field(2, "x"))},
  };
  for (size_t c = 0; c < features.size(); ++c) {
    SCOPED_TRACE(c);
    const auto& [dtype, feature] = features[c];
    const Tensor record = Tensor::FromVector<std::string>({Field(1, Entry("s", feature))});
    ExampleParser dense({}, {{.key = "s", .dtype = dtype, .shape = TensorShape({1})}});
    ExampleParser sparse({{.key = "s", .dtype = dtype}}, {});
    for (const ExampleParser* parser : {&dense, &sparse}) {
      try {
        parser->Parse(record);
        ADD_FAILURE() << "no error";
      } catch (const InvalidArgumentError& e) {
        EXPECT_NE(
            std::string(e.what()).find("Name: <unknown>, Key: s, Index: 0.  Can't parse serialized Example."),
            std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(ExampleParser, BadInputNamesTheExample) {
  const ExampleParser parser = MakeParser();
  const Tensor names = Tensor::FromVector<std::string>({"a.tfrecord:0", "a.tfrecord:1"});
  auto message = [&](const std::string& second) -> std::string {
    try {
      parser.Parse(Tensor::FromVector<std::string>({Serialize(MakeExample(1)), second}), &names);
    } catch (const InvalidArgumentError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message(std::string("\x0a\x05\x01", 3)).find("Name: a.tfrecord:1, Could not parse example input"),
            std::string::npos);
  tensorflow::Example wrong = MakeExample(2);
  (*wrong.mutable_features()->mutable_feature())["label"].mutable_float_list()->add_value(1);
  EXPECT_NE(message(Serialize(wrong))
                .find("Feature: label.  Data types don't match. Data type: float but expected "
                      "type: int64 (example 1)"),
            std::string::npos)
      << message(Serialize(wrong));
  tensorflow::Example short_image = MakeExample(2);
  (*short_image.mutable_features()->mutable_feature())["image"]
      .mutable_float_list()
      ->mutable_value()
      ->RemoveLast();
  EXPECT_NE(message(Serialize(short_image))
                .find("Key: image, Index: 1.  Number of float values != expected.  "
                      "Values size: 4 but output shape: [5]"),
            std::string::npos);
  tensorflow::Example no_label = MakeExample(2);
  no_label.mutable_features()->mutable_feature()->erase("label");
  EXPECT_NE(message(Serialize(no_label))
                .find("Feature: label (data type: int64) is required but could not be found"),
            std::string::npos);
  // The first bad example is reported, whichever thread found it.
  ThreadPool pool("parse", 2);
  std::vector<std::string> records(64, Serialize(MakeExample(3)));
  records[40] = "garbage";
  records[50] = "garbage";
  try {
    parser.Parse(Tensor::FromVector<std::string>(records), nullptr, false, {}, &pool);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("(example 40 of 64)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flowtrain::io
