// Converts Fashion-MNIST into TFRecord files of tf.train.Example protos, as TensorFlow's
// convert_to_records.py does for MNIST: each example has `image_raw` (the 784 pixel bytes),
// `label`, `height`, `width` and `depth`. TensorFlow reads the files as they are; the
// queue_pipeline and dataset_pipeline examples train from them.
//
//   fashion_mnist_to_tfrecords --out-dir data/fashion_mnist     # train.tfrecords, test.tfrecords
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "fashion_mnist_model.h"
#include "flowtrain/proto/example.pb.h"
#include "report_errors.h"

namespace ft = flowtrain;

tensorflow::Feature Int64Feature(int64_t value) {
  tensorflow::Feature feature;
  feature.mutable_int64_list()->add_value(value);
  return feature;
}

// Writes the first `limit` examples (all when negative) of a split; returns how many.
int64_t Convert(const std::string& data_dir, const std::string& split, const std::string& path,
                int64_t limit) {
  ft::Tensor images =
      ft::io::ReadIdxFile(data_dir + "/" + split + "-images-idx3-ubyte.gz");  // uint8 [n,28,28]
  ft::Tensor labels = ft::io::ReadIdxFile(data_dir + "/" + split + "-labels-idx1-ubyte.gz");  // uint8 [n]
  const int64_t n = limit < 0 ? images.dim_size(0) : std::min(limit, images.dim_size(0));
  const int64_t rows = images.dim_size(1), cols = images.dim_size(2), pixels = rows * cols;
  ft::io::RecordWriter writer(path);
  tensorflow::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  features["height"] = Int64Feature(rows);
  features["width"] = Int64Feature(cols);
  features["depth"] = Int64Feature(1);
  for (int64_t i = 0; i < n; ++i) {
    features["label"] = Int64Feature(labels.flat<uint8_t>()[i]);
    const char* image = reinterpret_cast<const char*>(images.data<uint8_t>()) + i * pixels;
    tensorflow::BytesList& image_raw = *features["image_raw"].mutable_bytes_list();
    image_raw.clear_value();
    image_raw.add_value(image, pixels);
    writer.WriteRecord(example.SerializeAsString());
  }
  writer.Close();
  std::printf("Wrote %lld examples to %s\n", static_cast<long long>(n), path.c_str());
  return n;
}

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"Write Fashion-MNIST as TFRecord files of tf.train.Example"};
  std::string out_dir = "data/fashion_mnist", data_dir = fashion_mnist::kDefaultDataDir;
  int64_t limit = -1;
  app.add_option("--out-dir", out_dir, "Where train.tfrecords and test.tfrecords go");
  app.add_option("--data-dir", data_dir, "Where the Fashion-MNIST .gz files are");
  app.add_option("--limit", limit, "Write only this many examples of each split");
  CLI11_PARSE(app, argc, argv);
  std::filesystem::create_directories(out_dir);
  Convert(data_dir, "train", out_dir + "/train.tfrecords", limit);
  Convert(data_dir, "t10k", out_dir + "/test.tfrecords", limit);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::ReportErrors(Main, argc, argv); }
