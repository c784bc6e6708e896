// A tf.data input pipeline from TFRecord files: records are shuffled, repeated and batched
// as serialized strings, prefetched on a background thread, and each batch is parsed in the
// graph with one vectorized ParseExample (batch before parsing, as TF's input-pipeline guide
// advises). The iterator's OutOfRange after the last epoch stops the session, a clean end.
// The data: `fashion_mnist_to_tfrecords --out-dir data/fashion_mnist` first.
//
//   dataset_pipeline --records data/fashion_mnist/train.tfrecords --epochs 2
#include <CLI/CLI.hpp>
#include <cstdio>

#include "report_errors.h"
#include "train_until_input_ends.h"

namespace ft = flowtrain;
namespace ops = ft::ops;
using ft::Output;

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"Train an MLP from TFRecord files through a tf.data pipeline"};
  std::vector<std::string> records = {"data/fashion_mnist/train.tfrecords"};
  std::string model_dir = "runs/dataset_pipeline";
  int64_t epochs = 1, batch_size = 100;
  app.add_option("--records", records, "TFRecord files of Examples (image_raw, label)");
  app.add_option("--model-dir", model_dir, "Checkpoints and TensorBoard logs");
  app.add_option("--epochs", epochs, "Passes over the files");
  app.add_option("--batch-size", batch_size, "Examples per step");
  CLI11_PARSE(app, argc, argv);

  ft::Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(7);
  auto it = ft::data::Dataset::TFRecord(records)
                .Shuffle(10000)
                .Repeat(epochs)
                .Batch(batch_size)
                .Prefetch(ft::data::kAutotune)
                .MakeInitializableIterator();
  Output serialized = it.GetNext()[0];  // [batch] strings
  ops::ParsedExample example =
      ops::ParseExample(serialized, {{"image_raw", ops::FixedLenFeature{ft::DT_STRING, ft::TensorShape({})}},
                                     {"label", ops::FixedLenFeature{ft::DT_INT64, ft::TensorShape({})}}});
  Output pixels = ops::Reshape(ops::DecodeRaw(example.dense.at("image_raw"), ft::DT_UINT8), {-1, 784});
  Output images = examples::CenteredPixels(pixels);

  // The iterator starts (again, on every new session) with the local variables.
  auto scaffold = std::make_shared<ft::train::Scaffold>();
  scaffold->local_init_op = ops::Group({ft::train::Scaffold::DefaultLocalInitOp(g), it.initializer()});
  const int64_t steps = examples::TrainUntilInputEnds(images, example.dense.at("label"), model_dir, scaffold);
  std::printf("Trained %lld steps (%lld epochs of %lld-example batches); checkpoints in %s\n",
              static_cast<long long>(steps), static_cast<long long>(epochs),
              static_cast<long long>(batch_size), model_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::ReportErrors(Main, argc, argv); }
