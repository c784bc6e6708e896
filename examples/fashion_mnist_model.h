// The Fashion-MNIST data and CNN shared by the trainer (fashion_mnist.cc) and the evaluator
// job (evaluate_fashion_mnist.cc): both build the same layers, so the variables the trainer
// saves are the ones the evaluator restores.
#ifndef FLOWTRAIN_EXAMPLES_FASHION_MNIST_MODEL_H_
#define FLOWTRAIN_EXAMPLES_FASHION_MNIST_MODEL_H_

#include <string>
#include <utility>

#include "flowtrain/flowtrain.h"

namespace fashion_mnist {

// Where Debian's dataset-fashion-mnist package puts the IDX files.
inline const std::string kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

// The images of a split ("train" or "t10k") as float [n, 28, 28, 1] in [0, 1] and the labels
// as int64 [n].
inline std::pair<flowtrain::Tensor, flowtrain::Tensor> Load(const std::string& dir,
                                                            const std::string& split) {
  using flowtrain::Tensor, flowtrain::TensorShape;
  Tensor raw = flowtrain::io::ReadIdxFile(dir + "/" + split + "-images-idx3-ubyte.gz");
  Tensor raw_labels = flowtrain::io::ReadIdxFile(dir + "/" + split + "-labels-idx1-ubyte.gz");
  const int64_t n = raw.dim_size(0);
  Tensor images(flowtrain::DT_FLOAT, TensorShape({n, 28, 28, 1}));
  Tensor labels(flowtrain::DT_INT64, TensorShape({n}));
  for (int64_t i = 0; i < raw.NumElements(); ++i) images.flat<float>()[i] = raw.flat<uint8_t>()[i] / 255.0f;
  for (int64_t i = 0; i < n; ++i) labels.flat<int64_t>()[i] = raw_labels.flat<uint8_t>()[i];
  return {images, labels};
}

// Logits [batch, 10] of a small CNN over images [batch, 28, 28, 1].
inline flowtrain::Output Model(flowtrain::Output images) {
  namespace layers = flowtrain::layers;
  flowtrain::Output x = layers::Conv2D(images, 32, {3, 3}, {1, 1}, "same", flowtrain::ops::Relu);
  x = layers::MaxPooling2D(x, {2, 2}, {2, 2});
  x = layers::Conv2D(x, 64, {3, 3}, {1, 1}, "same", flowtrain::ops::Relu);
  x = layers::MaxPooling2D(x, {2, 2}, {2, 2});
  x = layers::Dense(layers::Flatten(x), 128, flowtrain::ops::Relu);
  return layers::Dense(x, 10);
}

// The number of correct predictions in the batch, as a float scalar.
inline flowtrain::Output CountCorrect(flowtrain::Output logits, flowtrain::Output labels) {
  namespace ops = flowtrain::ops;
  return ops::ReduceSum(ops::Cast(ops::Equal(ops::ArgMax(logits, 1), labels), flowtrain::DT_FLOAT));
}

// The eval job's summary, as tf.estimator writes it to <model-dir>/eval: `accuracy` and
// `loss` as scalars.
inline tensorflow::Summary EvalSummary(double accuracy, double loss) {
  tensorflow::Summary summary;
  for (auto [tag, value] : {std::pair{"accuracy", accuracy}, std::pair{"loss", loss}}) {
    tensorflow::Summary::Value* v = summary.add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return summary;
}

}  // namespace fashion_mnist

#endif  // FLOWTRAIN_EXAMPLES_FASHION_MNIST_MODEL_H_
