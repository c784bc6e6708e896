// Trains a small CNN on Fashion-MNIST with MonitoredTrainingSession: checkpoints and
// TensorBoard logs in --model-dir, a progress bar, test accuracy at the end. Run it again and
// it resumes from the latest checkpoint. Data: Debian's dataset-fashion-mnist package.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>

#include "fashion_mnist_model.h"

namespace ft = flowtrain;
using ft::Output;

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN on Fashion-MNIST with MonitoredTrainingSession"};
  int64_t steps = 2800, batch_size = 64;
  double learning_rate = 1e-3;
  std::string model_dir = "runs/fashion_mnist", data_dir = fashion_mnist::kDefaultDataDir;
  app.add_option("--steps", steps, "Training steps to run (more on each run)");
  app.add_option("--batch-size", batch_size, "Examples per step");
  app.add_option("--learning-rate", learning_rate, "Adam's learning rate");
  app.add_option("--model-dir", model_dir, "Checkpoints and TensorBoard logs");
  app.add_option("--data-dir", data_dir, "Where the Fashion-MNIST .gz files are");
  bool async_checkpoints = false;
  app.add_flag("--async-checkpoints", async_checkpoints,
               "Write checkpoints in the background while training goes on (beyond TF)");
  CLI11_PARSE(app, argc, argv);

  auto [train_images, train_labels] = fashion_mnist::Load(data_dir, "train");
  auto [test_images, test_labels] = fashion_mnist::Load(data_dir, "t10k");
  ft::Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(42);
  // The arrays are fed when the iterator is initialised, not baked into the graph.
  Output all_images = ft::ops::Placeholder(ft::DT_FLOAT, {-1, 28, 28, 1}, "all_images");
  Output all_labels = ft::ops::Placeholder(ft::DT_INT64, {-1}, "all_labels");
  auto it = ft::data::Dataset::FromTensorSlices({all_images, all_labels})
                .Shuffle(10000).Repeat().Batch(batch_size).Prefetch(ft::data::kAutotune)
                .MakeInitializableIterator();
  std::vector<Output> batch = it.GetNext();
  Output images = batch[0], labels = batch[1];
  Output logits = fashion_mnist::Model(images);
  Output loss = ft::ops::ReduceMean(ft::ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits));
  Output correct = fashion_mnist::CountCorrect(logits, labels);
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
  opts.async_checkpoint = async_checkpoints;
  opts.log_step_count_steps = std::nullopt;  // the progress bar shows steps/s
  auto stop = std::make_shared<ft::train::StopAtStepHook>(ft::train::NumSteps{steps});
  // Ctrl-C or a scheduler's SIGTERM ends the run after the step in flight, with a checkpoint.
  auto stop_on_signal = std::make_shared<ft::train::StopOnSignalHook>(
      ft::train::StopOnSignalHook::Options{.signals = {SIGINT, SIGTERM}});
  opts.hooks = {stop, stop_on_signal, std::make_shared<ft::train::ProgressBarHook>(
                          ft::train::ProgressBarHook::Options{.num_steps = steps, .tensors = {{"loss", loss}}})};
  {
    auto sess = ft::train::MonitoredTrainingSession(opts);
    while (!sess->ShouldStop()) sess->Run({train_op});
  }  // closing saves the final checkpoint
  if (auto signal = stop_on_signal->signal()) {
    std::printf("\nStopped by %s; saved %s, run again to resume\n", strsignal(*signal),
                ft::train::LatestCheckpoint(model_dir)->c_str());
    return 128 + *signal;
  }

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
