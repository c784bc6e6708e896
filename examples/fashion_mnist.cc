// Trains a small CNN on Fashion-MNIST with MonitoredTrainingSession: checkpoints and
// TensorBoard logs in --model-dir, a progress bar, test accuracy at the end. Run it again and
// it resumes from the latest checkpoint. Data: Debian's dataset-fashion-mnist package.
//
// TensorBoard shows what a tf.estimator run shows: `loss`, `accuracy` (of each training
// batch), `learning_rate` and `global_step/sec` every 100 steps, the weights' histograms and
// a few input images every --histogram-steps steps (they cost more than scalars to compute),
// and the test set's `accuracy` and `loss` in the `eval` subdirectory.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>

#include "fashion_mnist_model.h"
#include "report_errors.h"

namespace ft = flowtrain;
using ft::Output;

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"Train a CNN on Fashion-MNIST with MonitoredTrainingSession"};
  int64_t steps = 2800, batch_size = 64;
  double learning_rate = 1e-3;
  std::string model_dir = "runs/fashion_mnist", data_dir = fashion_mnist::kDefaultDataDir;
  app.add_option("--steps", steps, "Training steps to run (more on each run)");
  app.add_option("--batch-size", batch_size, "Examples per step");
  app.add_option("--learning-rate", learning_rate, "Adam's learning rate");
  app.add_option("--model-dir", model_dir, "Checkpoints and TensorBoard logs");
  app.add_option("--data-dir", data_dir, "Where the Fashion-MNIST .gz files are");
  int64_t histogram_steps = 500;
  app.add_option("--histogram-steps", histogram_steps, "Steps between weight histograms and input images");
  int64_t checkpoint_steps = 500;
  app.add_option("--checkpoint-steps", checkpoint_steps, "Steps between checkpoints");
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
                .Shuffle(10000)
                .Repeat()
                .Batch(batch_size)
                .Prefetch(ft::data::kAutotune)
                .MakeInitializableIterator();
  std::vector<Output> batch = it.GetNext();
  Output images = batch[0], labels = batch[1];
  Output logits = fashion_mnist::Model(images);
  Output loss = ft::ops::ReduceMean(ft::ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits));
  Output correct = fashion_mnist::CountCorrect(logits, labels);
  Output lr = ft::ops::Const(static_cast<float>(learning_rate), "adam_learning_rate");
  ft::summary::Scalar("loss", loss);
  ft::summary::Scalar("accuracy",
                      ft::ops::RealDiv(correct, ft::ops::Cast(ft::ops::Size(labels), ft::DT_FLOAT)));
  ft::summary::Scalar("learning_rate", lr);
  ft::Variable step = ft::train::GetOrCreateGlobalStep();
  ft::Operation train_op = ft::train::AdamOptimizer(lr).Minimize(loss, step);
  // Histograms and images go into a collection of their own, written by a second, sparser
  // SummarySaverHook: the default one merges only GraphKeys::kSummaries (the scalars).
  const std::vector<std::string> sparse = {"sparse_summaries"};
  std::vector<Output> sparse_summaries = {
      ft::summary::Image("images", images, {.max_outputs = 4, .collections = sparse})};
  for (const ft::Variable& v : ft::ops::TrainableVariables()) {
    sparse_summaries.push_back(
        ft::summary::Histogram("weights/" + v.op().name(), v, {.collections = sparse}));
  }
  Output sparse_summary_op = ft::summary::Merge(sparse_summaries);

  if (auto latest = ft::train::LatestCheckpoint(model_dir)) {
    std::printf("Resuming from %s\n", latest->c_str());
  }
  auto scaffold = std::make_shared<ft::train::Scaffold>();
  scaffold->local_init_op = ft::ops::Group({ft::train::Scaffold::DefaultLocalInitOp(g), it.initializer()});
  scaffold->local_init_feed_dict = {{all_images, train_images}, {all_labels, train_labels}};
  ft::train::MonitoredTrainingSessionOptions opts;
  opts.checkpoint_dir = model_dir;
  opts.scaffold = scaffold;
  opts.save_checkpoint_steps = checkpoint_steps;
  opts.async_checkpoint = async_checkpoints;
  // TF's global_step/sec every 100 steps. Its log lines, like the checkpoint saver's, are
  // printed above the progress bar (below).
  opts.log_step_count_steps = 100;
  auto stop = std::make_shared<ft::train::StopAtStepHook>(ft::train::NumSteps{steps});
  // Ctrl-C or a scheduler's SIGTERM ends the run after the step in flight, with a checkpoint.
  auto stop_on_signal = std::make_shared<ft::train::StopOnSignalHook>(
      ft::train::StopOnSignalHook::Options{.signals = {SIGINT, SIGTERM}});
  // Both summary savers are ours rather than the session's default, for their order: each
  // writes a SessionLog START at its first step, and TensorBoard drops what was written at
  // that step before a START. The sparse one goes first, so the first step's histograms and
  // images are dropped (the next ones come --histogram-steps later) and its scalars kept.
  opts.save_summaries_steps = std::nullopt;
  auto sparse_saver = std::make_shared<ft::train::SummarySaverHook>(ft::train::SummarySaverHookOptions{
      .every_n_steps = histogram_steps, .output_dir = model_dir, .summary_op = sparse_summary_op});
  auto scalar_saver = std::make_shared<ft::train::SummarySaverHook>(ft::train::SummarySaverHookOptions{
      .every_n_steps = 100, .output_dir = model_dir, .scaffold = scaffold});
  opts.hooks = {stop, stop_on_signal, sparse_saver, scalar_saver,
                std::make_shared<ft::train::ProgressBarHook>(
                    ft::train::ProgressBarHook::Options{.num_steps = steps, .tensors = {{"loss", loss}}})};
  if (isatty(STDERR_FILENO)) {
    // The bar is redrawn in place on stderr; a log line first clears it, and the bar comes
    // back below the line at its next redraw.
    ft::SetLogSink(
        [](ft::LogSeverity, const std::string& line) { std::fprintf(stderr, "\r\033[K%s\n", line.c_str()); });
  }
  {
    auto sess = ft::train::MonitoredTrainingSession(opts);
    while (!sess->ShouldStop()) sess->Run({train_op});
    // Close, not the destructor: it saves the final checkpoint and throws if that save fails
    // (a full disk), where the destructor could only log it.
    try {
      sess->Close();
    } catch (const ft::Error& e) {
      if (auto signal = stop_on_signal->signal()) {
        ft::RethrowWithContext(e, std::string("stopped by ") + strsignal(*signal) +
                                      " but the final checkpoint was not saved, run again to resume from "
                                      "the last one: ");
      }
      throw;
    }
  }
  if (auto signal = stop_on_signal->signal()) {
    std::printf("\nStopped by %s; saved %s, run again to resume\n", strsignal(*signal),
                ft::train::LatestCheckpoint(model_dir)->c_str());
    return 128 + *signal;
  }

  // Test accuracy, from the final checkpoint in a fresh session (feeding the images directly).
  ft::Session eval(g);
  scaffold->saver->Restore(eval, *ft::train::LatestCheckpoint(model_dir));
  double right = 0, loss_sum = 0;
  const int64_t n = test_images.dim_size(0);
  for (int64_t i = 0; i < n; i += 1000) {
    const int64_t end = std::min(n, i + 1000);
    std::vector<ft::Tensor> out =
        eval.Run({{images, test_images.Slice(i, end)}, {labels, test_labels.Slice(i, end)}}, {correct, loss});
    right += out[0].scalar<float>();
    loss_sum += out[1].scalar<float>() * (end - i);
  }
  const int64_t final_step = step.value().Eval(eval).scalar<int64_t>();
  // The eval job's summaries, as tf.estimator writes them: <model-dir>/eval, same tags.
  const tensorflow::Summary summary = fashion_mnist::EvalSummary(right / n, loss_sum / n);
  ft::summary::FileWriter eval_writer(model_dir + "/eval");
  eval_writer.AddSummary(summary, final_step);
  eval_writer.Close();
  std::printf("Test accuracy after step %lld: %.2f%%\n", static_cast<long long>(final_step),
              100.0 * right / n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::ReportErrors(Main, argc, argv); }
