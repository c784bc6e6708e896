// The model the SavedModel tests export (here and in tests/tf): variables of both kinds, an
// asset read by the main op, and Predict, Classify and Regress signatures.
//
//   y = x·w + b + offset          x [?,2] float, w [2,2] ref variable, b [2] resource variable
//   offset [2]                    saved as zeros; the main op sets it from the asset file
//                                 offset.tfrecord (one record: the floats 0.5, -1.5)
//   scores = softmax(e·w + b + offset), classes = ["neg", "pos"], predictions = Σ(e·w + b + offset)
//                                 for e the feature "x" of serialized tf.Examples
//
// So a signature gives the expected values only if the variables were restored and the main op
// ran with the asset tensor fed the file's path in the SavedModel's assets/ directory.
#ifndef FLOWTRAIN_SAVED_MODEL_SAVED_MODEL_TEST_MODEL_H_
#define FLOWTRAIN_SAVED_MODEL_SAVED_MODEL_TEST_MODEL_H_

#include <cstring>
#include <string>
#include <vector>

#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/io/record_writer.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/parsing_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/proto/example.pb.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/saved_model/signature_constants.h"
#include "flowtrain/saved_model/signature_def_utils.h"

namespace flowtrain::saved_model::testing {

inline constexpr float kAssetOffset[2] = {0.5f, -1.5f};

// Writes offset.tfrecord into `dir` and returns its path.
inline std::string WriteOffsetAsset(const std::string& dir) {
  const std::string path = JoinPath(dir, "offset.tfrecord");
  io::RecordWriter writer(path);
  std::string bytes(sizeof(kAssetOffset), '\0');
  std::memcpy(bytes.data(), kAssetOffset, sizeof(kAssetOffset));
  writer.WriteRecord(bytes);
  writer.Close();
  return path;
}

// Serialized tf.Examples with the float feature "x" of two values each.
inline Tensor SerializedExamples(const std::vector<std::vector<float>>& rows) {
  std::vector<std::string> serialized;
  for (const std::vector<float>& row : rows) {
    tensorflow::Example example;
    auto& values = *(*example.mutable_features()->mutable_feature())["x"].mutable_float_list();
    for (float v : row) values.add_value(v);
    serialized.push_back(example.SerializeAsString());
  }
  return Tensor::FromVector<std::string>(serialized);
}

struct TestModel {
  // Builds the model in `graph`, its asset tensor naming `asset_path`.
  TestModel(Graph& graph, const std::string& asset_path) {
    auto as_default = graph.AsDefault();
    x = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1, 2}), "x");
    w = Variable(Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})), {.name = "w"});
    b = Variable(Tensor::FromVector<float>({0.25f, -0.75f}), {.name = "b", .use_resource = true});
    offset = Variable(Tensor::FromVector<float>({0, 0}), {.name = "offset", .trainable = false});
    y = ops::Identity(ops::Add(ops::Add(ops::MatMul(x, w), b), offset), "y");

    examples = ops::Placeholder(DT_STRING, PartialTensorShape({-1}), "examples");
    ops::ParsedExample parsed =
        ops::ParseExample(examples, {{"x", ops::FixedLenFeature{DT_FLOAT, TensorShape({2})}}});
    Output logits = ops::Add(ops::Add(ops::MatMul(parsed.dense.at("x"), w), b), offset);
    scores = ops::Softmax(logits, "scores");
    classes = ops::Const(Tensor::FromVector<std::string>({"neg", "pos"}), "classes");
    predictions = ops::ReduceSum(logits, {1}, false, "predictions");

    asset = ops::Const(asset_path.c_str(), "asset_path");
    data::Iterator it = data::Dataset::TFRecord(asset).MakeInitializableIterator();
    Output record;
    {
      auto after_init = graph.ControlDependencies({it.initializer()});
      record = it.GetNext()[0];
    }
    Output value = ops::Reshape(ops::DecodeRaw(record, DT_FLOAT), std::vector<int64_t>{2});
    main_op = ops::Group({offset.Assign(value).op()}, "main_op");
    init = ops::GlobalVariablesInitializer(&graph);
  }

  // Initializes the variables (offset stays zero until main_op runs).
  void Init(Session& session) const { session.Run({}, {}, {init}); }

  SignatureDefMap Signatures() const {
    return {{kDefaultServingSignatureDefKey, PredictSignatureDef({{"x", x}}, {{"y", y}})},
            {"classify", ClassificationSignatureDef(examples, classes, scores)},
            {"regress", RegressionSignatureDef(examples, predictions)}};
  }

  // y for `rows` computed here, with the offset the main op sets.
  static std::vector<float> ExpectedY(const std::vector<std::vector<float>>& rows) {
    std::vector<float> out;
    for (const std::vector<float>& r : rows) {
      out.push_back(r[0] * 1 + r[1] * 3 + 0.25f + kAssetOffset[0]);
      out.push_back(r[0] * 2 + r[1] * 4 - 0.75f + kAssetOffset[1]);
    }
    return out;
  }

  Output x, y, examples, scores, classes, predictions, asset;
  Variable w, b, offset;
  Operation main_op, init;
};

}  // namespace flowtrain::saved_model::testing

#endif  // FLOWTRAIN_SAVED_MODEL_SAVED_MODEL_TEST_MODEL_H_
