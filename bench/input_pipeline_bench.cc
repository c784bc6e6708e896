// Input pipeline throughput: how fast the tf.data-style pipelines deliver batches of 64, and
// how much the W2 training step of ops_bench (MLP 784-256-256-10, ReLU, softmax cross-entropy,
// SGD 0.1, batch 64: forward, gradients and the SGD update) slows down when it reads its
// batches from them instead of from tensors fed directly from memory.
//
//   (a) memory:   FromTensorSlices -> Shuffle(10000) -> Batch(64) -> Prefetch(AUTOTUNE)
//   (b) tfrecord: TFRecord file of serialized Examples -> Batch(64) -> batched ParseExample
//                 inside Map (ops::MapParseExample) -> Prefetch(AUTOTUNE)
//
// Each pipeline runs on one thread of its own (the prefetch producer): the step keeps both
// cores of the 2-core machine busy, so every cycle the pipeline spends, and every thread
// handoff, comes out of the step; a parallel map and a second prefetch stage cost more CPU
// and wakeups per batch than they save there, and one thread already delivers several times
// what the step consumes. The prefetch buffer is autotuned (16 batches here) and refilled in
// bursts from half empty, so the producer wakes every 8 steps rather than every step.
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
#include "ops_bench_data.h"

namespace ft = flowtrain;

namespace {

constexpr int kExamples = 20000;
constexpr int kBatch = 64;
constexpr int kFeatures = 784;

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

static_assert(kBatch == opsbench::kW2Batch && kFeatures == opsbench::kMlpIn, "the W2 workload of ops_bench");

ft::Tensor RandomTensor(ft::TensorShape shape, std::mt19937& rng, float scale) {
  ft::Tensor t(ft::DT_FLOAT, shape);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (float& v : t.flat<float>()) v = dist(rng);
  return t;
}

// The W2 training step of ops_bench on images `x` and int64 labels `y`: the MLP
// 784-256-256-10 with ReLU, the mean softmax cross-entropy, and SGD 0.1 on every weight.
struct TrainStep {
  ft::Operation train_op;
  ft::Output loss;
  ft::Operation init;
};

TrainStep W2(ft::Output x, ft::Output y) {
  const int sizes[] = {opsbench::kMlpIn, opsbench::kW2Hidden, opsbench::kW2Hidden, opsbench::kMlpClasses};
  ft::Output h = x;
  for (int layer = 0; layer < 3; ++layer) {
    ft::Tensor kernel(ft::DT_FLOAT, ft::TensorShape({sizes[layer], sizes[layer + 1]}));
    opsbench::FillUniform(kernel.data<float>(), kernel.NumElements(),
                          opsbench::kW2Seed + opsbench::kWeightSeedOffset + layer,
                          opsbench::GlorotLimit(sizes[layer], sizes[layer + 1]));
    h = ft::layers::Dense(h, sizes[layer + 1], layer < 2 ? ft::layers::Activation(ft::ops::Relu) : nullptr,
                          {.kernel_initializer = ft::ops::ConstantInitializer(kernel)});
  }
  TrainStep step;
  step.loss = ft::ops::ReduceMean(ft::ops::SparseSoftmaxCrossEntropyWithLogits(y, h));
  step.train_op = ft::train::GradientDescentOptimizer(opsbench::kSgdLearningRate).Minimize(step.loss);
  step.init = ft::ops::GlobalVariablesInitializer();
  return step;
}

// Examples per second of `run_batch` (which processes one batch of kBatch) over `batches`.
template <typename Fn>
double Rate(int batches, Fn&& run_batch) {
  for (int i = 0; i < 5; ++i) run_batch();  // warm up plans, buffers and threads
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < batches; ++i) run_batch();
  return batches * kBatch / Seconds(std::chrono::steady_clock::now() - start);
}

// Times `steps` calls of `run_step` (after one untimed call) and appends each duration to
// `seconds`.
template <typename Fn>
void TimeSteps(int steps, Fn&& run_step, std::vector<double>& seconds) {
  run_step();
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run_step();
    seconds.push_back(Seconds(std::chrono::steady_clock::now() - start));
  }
}

double Median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// Examples per second at the median step time.
double MedianRate(const std::vector<double>& seconds) { return kBatch / Median(seconds); }

// How much slower `steps` are than `reference` steps, in percent: the median over rounds of
// `round` steps each of the ratio of their median step times. Rounds last tens of
// milliseconds, so the two sides of a ratio ran under the same load from other processes.
double SlowdownPct(const std::vector<double>& steps, const std::vector<double>& reference, size_t round) {
  std::vector<double> ratios;
  for (size_t begin = 0; begin + round <= steps.size(); begin += round) {
    ratios.push_back(Median({steps.begin() + begin, steps.begin() + begin + round}) /
                     Median({reference.begin() + begin, reference.begin() + begin + round}));
  }
  return 100.0 * (Median(ratios) - 1.0);
}

void Report(const char* system, const char* metric, double value) {
  std::printf("RESULT input_pipeline %s %s %.6g\n", system, metric, value);
  std::fflush(stdout);
}

void ReportPipeline(const std::string& name, double pipeline, double step, double slowdown_pct,
                    double direct) {
  const std::string n(name);
  Report("flowtrain", (n + "_pipeline_examples_per_sec").c_str(), pipeline);
  Report("flowtrain", (n + "_step_examples_per_sec").c_str(), step);
  Report("flowtrain", (n + "_step_slowdown_pct").c_str(), slowdown_pct);
  Report("flowtrain", (n + "_pipeline_vs_step").c_str(), pipeline / direct);
}

