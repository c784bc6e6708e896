// TF's SignatureDef keys and method names (tf.saved_model.signature_constants): what
// TensorFlow Serving's Predict, Classify and Regress APIs expect of a signature.
//
//   signatures[saved_model::kDefaultServingSignatureDefKey] =
//       saved_model::PredictSignatureDef({{"x", x}}, {{"y", y}});
#ifndef FLOWTRAIN_SAVED_MODEL_SIGNATURE_CONSTANTS_H_
#define FLOWTRAIN_SAVED_MODEL_SIGNATURE_CONSTANTS_H_

namespace flowtrain::saved_model {

// The key of the signature a server uses when a request names none.
inline constexpr char kDefaultServingSignatureDefKey[] = "serving_default";

// Predict: any inputs and outputs.
inline constexpr char kPredictMethodName[] = "tensorflow/serving/predict";
inline constexpr char kPredictInputs[] = "inputs";
inline constexpr char kPredictOutputs[] = "outputs";

// Classify: serialized tf.Examples in, string classes and/or float scores out.
inline constexpr char kClassifyMethodName[] = "tensorflow/serving/classify";
inline constexpr char kClassifyInputs[] = "inputs";
inline constexpr char kClassifyOutputClasses[] = "classes";
inline constexpr char kClassifyOutputScores[] = "scores";

// Regress: serialized tf.Examples in, float predictions out.
inline constexpr char kRegressMethodName[] = "tensorflow/serving/regress";
inline constexpr char kRegressInputs[] = "inputs";
inline constexpr char kRegressOutputs[] = "outputs";

}  // namespace flowtrain::saved_model

#endif  // FLOWTRAIN_SAVED_MODEL_SIGNATURE_CONSTANTS_H_
