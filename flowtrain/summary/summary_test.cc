#include "flowtrain/summary/summary.h"

#include <png.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/summary_ops.h"
#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain::summary {
namespace {

using ::testing::HasSubstr;

tensorflow::Summary RunSummary(Graph& g, const Output& summary,
                               const std::vector<std::pair<Output, Tensor>>& feeds = {}) {
  Session sess(g);
  const Tensor out = sess.Run(feeds, {summary}, {})[0];
  EXPECT_EQ(out.dtype(), DT_STRING);
  EXPECT_EQ(out.dims(), 0);
  tensorflow::Summary proto;
  EXPECT_TRUE(proto.ParseFromString(out.scalar<std::string>()));
  return proto;
}

template <typename Fn>
std::string ErrorMessage(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// TF's default limits, written out from docs/tf_behaviour.md §4.3 independently of the kernel.
std::vector<double> ExpectedLimits() {
  std::vector<double> pos;
  for (double v = 1e-12; v < 1e20; v *= 1.1) pos.push_back(v);
  pos.push_back(DBL_MAX);
  std::vector<double> all;
  for (auto it = pos.rbegin(); it != pos.rend(); ++it) all.push_back(-*it);
  all.push_back(0.0);
  all.insert(all.end(), pos.begin(), pos.end());
  return all;
}

// ---- Scalar ----

TEST(SummaryScalar, NamesNodesAndTagsAsTf) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Const(3.5f, "x");
  Output s1 = Scalar("loss", x);
  Output s2 = Scalar("loss", x);
  Output s3;
  {
    auto scope = g.NameScope("train");
    s3 = Scalar("loss", x);
  }
  Output s4 = Scalar("bad name!", x);
  Output s5 = Scalar("acc", x, {.family = "eval"});
  EXPECT_EQ(s1.op().name(), "loss");
  EXPECT_EQ(s1.op().type(), "ScalarSummary");
  EXPECT_EQ(s1.op().input(0).op().name(), "loss/tags");
  EXPECT_EQ(s2.op().name(), "loss_1");
  EXPECT_EQ(s3.op().name(), "train/loss");
  EXPECT_EQ(s4.op().name(), "bad_name_");
  EXPECT_EQ(s5.op().name(), "eval/acc");

  EXPECT_EQ(RunSummary(g, s1).value(0).tag(), "loss");
  EXPECT_EQ(RunSummary(g, s2).value(0).tag(), "loss_1");
  EXPECT_EQ(RunSummary(g, s3).value(0).tag(), "train/loss");
  EXPECT_EQ(RunSummary(g, s5).value(0).tag(), "eval/eval/acc");
  const tensorflow::Summary one = RunSummary(g, s1);
  ASSERT_EQ(one.value_size(), 1);
  EXPECT_EQ(one.value(0).value_case(), tensorflow::Summary::Value::kSimpleValue);
  EXPECT_FLOAT_EQ(one.value(0).simple_value(), 3.5f);
  EXPECT_EQ(g.GetCollection<Output>(GraphKeys::kSummaries).size(), 5u);
}

TEST(SummaryScalar, CollectionsOptionAndIntegerValues) {
  Graph g;
  auto as_default = g.AsDefault();
  Output s = Scalar("steps", ops::Const(int64_t{42}), {.collections = std::vector<std::string>{"mine"}});
  EXPECT_TRUE(g.GetCollection<Output>(GraphKeys::kSummaries).empty());
  ASSERT_EQ(g.GetCollection<Output>("mine").size(), 1u);
  EXPECT_FLOAT_EQ(RunSummary(g, s).value(0).simple_value(), 42.0f);
}

TEST(ScalarSummaryOp, ManyTagsAndShapeErrors) {
  Graph g;
  auto as_default = g.AsDefault();
  Output s = ops::ScalarSummary(ops::Const(Tensor::FromVector<std::string>({"a", "b"})),
                                ops::Const<double>({1.25, -2}));
  const tensorflow::Summary proto = RunSummary(g, s);
  ASSERT_EQ(proto.value_size(), 2);
  EXPECT_EQ(proto.value(1).tag(), "b");
  EXPECT_FLOAT_EQ(proto.value(1).simple_value(), -2.0f);

  // Known shapes: rejected while building.
  EXPECT_THAT(ErrorMessage([] {
                ops::ScalarSummary(ops::Const(Tensor::FromVector<std::string>({"a", "b"})),
                                   ops::Const<float>({1, 2, 3}));
              }),
              HasSubstr("tags and values not the same shape: [2] != [3]"));
  // Unknown shapes: rejected when run, naming the tag.
  Output values = ops::Placeholder(DT_FLOAT);
  Output fed = ops::ScalarSummary(ops::Const("only"), values);
  EXPECT_THAT(ErrorMessage([&] {
                RunSummary(g, fed, {{values, Tensor::FromVector<float>({1, 2})}});
              }),
              HasSubstr("tags and values not the same shape: [] != [2] (tag 'only')"));
}

// ---- Histogram ----

TEST(SummaryHistogram, DefaultBucketsAndTfEncoding) {
  const std::vector<double> limits = ExpectedLimits();
  ASSERT_EQ(limits.size(), 1551u);

  Graph g;
  auto as_default = g.AsDefault();
  Output h = Histogram("weights", ops::Const<float>({0.0f, 1.0f, 1.0f, 2.5f, -3.0f}));
  EXPECT_EQ(h.op().name(), "weights");
  EXPECT_EQ(h.op().type(), "HistogramSummary");
  EXPECT_EQ(h.op().input(0).op().name(), "weights/tag");
  const tensorflow::Summary proto = RunSummary(g, h);
  ASSERT_EQ(proto.value_size(), 1);
  EXPECT_EQ(proto.value(0).tag(), "weights");
  const tensorflow::HistogramProto& histo = proto.value(0).histo();
  EXPECT_EQ(histo.min(), -3.0);
  EXPECT_EQ(histo.max(), 2.5);
  EXPECT_EQ(histo.num(), 5.0);
  EXPECT_EQ(histo.sum(), 1.5);
  EXPECT_EQ(histo.sum_squares(), 17.25);

  // Bucket i holds [limit[i-1], limit[i]): the index of the first limit above the value.
  auto bucket_of = [&](double v) {
    return static_cast<int>(std::upper_bound(limits.begin(), limits.end(), v) - limits.begin());
  };
  const int b_neg3 = bucket_of(-3.0), b_0 = bucket_of(0.0), b_1 = bucket_of(1.0), b_25 = bucket_of(2.5);
  EXPECT_EQ(limits[b_0], 1e-12);
  EXPECT_LT(limits[b_1 - 1], 1.0);
  EXPECT_GT(limits[b_1], 1.0);
  // Non-empty buckets as (limit, count); each run of empty buckets as one (last limit, 0).
  const std::vector<std::pair<double, double>> expected = {
      {limits[b_neg3 - 1], 0}, {limits[b_neg3], 1},  {limits[b_0 - 1], 0},
      {limits[b_0], 1},        {limits[b_1 - 1], 0}, {limits[b_1], 2},
      {limits[b_25 - 1], 0},   {limits[b_25], 1},    {DBL_MAX, 0}};
  ASSERT_EQ(histo.bucket_limit_size(), static_cast<int>(expected.size()));
  ASSERT_EQ(histo.bucket_size(), static_cast<int>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(histo.bucket_limit(i), expected[i].first) << i;
    EXPECT_EQ(histo.bucket(i), expected[i].second) << i;
  }
}

TEST(SummaryHistogram, EmptyAndNonFinite) {
  Graph g;
  auto as_default = g.AsDefault();
  Output empty = Histogram("none", ops::Const(Tensor::FromVector<float>({})));
  const tensorflow::HistogramProto histo = RunSummary(g, empty).value(0).histo();
  EXPECT_EQ(histo.num(), 0.0);
  EXPECT_EQ(histo.min(), DBL_MAX);
  EXPECT_EQ(histo.max(), -DBL_MAX);
  ASSERT_EQ(histo.bucket_limit_size(), 1);
  EXPECT_EQ(histo.bucket_limit(0), DBL_MAX);
  EXPECT_EQ(histo.bucket(0), 0.0);

  Output nan = Histogram("nan", ops::Const<float>({1.0f, std::nanf("")}));
  EXPECT_THAT(ErrorMessage([&] { RunSummary(g, nan); }), HasSubstr("Nan in summary histogram for: nan"));
  Output inf = Histogram("inf", ops::Const<double>({INFINITY}));
  EXPECT_THAT(ErrorMessage([&] { RunSummary(g, inf); }), HasSubstr("Infinity in summary histogram for: inf"));
}

// ---- Image ----

// Decodes a PNG with libpng's simplified API into 8-bit pixels of its own channel count.
std::vector<uint8_t> DecodePng(const std::string& png, int* width, int* height, int* channels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  EXPECT_TRUE(png_image_begin_read_from_memory(&image, png.data(), png.size()));
  *channels = PNG_IMAGE_SAMPLE_CHANNELS(image.format);
  *width = static_cast<int>(image.width);
  *height = static_cast<int>(image.height);
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(image));
  EXPECT_TRUE(png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr));
  return pixels;
}

