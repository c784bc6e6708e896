// Input pipeline throughput: how fast the tf.data-style pipelines deliver batches of 64, and
// how much a training-like step (an MLP 784-256-256-10 forward pass, MatMul + Add) slows down
// when it reads its batches from them instead of from tensors fed directly from memory.
//
//   (a) memory:   FromTensorSlices -> Shuffle(10000) -> Batch(64) -> Prefetch(2)
//   (b) tfrecord: TFRecord file of serialized Examples -> Batch(64) -> Prefetch(2), then the
//                 ParseExample op in the step's graph
//
// Prints:
//   RESULT input_pipeline direct_feed examples_per_sec <v>           (the step fed from memory)
//   RESULT input_pipeline flowtrain memory_pipeline_examples_per_sec <v>
//   RESULT input_pipeline flowtrain memory_step_examples_per_sec <v>
//   RESULT input_pipeline flowtrain memory_step_slowdown_pct <v>      (target <= 5)
//   RESULT input_pipeline flowtrain memory_pipeline_vs_step <ratio>   (target >= 5)
//   ... and the same four for tfrecord_*.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "flowtrain/flowtrain.h"
#include "flowtrain/io/record_writer.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/parsing_ops.h"
#include "flowtrain/proto/example.pb.h"

namespace ft = flowtrain;

namespace {

constexpr int kExamples = 20000;
constexpr int kBatch = 64;
constexpr int kFeatures = 784;

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

ft::Tensor RandomTensor(ft::TensorShape shape, std::mt19937& rng, float scale) {
  ft::Tensor t(ft::DT_FLOAT, shape);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (float& v : t.flat<float>()) v = dist(rng);
  return t;
}

// The forward pass of a 784-256-256-10 MLP on `x`.
ft::Output Mlp(ft::Output x, std::mt19937& rng) {
  ft::Output h = x;
  const int sizes[] = {kFeatures, 256, 256, 10};
  for (int layer = 0; layer < 3; ++layer) {
    ft::Output w = ft::ops::Const(RandomTensor(ft::TensorShape({sizes[layer], sizes[layer + 1]}), rng, 0.05f));
    ft::Output b = ft::ops::Const(RandomTensor(ft::TensorShape({sizes[layer + 1]}), rng, 0.05f));
    h = ft::ops::Add(ft::ops::MatMul(h, w), b);
  }
  return h;
}

// Examples per second of `run_batch` (which processes one batch of kBatch) over `batches`.
template <typename Fn>
double Rate(int batches, Fn&& run_batch) {
  for (int i = 0; i < 5; ++i) run_batch();  // warm up plans, buffers and threads
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < batches; ++i) run_batch();
  return batches * kBatch / Seconds(std::chrono::steady_clock::now() - start);
}

void Report(const char* system, const char* metric, double value) {
  std::printf("RESULT input_pipeline %s %s %.6g\n", system, metric, value);
  std::fflush(stdout);
}

void ReportPipeline(const char* name, double pipeline, double step, double direct) {
  const std::string n(name);
  Report("flowtrain", (n + "_pipeline_examples_per_sec").c_str(), pipeline);
  Report("flowtrain", (n + "_step_examples_per_sec").c_str(), step);
  Report("flowtrain", (n + "_step_slowdown_pct").c_str(), 100.0 * (direct / step - 1.0));
  Report("flowtrain", (n + "_pipeline_vs_step").c_str(), pipeline / direct);
}

}  // namespace

int main() {
  std::mt19937 rng(1);
  const ft::Tensor images = RandomTensor(ft::TensorShape({kExamples, kFeatures}), rng, 1.0f);
  std::vector<int64_t> label_values(kExamples);
  for (int i = 0; i < kExamples; ++i) label_values[i] = i % 10;
  const ft::Tensor labels = ft::Tensor::FromVector<int64_t>(label_values);
  const int batches = 300;

  // Direct feeding: batches prepared in memory beforehand, fed to a placeholder.
  double direct = 0;
  {
    ft::Graph g;
    auto as_default = g.AsDefault();
    ft::Output x = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape({-1, kFeatures}), "x");
    ft::Output logits = Mlp(x, rng);
    ft::Session sess(g);
    std::vector<ft::Tensor> feeds;
    for (int b = 0; b < kExamples / kBatch; ++b) feeds.push_back(images.Slice(b * kBatch, (b + 1) * kBatch).DeepCopy());
    size_t next = 0;
    direct = Rate(batches, [&] { sess.Run({{x, feeds[next++ % feeds.size()]}}, {logits}); });
    Report("direct_feed", "examples_per_sec", direct);
  }

  // (a) In-memory dataset.
  {
    ft::Graph g;
    auto as_default = g.AsDefault();
    auto it = ft::data::Dataset::FromTensorSlices(std::vector<ft::Tensor>{images, labels})
                  .Shuffle(10000, 1)
                  .Repeat()
                  .Batch(kBatch)
                  .Prefetch(2)
                  .MakeInitializableIterator();
    std::vector<ft::Output> next = it.GetNext();
    ft::Output logits = Mlp(next[0], rng);
    ft::Session sess(g);
    sess.Run({}, {}, {it.initializer()});
    const double pipeline = Rate(batches * 4, [&] { sess.Run({}, next); });
    const double step = Rate(batches, [&] { sess.Run({}, {logits}); });
    ReportPipeline("memory", pipeline, step, direct);
  }

  // (b) TFRecord file of serialized tf.train.Examples, parsed by ParseExample.
  {
    const std::string path = (std::filesystem::temp_directory_path() / "ft_input_pipeline_bench.tfrecord").string();
    {
      ft::io::RecordWriter writer(path);
      for (int i = 0; i < kExamples; ++i) {
        tensorflow::Example example;
        auto& features = *example.mutable_features()->mutable_feature();
        auto* image = features["image"].mutable_float_list();
        const float* row = images.flat<float>().data() + static_cast<size_t>(i) * kFeatures;
        image->mutable_value()->Add(row, row + kFeatures);
        features["label"].mutable_int64_list()->add_value(label_values[i]);
        writer.WriteRecord(example.SerializeAsString());
      }
      writer.Close();
    }
    ft::Graph g;
    auto as_default = g.AsDefault();
    auto it = ft::data::Dataset::TFRecord({path}).Repeat().Batch(kBatch).Prefetch(2).MakeInitializableIterator();
    ft::ops::ParsedExample parsed = ft::ops::ParseExample(
        it.GetNext()[0], {{"image", ft::ops::FixedLenFeature{ft::DT_FLOAT, ft::TensorShape({kFeatures})}},
                          {"label", ft::ops::FixedLenFeature{ft::DT_INT64, ft::TensorShape({})}}});
    ft::Output logits = Mlp(parsed.dense.at("image"), rng);
    ft::Session sess(g);
    sess.Run({}, {}, {it.initializer()});
    const double pipeline =
        Rate(batches * 2, [&] { sess.Run({}, {parsed.dense.at("image"), parsed.dense.at("label")}); });
    const double step = Rate(batches, [&] { sess.Run({}, {logits}); });
    ReportPipeline("tfrecord", pipeline, step, direct);
    std::filesystem::remove(path);
  }
  return 0;
}
