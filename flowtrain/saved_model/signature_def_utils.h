// Building SignatureDefs from graph tensors (TF's tf.compat.v1.saved_model.signature_def_utils
// and build_tensor_info): what a SavedModel's callers see of a graph, the named inputs to feed
// and outputs to fetch.
//
//   std::map<std::string, tensorflow::SignatureDef> signatures = {
//       {saved_model::kDefaultServingSignatureDefKey,
//        saved_model::PredictSignatureDef({{"x", x}}, {{"y", y}})},
//       {"classify", saved_model::ClassificationSignatureDef(serialized, classes, scores)},
//   };
//
// Invalid arguments throw InvalidArgument with TF's ValueError wording.
#ifndef FLOWTRAIN_SAVED_MODEL_SIGNATURE_DEF_UTILS_H_
#define FLOWTRAIN_SAVED_MODEL_SIGNATURE_DEF_UTILS_H_

#include <map>
#include <string>

#include "flowtrain/graph/operation.h"
#include "flowtrain/proto/meta_graph.pb.h"

namespace flowtrain::saved_model {

// Signature key -> SignatureDef, as the builder takes them.
using SignatureDefMap = std::map<std::string, tensorflow::SignatureDef>;

// The TensorInfo of `tensor`: its name ("dense/BiasAdd:0"), dtype and static shape (unknown
// dimensions as -1, an unknown rank as unknown_rank). InvalidArgument for a null or invalid
// Output.
tensorflow::TensorInfo BuildTensorInfo(const Output& tensor);

// A SignatureDef of the given inputs, outputs and method name; nothing is checked.
tensorflow::SignatureDef BuildSignatureDef(const std::map<std::string, tensorflow::TensorInfo>& inputs,
                                           const std::map<std::string, tensorflow::TensorInfo>& outputs,
                                           const std::string& method_name);

// A Predict signature (kPredictMethodName) over any tensors. InvalidArgument("Prediction
// `inputs` cannot be None or empty.") for no inputs, the same for outputs.
tensorflow::SignatureDef PredictSignatureDef(const std::map<std::string, Output>& inputs,
                                             const std::map<std::string, Output>& outputs);

// A Classify signature: `examples` a string tensor of serialized tf.Examples (key "inputs"),
// `classes` a string tensor (key "classes") and `scores` a float tensor (key "scores"); either
// of the two may be a null Output (absent), not both. InvalidArgument with TF's message for a
// null `examples`, both outputs absent, or a wrong dtype.
tensorflow::SignatureDef ClassificationSignatureDef(const Output& examples, const Output& classes,
                                                    const Output& scores);

// A Regress signature: `examples` a string tensor (key "inputs"), `predictions` a float tensor
// (key "outputs"). InvalidArgument with TF's message for a null tensor or a wrong dtype.
tensorflow::SignatureDef RegressionSignatureDef(const Output& examples, const Output& predictions);

// Whether `signature_def` is a valid Predict, Classify or Regress signature as TF Serving
// expects (TF's is_valid_signature): method name, input/output keys and their dtypes.
bool IsValidSignature(const tensorflow::SignatureDef& signature_def);

}  // namespace flowtrain::saved_model

#endif  // FLOWTRAIN_SAVED_MODEL_SIGNATURE_DEF_UTILS_H_