TEST(SummaryImage, Uint8ImagesRoundTripThroughPng) {
  std::vector<uint8_t> pixels(2 * 2 * 3 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
  Graph g;
  auto as_default = g.AsDefault();
  Output img = Image("inputs", ops::Const<uint8_t>(pixels, TensorShape({2, 2, 3, 3})));
  EXPECT_EQ(img.op().name(), "inputs");
  EXPECT_EQ(img.op().type(), "ImageSummary");
  const tensorflow::Summary proto = RunSummary(g, img);
  ASSERT_EQ(proto.value_size(), 2);  // batch of 2 < max_outputs 3
  for (int i = 0; i < 2; ++i) {
    const auto& value = proto.value(i);
    EXPECT_EQ(value.tag(), "inputs/image/" + std::to_string(i));
    EXPECT_EQ(value.image().height(), 2);
    EXPECT_EQ(value.image().width(), 3);
    EXPECT_EQ(value.image().colorspace(), 3);
    int w, h, c;
    const std::vector<uint8_t> decoded = DecodePng(value.image().encoded_image_string(), &w, &h, &c);
    EXPECT_EQ(w, 3);
    EXPECT_EQ(h, 2);
    EXPECT_EQ(c, 3);
    EXPECT_EQ(decoded, std::vector<uint8_t>(pixels.begin() + i * 18, pixels.begin() + (i + 1) * 18));
  }
}

TEST(SummaryImage, FloatImagesAreScaledAsTf) {
  Graph g;
  auto as_default = g.AsDefault();
  // Non-negative: scaled so the largest is 255 (truncating); NaN pixels get bad_color red.
  Output positive =
      Image("pos", ops::Const<float>({0.0f, 0.5f, 1.0f, std::nanf("")}, TensorShape({1, 2, 2, 1})),
            {.max_outputs = 1});
  const tensorflow::Summary p = RunSummary(g, positive);
  ASSERT_EQ(p.value_size(), 1);
  EXPECT_EQ(p.value(0).tag(), "pos/image");
  int w, h, c;
  EXPECT_EQ(DecodePng(p.value(0).image().encoded_image_string(), &w, &h, &c),
            (std::vector<uint8_t>{0, 127, 255, 255}));
  EXPECT_EQ(c, 1);
  // With negatives: 128 + 127 * v / max|v|.
  Output mixed = Image("mixed", ops::Const<float>({-1.0f, 0.5f, 0.0f, 1.0f}, TensorShape({1, 1, 1, 4})));
  const tensorflow::Summary m = RunSummary(g, mixed);
  EXPECT_EQ(m.value(0).tag(), "mixed/image/0");
  EXPECT_EQ(DecodePng(m.value(0).image().encoded_image_string(), &w, &h, &c),
            (std::vector<uint8_t>{1, 191, 128, 255}));
  EXPECT_EQ(c, 4);
}

TEST(SummaryImage, ShapeErrors) {
  Graph g;
  auto as_default = g.AsDefault();
  EXPECT_THAT(ErrorMessage([] {
                Image("x", ops::Const<float>({1, 2}, TensorShape({1, 2})));
              }),
              HasSubstr("rank 4"));
  EXPECT_THAT(ErrorMessage([] {
                Image("x", ops::Const<float>({1, 2}, TensorShape({1, 1, 1, 2})));
              }),
              HasSubstr("Tensor must be 4-D with last dim 1, 3, or 4, not [1,1,1,2]"));
  Output fed = ops::Placeholder(DT_UINT8);
  Output img = Image("fed", fed);
  EXPECT_THAT(ErrorMessage([&] {
                RunSummary(g, img, {{fed, Tensor::FromVector<uint8_t>({1, 2}, TensorShape({1, 1, 1, 2}))}});
              }),
              HasSubstr("Tensor must be 4-D with last dim 1, 3, or 4"));
}

// ---- Audio ----

uint32_t ReadLE(const std::string& s, size_t offset, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(s[offset + i])) << (8 * i);
  return v;
}

