// The TF "evaluator job": a separate program that waits for each new checkpoint the
// fashion_mnist trainer writes, evaluates it on the 10,000 test images, and writes `accuracy`
// and `loss` summaries to <model-dir>/eval/, where TensorBoard shows them beside training's.
// Start it next to a training run (or after one, with --once):
//
//   evaluate_fashion_mnist --model-dir runs/fashion_mnist              # until 10 min pass without one
//   evaluate_fashion_mnist --model-dir runs/fashion_mnist --once       # the latest checkpoint only
#include <CLI/CLI.hpp>
#include <cstdio>

#include "fashion_mnist_model.h"
#include "report_errors.h"

namespace ft = flowtrain;
using ft::Output;

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"Evaluate each new Fashion-MNIST checkpoint and write eval summaries"};
  std::string model_dir = "runs/fashion_mnist", data_dir = fashion_mnist::kDefaultDataDir;
  double timeout_secs = 600;
  bool once = false;
  app.add_option("--model-dir", model_dir, "The trainer's checkpoint directory");
  app.add_option("--data-dir", data_dir, "Where the Fashion-MNIST .gz files are");
  app.add_option("--timeout", timeout_secs, "Stop after this many seconds without a new checkpoint");
  app.add_flag("--once", once, "Evaluate the latest checkpoint and exit");
  CLI11_PARSE(app, argc, argv);

  auto [test_images, test_labels] = fashion_mnist::Load(data_dir, "t10k");
  ft::Graph g;
  auto as_default = g.AsDefault();
  Output all_images = ft::ops::Placeholder(ft::DT_FLOAT, {-1, 28, 28, 1}, "all_images");
  Output all_labels = ft::ops::Placeholder(ft::DT_INT64, {-1}, "all_labels");
  auto it =
      ft::data::Dataset::FromTensorSlices({all_images, all_labels}).Batch(1000).MakeInitializableIterator();
  std::vector<Output> batch = it.GetNext();
  Output logits = fashion_mnist::Model(batch[0]);  // the trainer's variables, restored
  Output loss_sum = ft::ops::ReduceSum(ft::ops::SparseSoftmaxCrossEntropyWithLogits(batch[1], logits));
  Output correct = fashion_mnist::CountCorrect(logits, batch[1]);
  ft::Variable step = ft::train::GetOrCreateGlobalStep();

  // Every session restores the checkpoint, then the local init op starts the iterator.
  auto scaffold = std::make_shared<ft::train::Scaffold>();
  scaffold->local_init_op = ft::ops::Group({ft::train::Scaffold::DefaultLocalInitOp(g), it.initializer()});
  scaffold->local_init_feed_dict = {{all_images, test_images}, {all_labels, test_labels}};
  ft::summary::FileWriter writer(model_dir + "/eval");

  ft::train::CheckpointsIterator checkpoints(
      model_dir, {.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_secs * 1000))});
  std::optional<std::string> path = once ? ft::train::LatestCheckpoint(model_dir) : checkpoints.Next();
  if (!path) std::fprintf(stderr, "No checkpoint in %s\n", model_dir.c_str());
  for (; path; path = once ? std::nullopt : checkpoints.Next()) {
    auto creator = std::make_shared<ft::train::ChiefSessionCreator>(
        ft::train::ChiefSessionCreatorOptions{.scaffold = scaffold, .checkpoint_filename_with_path = *path});
    double right = 0, loss = 0;
    int64_t global_step = 0;
    {
      ft::train::MonitoredSession sess(creator);
      global_step = sess.Run({}, {step.value()})[0].scalar<int64_t>();
      while (!sess.ShouldStop()) {
        std::vector<ft::Tensor> out = sess.Run({}, {correct, loss_sum});
        // Empty once the iterator has gone through the test set: the session has stopped.
        if (!out[0].IsInitialized()) break;
        right += out[0].scalar<float>();
        loss += out[1].scalar<float>();
      }
    }
    const int64_t n = test_images.dim_size(0);
    const tensorflow::Summary summary = fashion_mnist::EvalSummary(right / n, loss / n);
    writer.AddSummary(summary, global_step);
    writer.Flush();
    std::printf("%s: step %lld, accuracy %.2f%%, loss %.4f\n", path->c_str(),
                static_cast<long long>(global_step), 100.0 * right / n, loss / n);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::ReportErrors(Main, argc, argv); }