// Runs the measurements with sessions configured by `options`; metric names get `suffix`.
// The machines this runs on are shared, so the contenders take turns in short rounds.
void Measure(const ft::SessionOptions& options, const std::string& suffix, const ft::Tensor& images,
             const ft::Tensor& labels, const std::string& tfrecord_path) {
  const int steps_per_round = 10;

  // Direct feeding: batches prepared in memory beforehand, fed to placeholders.
  ft::Graph direct_graph;
  ft::Output x, y;
  TrainStep direct_step;
  {
    auto as_default = direct_graph.AsDefault();
    x = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape({-1, kFeatures}), "x");
    y = ft::ops::Placeholder(ft::DT_INT64, ft::PartialTensorShape({-1}), "y");
    direct_step = W2(x, y);
  }
  ft::Session direct_sess(direct_graph, options);
  direct_sess.Run({}, {}, {direct_step.init});
  std::vector<std::pair<ft::Tensor, ft::Tensor>> feeds;
  for (int b = 0; b < kExamples / kBatch; ++b) {
    feeds.emplace_back(images.Slice(b * kBatch, (b + 1) * kBatch).DeepCopy(),
                       labels.Slice(b * kBatch, (b + 1) * kBatch).DeepCopy());
  }
  size_t next_feed = 0;

  // (a) In-memory dataset.
  ft::Graph memory_graph;
  std::vector<ft::Output> memory_next;
  TrainStep memory_step_ops;
  ft::Operation memory_init;
  {
    auto as_default = memory_graph.AsDefault();
    auto it = ft::data::Dataset::FromTensorSlices(std::vector<ft::Tensor>{images, labels})
                  .Shuffle(10000, 1)
                  .Repeat()
                  .Batch(kBatch)
                  .Prefetch(ft::data::kAutotune)
                  .MakeInitializableIterator();
    memory_next = it.GetNext();
    memory_step_ops = W2(memory_next[0], memory_next[1]);
    memory_init = it.initializer();
  }
  ft::Session memory_sess(memory_graph, options);
  memory_sess.Run({}, {}, {memory_init, memory_step_ops.init});

  // (b) TFRecord file of serialized tf.train.Examples, parsed inside the pipeline.
  ft::Graph tfrecord_graph;
  std::vector<ft::Output> parsed_outputs;
  TrainStep tfrecord_step_ops;
  ft::Operation tfrecord_init;
  {
    auto as_default = tfrecord_graph.AsDefault();
    auto it = ft::ops::MapParseExample(
                  ft::data::Dataset::TFRecord({tfrecord_path}).Repeat().Batch(kBatch),
                  {{"image", ft::ops::FixedLenFeature{ft::DT_FLOAT, ft::TensorShape({kFeatures})}},
                   {"label", ft::ops::FixedLenFeature{ft::DT_INT64, ft::TensorShape({})}}})
                  .Prefetch(ft::data::kAutotune)
                  .MakeInitializableIterator();
    parsed_outputs = it.GetNext();  // image, label (features in key order)
    tfrecord_step_ops = W2(parsed_outputs[0], parsed_outputs[1]);
    tfrecord_init = it.initializer();
  }
  ft::Session tfrecord_sess(tfrecord_graph, options);
  tfrecord_sess.Run({}, {}, {tfrecord_init, tfrecord_step_ops.init});

  // Training steps: the contenders take turns in many short rounds (in alternating order), so
  // that other processes' bursts of load hit all three alike; slowdowns compare step times
  // within each round. Pipelines alone: the best throughput of longer rounds.
  std::vector<double> direct_steps, memory_steps, tfrecord_steps;
  double memory_pipeline = 0, tfrecord_pipeline = 0;
  for (int round = 0; round < 80; ++round) {
    auto direct_round = [&] {
      TimeSteps(
          steps_per_round,
          [&] {
            const auto& [batch_x, batch_y] = feeds[next_feed++ % feeds.size()];
            direct_sess.Run({{x, batch_x}, {y, batch_y}}, {}, {direct_step.train_op});
          },
          direct_steps);
    };
    if (round % 2 == 0) direct_round();
    TimeSteps(
        steps_per_round, [&] { memory_sess.Run({}, {}, {memory_step_ops.train_op}); }, memory_steps);
    TimeSteps(
        steps_per_round, [&] { tfrecord_sess.Run({}, {}, {tfrecord_step_ops.train_op}); }, tfrecord_steps);
    if (round % 2 == 1) direct_round();
    if (round % 8 == 0) {
      memory_pipeline = std::max(memory_pipeline, Rate(400, [&] { memory_sess.Run({}, memory_next); }));
      tfrecord_pipeline =
          std::max(tfrecord_pipeline, Rate(200, [&] { tfrecord_sess.Run({}, parsed_outputs); }));
    }
  }
  const double direct = MedianRate(direct_steps);
  const double memory_step = MedianRate(memory_steps), tfrecord_step = MedianRate(tfrecord_steps);
  Report("direct_feed", ("examples_per_sec" + suffix).c_str(), direct);
  ReportPipeline("memory" + suffix, memory_pipeline, memory_step,
                 SlowdownPct(memory_steps, direct_steps, steps_per_round), direct);
  ReportPipeline("tfrecord" + suffix, tfrecord_pipeline, tfrecord_step,
                 SlowdownPct(tfrecord_steps, direct_steps, steps_per_round), direct);
}

}  // namespace

int main() {
  std::mt19937 rng(2);
  const ft::Tensor images = RandomTensor(ft::TensorShape({kExamples, kFeatures}), rng, 1.0f);
  std::vector<int64_t> label_values(kExamples);
  for (int i = 0; i < kExamples; ++i) label_values[i] = i % 10;
  const ft::Tensor labels = ft::Tensor::FromVector<int64_t>(label_values);
  const std::string path =
      (std::filesystem::temp_directory_path() / "ft_input_pipeline_bench.tfrecord").string();
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