TEST(SummaryAudio, WavHeaderAndSamples) {
  Graph g;
  auto as_default = g.AsDefault();
  Output clip = ops::Const<float>({0.0f, 0.5f, -1.0f, 1.0f, 0.25f, -0.25f}, TensorShape({1, 3, 2}));
  Output a = Audio("speech", clip, 16000.0f, {.max_outputs = 1});
  EXPECT_EQ(a.op().type(), "AudioSummaryV2");
  EXPECT_EQ(a.op().input(2).op().name(), "speech/sample_rate");
  const tensorflow::Summary proto = RunSummary(g, a);
  ASSERT_EQ(proto.value_size(), 1);
  EXPECT_EQ(proto.value(0).tag(), "speech/audio");
  const auto& audio = proto.value(0).audio();
  EXPECT_EQ(audio.sample_rate(), 16000.0f);
  EXPECT_EQ(audio.num_channels(), 2);
  EXPECT_EQ(audio.length_frames(), 3);
  EXPECT_EQ(audio.content_type(), "audio/wav");
  const std::string& wav = audio.encoded_audio_string();
  ASSERT_EQ(wav.size(), 44u + 12u);
  EXPECT_EQ(wav.substr(0, 4), "RIFF");
  EXPECT_EQ(ReadLE(wav, 4, 4), wav.size() - 8);
  EXPECT_EQ(wav.substr(8, 8), "WAVEfmt ");
  EXPECT_EQ(ReadLE(wav, 16, 4), 16u);     // format chunk size
  EXPECT_EQ(ReadLE(wav, 20, 2), 1u);      // PCM
  EXPECT_EQ(ReadLE(wav, 22, 2), 2u);      // channels
  EXPECT_EQ(ReadLE(wav, 24, 4), 16000u);  // sample rate
  EXPECT_EQ(ReadLE(wav, 28, 4), 64000u);  // bytes per second
  EXPECT_EQ(ReadLE(wav, 32, 2), 4u);      // bytes per frame
  EXPECT_EQ(ReadLE(wav, 34, 2), 16u);     // bits per sample
  EXPECT_EQ(wav.substr(36, 4), "data");
  EXPECT_EQ(ReadLE(wav, 40, 4), 12u);
  const std::vector<int16_t> expected = {0, 16384, -32768, 32767, 8192, -8192};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(static_cast<int16_t>(ReadLE(wav, 44 + 2 * i, 2)), expected[i]) << i;
  }
}

