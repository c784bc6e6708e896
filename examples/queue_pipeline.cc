// A TF1 queue-based input pipeline: file names from StringInputProducer, records from a
// TFRecordReader, one Example parsed per record, and ShuffleBatch assembling batches on
// QueueRunner threads, which MonitoredTrainingSession starts and stops. Training ends when the
// epochs run out (the queues raise OutOfRange, which stops the session: a clean end).
// The data: `fashion_mnist_to_tfrecords --out-dir data/fashion_mnist` first.
//
//   queue_pipeline --records data/fashion_mnist/train.tfrecords --epochs 1
#include <CLI/CLI.hpp>
#include <cstdio>

#include "report_errors.h"
#include "train_until_input_ends.h"

namespace ft = flowtrain;
namespace ops = ft::ops;
using ft::Output;

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"Train an MLP from TFRecord files through queues and QueueRunners"};
  std::vector<std::string> records = {"data/fashion_mnist/train.tfrecords"};
  std::string model_dir = "runs/queue_pipeline";
  int64_t epochs = 1;
  int batch_size = 100;
  app.add_option("--records", records, "TFRecord files of Examples (image_raw, label)");
  app.add_option("--model-dir", model_dir, "Checkpoints and TensorBoard logs");
  app.add_option("--epochs", epochs, "Passes over the files");
  app.add_option("--batch-size", batch_size, "Examples per step");
  CLI11_PARSE(app, argc, argv);

  ft::Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(7);
  // One record per run of `serialized`, file after file, `epochs` times over.
  ops::FIFOQueue filenames = ft::train::StringInputProducer(records, {.num_epochs = epochs});
  ops::TFRecordReader reader;
  Output serialized = reader.Read(filenames).second;
  ops::ParsedExample example = ops::ParseSingleExample(
      serialized, {{"image_raw", ops::FixedLenFeature{ft::DT_STRING, ft::TensorShape({})}},
                   {"label", ops::FixedLenFeature{ft::DT_INT64, ft::TensorShape({})}}});
  Output pixels = ops::Reshape(ops::DecodeRaw(example.dense.at("image_raw"), ft::DT_UINT8), {784});
  Output image = examples::CenteredPixels(pixels);
  // Two threads parse examples into a queue that keeps 1000 to shuffle among.
  std::vector<Output> batch = ft::train::ShuffleBatch({image, example.dense.at("label")}, batch_size,
                                                      /*capacity=*/1000 + 3 * batch_size,
                                                      /*min_after_dequeue=*/1000, {.num_threads = 2});

  const int64_t steps = examples::TrainUntilInputEnds(batch[0], batch[1], model_dir);
  std::printf("Trained %lld steps (%lld epochs of %d-example batches); checkpoints in %s\n",
              static_cast<long long>(steps), static_cast<long long>(epochs), batch_size, model_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::ReportErrors(Main, argc, argv); }
