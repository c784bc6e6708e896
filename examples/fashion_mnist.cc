// Trains a small CNN on Fashion-MNIST with MonitoredTrainingSession: checkpoints and
// TensorBoard logs in --model-dir, a progress bar, test accuracy at the end. Run it again and
// it resumes from the latest checkpoint. Data: Debian's dataset-fashion-mnist package.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "flowtrain/flowtrain.h"

namespace ft = flowtrain;
using ft::Output;

// Images as float [n, 28, 28, 1] in [0, 1] and labels as int64 [n].
std::pair<ft::Tensor, ft::Tensor> Load(const std::string& dir, const std::string& split) {
  ft::Tensor raw = ft::io::ReadIdxFile(dir + "/" + split + "-images-idx3-ubyte.gz");
  ft::Tensor raw_labels = ft::io::ReadIdxFile(dir + "/" + split + "-labels-idx1-ubyte.gz");
  const int64_t n = raw.dim_size(0);
  ft::Tensor images(ft::DT_FLOAT, ft::TensorShape({n, 28, 28, 1}));
  ft::Tensor labels(ft::DT_INT64, ft::TensorShape({n}));
  for (int64_t i = 0; i < raw.NumElements(); ++i) images.flat<float>()[i] = raw.flat<uint8_t>()[i] / 255.0f;
  for (int64_t i = 0; i < n; ++i) labels.flat<int64_t>()[i] = raw_labels.flat<uint8_t>()[i];
  return {images, labels};
}

Output Model(Output images) {
  Output x = ft::layers::Conv2D(images, 32, {3, 3}, {1, 1}, "same", ft::ops::Relu);
  x = ft::layers::MaxPooling2D(x, {2, 2}, {2, 2});
  x = ft::layers::Conv2D(x, 64, {3, 3}, {1, 1}, "same", ft::ops::Relu);
  x = ft::layers::MaxPooling2D(x, {2, 2}, {2, 2});
  x = ft::layers::Dense(ft::layers::Flatten(x), 128, ft::ops::Relu);
  return ft::layers::Dense(x, 10);
}

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN on Fashion-MNIST with MonitoredTrainingSession"};
  int64_t steps = 2800, batch_size = 64;
  double learning_rate = 1e-3;
  std::string model_dir = "runs/fashion_mnist", data_dir = "/usr/share/datasets/fashion-mnist";
  app.add_option("--steps", steps, "Training steps to run (more on each run)");
  app.add_option("--batch-size", batch_size, "Examples per step");
  app.add_option("--learning-rate", learning_rate, "Adam's learning rate");
  app.add_option("--model-dir", model_dir, "Checkpoints and TensorBoard logs");
  app.add_option("--data-dir", data_dir, "Where the Fashion-MNIST .gz files are");
  CLI11_PARSE(app, argc, argv);

  auto [train_images, train_labels] = Load(data_dir, "train");
  auto [test_images, test_labels] = Load(data_dir, "t10k");
  ft::Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(42);
  // The arrays are fed when the iterator is initialised, not baked into the graph.
  Output all_images = ft::ops::Placeholder(ft::DT_FLOAT, {-1, 28, 28, 1}, "all_images");
  Output all_labels = ft::ops::Placeholder(ft::DT_INT64, {-1}, "all_labels");
  auto it = ft::data::Dataset::FromTensorSlices({all_images, all_labels})
                .Shuffle(10000).Repeat().Batch(batch_size).Prefetch(2)
                .MakeInitializableIterator();
  std::vector<Output> batch = it.GetNext();
  Output images = batch[0], labels = batch[1];
  Output logits = Model(images);
  Output loss = ft::ops::ReduceMean(ft::ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits));
  Output correct = ft::ops::ReduceSum(ft::ops::Cast(
      ft::ops::Equal(ft::ops::ArgMax(logits, 1), labels), ft::DT_FLOAT));
  ft::summary::Scalar("loss", loss);
  ft::Variable step = ft::train::GetOrCreateGlobalStep();
  ft::Operation train_op = ft::train::AdamOptimizer(learning_rate).Minimize(loss, step);

  if (auto latest = ft::train::LatestCheckpoint(model_dir)) {
    std::printf("Resuming from %s\n", latest->c_str());
  }
  auto scaffold = std::make_shared<ft::train::Scaffold>();
  scaffold->local_init_op = ft::ops::Group({ft::train::Scaffold::DefaultLocalInitOp(g), it.initializer()});
  scaffold->local_init_feed_dict = {{all_images, train_images}, {all_labels, train_labels}};
  ft::train::MonitoredTrainingSessionOptions opts;
  opts.checkpoint_dir = model_dir;
  opts.scaffold = scaffold;
  opts.save_checkpoint_steps = int64_t{500};
  opts.log_step_count_steps = std::nullopt;  // the progress bar shows steps/s
  auto stop = std::make_shared<ft::train::StopAtStepHook>(ft::train::NumSteps{steps});
  opts.hooks = {stop, std::make_shared<ft::train::ProgressBarHook>(
                          ft::train::ProgressBarHook::Options{.num_steps = steps, .tensors = {{"loss", loss}}})};
  {
    auto sess = ft::train::MonitoredTrainingSession(opts);
    while (!sess->ShouldStop()) sess->Run({train_op});
  }  // closing saves the final checkpoint

  // Test accuracy, from the final checkpoint in a fresh session (feeding the images directly).
  ft::Session eval(g);
  scaffold->saver->Restore(eval, *ft::train::LatestCheckpoint(model_dir));
  double right = 0;
  const int64_t n = test_images.dim_size(0);
  for (int64_t i = 0; i < n; i += 1000) {
    const int64_t end = std::min(n, i + 1000);
    right += eval.Run({{images, test_images.Slice(i, end)}, {labels, test_labels.Slice(i, end)}},
                      {correct})[0].scalar<float>();
  }
  std::printf("Test accuracy after step %lld: %.2f%%\n",
              static_cast<long long>(step.value().Eval(eval).scalar<int64_t>()), 100.0 * right / n);
  return 0;
}