TEST(SummaryAudio, MaxOutputsAndErrors) {
  Graph g;
  auto as_default = g.AsDefault();
  Output batch = ops::Const<float>({0, 0, 0, 0, 0, 0}, TensorShape({3, 2}));
  Output rate = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "rate");
  Output a = Audio("clips", batch, rate, {.max_outputs = 2});
  const tensorflow::Summary proto = RunSummary(g, a, {{rate, Tensor::Scalar<float>(8000.0f)}});
  ASSERT_EQ(proto.value_size(), 2);
  EXPECT_EQ(proto.value(1).tag(), "clips/audio/1");
  EXPECT_THAT(ErrorMessage([&] {
                RunSummary(g, a, {{rate, Tensor::Scalar<float>(0.0f)}});
              }),
              HasSubstr("sample_rate must be > 0"));
  EXPECT_THROW(Audio("bad", ops::Const<float>({1}), 8000.0f), InvalidArgumentError);
}

// ---- Text and tensor summaries ----

TEST(SummaryText, TensorSummaryV2WithTextPlugin) {
  Graph g;
  auto as_default = g.AsDefault();
  Output t = Text("notes", ops::Const(Tensor::FromVector<std::string>({"hello", "**world**"})));
  EXPECT_EQ(t.op().type(), "TensorSummaryV2");
  EXPECT_EQ(t.op().name(), "notes");
  EXPECT_EQ(t.op().input(2).op().name(), "notes/serialized_summary_metadata");
  const tensorflow::Summary proto = RunSummary(g, t);
  ASSERT_EQ(proto.value_size(), 1);
  const auto& value = proto.value(0);
  EXPECT_EQ(value.tag(), "notes");
  EXPECT_EQ(value.metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(value.tensor().dtype(), tensorflow::DT_STRING);
  ASSERT_EQ(value.tensor().string_val_size(), 2);
  EXPECT_EQ(value.tensor().string_val(1), "**world**");
  EXPECT_THAT(ErrorMessage([] { Text("n", ops::Const(1.0f)); }), HasSubstr("to have dtype string"));

  tensorflow::SummaryMetadata metadata;
  metadata.mutable_plugin_data()->set_plugin_name("scalars");
  Output ts = TensorSummary("metric", ops::Const(0.75f), metadata);
  const auto v = RunSummary(g, ts).value(0);
  EXPECT_EQ(v.metadata().plugin_data().plugin_name(), "scalars");
  EXPECT_FLOAT_EQ(TensorFromProto(v.tensor()).scalar<float>(), 0.75f);
  EXPECT_FALSE(v.tensor().tensor_content().empty());  // numbers as tensor_content, as TF
}

// ---- Merge ----

TEST(SummaryMerge, MergeAllCollectsEverything) {
  Graph g;
  auto as_default = g.AsDefault();
  EXPECT_FALSE(MergeAll());  // nothing collected: TF returns None
  Scalar("a", ops::Const(1.0f));
  Histogram("b", ops::Const<float>({1, 2}));
  Text("c", ops::Const("text"));
  Output merged = MergeAll();
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged.op().name(), "Merge/MergeSummary");
  EXPECT_EQ(merged.op().type(), "MergeSummary");
  EXPECT_EQ(merged.op().GetAttr<int64_t>("N"), 3);
  const tensorflow::Summary proto = RunSummary(g, merged);
  ASSERT_EQ(proto.value_size(), 3);
  EXPECT_EQ(proto.value(0).tag(), "a");
  EXPECT_EQ(proto.value(1).tag(), "b");
  EXPECT_TRUE(proto.value(1).has_histo());
  EXPECT_EQ(proto.value(2).tag(), "c");
  // The merged op is not itself collected, so merging again gives the same three.
  EXPECT_EQ(MergeAll().op().name(), "Merge_1/MergeSummary");
  EXPECT_EQ(Merge({merged}, {}, "all").op().name(), "all/all");
}

TEST(SummaryMerge, DuplicateTagsAreAnError) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = ops::ScalarSummary(ops::Const("loss"), ops::Const(1.0f));
  Output b = ops::ScalarSummary(ops::Const("loss"), ops::Const(2.0f));
  Output merged = Merge({a, b});
  EXPECT_THAT(ErrorMessage([&] { RunSummary(g, merged); }),
              HasSubstr("Duplicate tag loss found in summary inputs"));
  Output garbage = ops::Const("\xff\xff not a proto");
  Output bad = Merge({a, garbage});
  EXPECT_THAT(ErrorMessage([&] { RunSummary(g, bad); }),
              HasSubstr("Could not parse one of the summary inputs"));
  EXPECT_THROW(Merge({}), InvalidArgumentError);
}

}  // namespace
}  // namespace flowtrain::summary
