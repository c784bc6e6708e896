// Input pipeline throughput: how fast the tf.data-style pipelines deliver batches of 64, and
// how much a training-like step (an MLP 784-256-256-10 forward pass, MatMul + Add) slows down
// when it reads its batches from them instead of from tensors fed directly from memory.
//
//   (a) memory:   FromTensorSlices -> Shuffle(10000) -> Batch(64) -> Prefetch(2)
//   (b) tfrecord: TFRecord file of serialized Examples -> Batch(64) -> Prefetch(2) -> batched
//                 ParseExample inside Map on 2 threads (ops::MapParseExample) -> Prefetch(2):
//                 reading, parsing and the step each run on threads of their own
//
// Prints:
//   RESULT input_pipeline direct_feed examples_per_sec <v>           (the step fed from memory)
//   RESULT input_pipeline flowtrain memory_pipeline_examples_per_sec <v>
//   RESULT input_pipeline flowtrain memory_step_examples_per_sec <v>
//   RESULT input_pipeline flowtrain memory_step_slowdown_pct <v>      (target <= 5)
//   RESULT input_pipeline flowtrain memory_pipeline_vs_step <ratio>   (target >= 5)
//   ... and the same four for tfrecord_*; then everything again with "_intra1" appended,
//   measured with sessions whose kernels use one thread (a core left to the pipeline).
#include <algorithm>
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

void ReportPipeline(const std::string& name, double pipeline, double step, double direct) {
  const std::string n(name);
  Report("flowtrain", (n + "_pipeline_examples_per_sec").c_str(), pipeline);
  Report("flowtrain", (n + "_step_examples_per_sec").c_str(), step);
  Report("flowtrain", (n + "_step_slowdown_pct").c_str(), 100.0 * (direct / step - 1.0));
  Report("flowtrain", (n + "_pipeline_vs_step").c_str(), pipeline / direct);
}

// Runs the measurements with sessions configured by `options`; metric names get `suffix`.
// The machines this runs on are shared, so every rate is the best of several rounds, and the
// rounds interleave the contenders so that a busy moment does not favour one of them.
void Measure(const ft::SessionOptions& options, const std::string& suffix, const ft::Tensor& images,
             const ft::Tensor& labels, const std::string& tfrecord_path) {
  std::mt19937 rng(1);
  const int batches = 200;

  // Direct feeding: batches prepared in memory beforehand, fed to a placeholder.
  ft::Graph direct_graph;
  ft::Output x, direct_logits;
  {
    auto as_default = direct_graph.AsDefault();
    x = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape({-1, kFeatures}), "x");
    direct_logits = Mlp(x, rng);
  }
  ft::Session direct_sess(direct_graph, options);
  std::vector<ft::Tensor> feeds;
  for (int b = 0; b < kExamples / kBatch; ++b) feeds.push_back(images.Slice(b * kBatch, (b + 1) * kBatch).DeepCopy());
  size_t next_feed = 0;

  // (a) In-memory dataset.
  ft::Graph memory_graph;
  std::vector<ft::Output> memory_next;
  ft::Output memory_logits;
  ft::Operation memory_init;
  {
    auto as_default = memory_graph.AsDefault();
    auto it = ft::data::Dataset::FromTensorSlices(std::vector<ft::Tensor>{images, labels})
                  .Shuffle(10000, 1)
                  .Repeat()
                  .Batch(kBatch)
                  .Prefetch(2)
                  .MakeInitializableIterator();
    memory_next = it.GetNext();
    memory_logits = Mlp(memory_next[0], rng);
    memory_init = it.initializer();
  }
  ft::Session memory_sess(memory_graph, options);
  memory_sess.Run({}, {}, {memory_init});

  // (b) TFRecord file of serialized tf.train.Examples, parsed inside the pipeline.
  ft::Graph tfrecord_graph;
  std::vector<ft::Output> parsed_outputs;
  ft::Output tfrecord_logits;
  ft::Operation tfrecord_init;
  {
    auto as_default = tfrecord_graph.AsDefault();
    auto batches = ft::data::Dataset::TFRecord({tfrecord_path}).Repeat().Batch(kBatch).Prefetch(2);
    auto it = ft::ops::MapParseExample(
                  batches,
                  {{"image", ft::ops::FixedLenFeature{ft::DT_FLOAT, ft::TensorShape({kFeatures})}},
                   {"label", ft::ops::FixedLenFeature{ft::DT_INT64, ft::TensorShape({})}}},
                  /*num_parallel_calls=*/2)
                  .Prefetch(2)
                  .MakeInitializableIterator();
    parsed_outputs = it.GetNext();  // image, label (features in key order)
    tfrecord_logits = Mlp(parsed_outputs[0], rng);
    tfrecord_init = it.initializer();
  }
  ft::Session tfrecord_sess(tfrecord_graph, options);
  tfrecord_sess.Run({}, {}, {tfrecord_init});

  double direct = 0, memory_pipeline = 0, memory_step = 0, tfrecord_pipeline = 0, tfrecord_step = 0;
  for (int round = 0; round < 5; ++round) {
    direct = std::max(direct, Rate(batches, [&] {
      direct_sess.Run({{x, feeds[next_feed++ % feeds.size()]}}, {direct_logits});
    }));
    memory_pipeline = std::max(memory_pipeline, Rate(batches * 2, [&] { memory_sess.Run({}, memory_next); }));
    memory_step = std::max(memory_step, Rate(batches, [&] { memory_sess.Run({}, {memory_logits}); }));
    tfrecord_pipeline = std::max(tfrecord_pipeline, Rate(batches, [&] { tfrecord_sess.Run({}, parsed_outputs); }));
    tfrecord_step = std::max(tfrecord_step, Rate(batches, [&] { tfrecord_sess.Run({}, {tfrecord_logits}); }));
  }
  Report("direct_feed", ("examples_per_sec" + suffix).c_str(), direct);
  ReportPipeline("memory" + suffix, memory_pipeline, memory_step, direct);
  ReportPipeline("tfrecord" + suffix, tfrecord_pipeline, tfrecord_step, direct);
}

}  // namespace

int main() {
  std::mt19937 rng(2);
  const ft::Tensor images = RandomTensor(ft::TensorShape({kExamples, kFeatures}), rng, 1.0f);
  std::vector<int64_t> label_values(kExamples);
  for (int i = 0; i < kExamples; ++i) label_values[i] = i % 10;
  const ft::Tensor labels = ft::Tensor::FromVector<int64_t>(label_values);
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
  // Default sessions: kernels split their work over every core, so the pipeline's background
  // thread competes with the step for CPU.
  Measure(ft::SessionOptions(), "", images, labels, path);
  // Steps on one intra-op thread, leaving a core to the pipeline (as on a machine where the
  // model does not use every core).
  ft::SessionOptions one_thread;
  one_thread.config.intra_op_parallelism_threads = 1;
  Measure(one_thread, "_intra1", images, labels, path);
  std::filesystem::remove(path);
  return 0;
}
