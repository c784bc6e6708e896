#include "flowtrain/saved_model/signature_def_utils.h"

#include <set>

#include "flowtrain/core/error.h"
#include "flowtrain/core/types.h"
#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/saved_model/signature_constants.h"

namespace flowtrain::saved_model {
namespace {

std::string TypeName(tensorflow::DataType dtype) { return DataTypeString(static_cast<DataType>(dtype)); }

std::set<std::string> Keys(const google::protobuf::Map<std::string, tensorflow::TensorInfo>& map) {
  std::set<std::string> keys;
  for (const auto& [key, info] : map) keys.insert(key);
  return keys;
}

}  // namespace

tensorflow::TensorInfo BuildTensorInfo(const Output& tensor) {
  tensor.CheckValid("BuildTensorInfo");
  tensorflow::TensorInfo info;
  info.set_name(tensor.name());
  info.set_dtype(static_cast<tensorflow::DataType>(tensor.dtype()));
  *info.mutable_tensor_shape() = ShapeToProto(tensor.shape());
  return info;
}

tensorflow::SignatureDef BuildSignatureDef(const std::map<std::string, tensorflow::TensorInfo>& inputs,
                                           const std::map<std::string, tensorflow::TensorInfo>& outputs,
                                           const std::string& method_name) {
  tensorflow::SignatureDef signature;
  for (const auto& [key, info] : inputs) (*signature.mutable_inputs())[key] = info;
  for (const auto& [key, info] : outputs) (*signature.mutable_outputs())[key] = info;
  signature.set_method_name(method_name);
  return signature;
}

tensorflow::SignatureDef PredictSignatureDef(const std::map<std::string, Output>& inputs,
                                             const std::map<std::string, Output>& outputs) {
  if (inputs.empty()) InvalidArgument("Prediction `inputs` cannot be None or empty.");
  if (outputs.empty()) InvalidArgument("Prediction `outputs` cannot be None or empty.");
  std::map<std::string, tensorflow::TensorInfo> input_infos, output_infos;
  for (const auto& [key, tensor] : inputs) input_infos[key] = BuildTensorInfo(tensor);
  for (const auto& [key, tensor] : outputs) output_infos[key] = BuildTensorInfo(tensor);
  return BuildSignatureDef(input_infos, output_infos, kPredictMethodName);
}

tensorflow::SignatureDef ClassificationSignatureDef(const Output& examples, const Output& classes,
                                                    const Output& scores) {
  if (!examples) InvalidArgument("Classification `examples` cannot be None.");
  if (!classes && !scores) InvalidArgument("Classification `classes` and `scores` cannot both be None.");
  const tensorflow::TensorInfo input = BuildTensorInfo(examples);
  if (input.dtype() != tensorflow::DT_STRING) {
    InvalidArgument("Classification input tensors must be of type string. Found tensors of type ",
                    TypeName(input.dtype()), " (", input.name(), ")");
  }
  std::map<std::string, tensorflow::TensorInfo> outputs;
  if (classes) {
    tensorflow::TensorInfo info = BuildTensorInfo(classes);
    if (info.dtype() != tensorflow::DT_STRING) {
      InvalidArgument("Classification classes must be of type string Tensor. Found tensors of type ",
                      TypeName(info.dtype()), " (", info.name(), ")");
    }
    outputs[kClassifyOutputClasses] = std::move(info);
  }
  if (scores) {
    tensorflow::TensorInfo info = BuildTensorInfo(scores);
    if (info.dtype() != tensorflow::DT_FLOAT) {
      InvalidArgument("Classification scores must be a float Tensor. Found tensors of type ",
                      TypeName(info.dtype()), " (", info.name(), ")");
    }
    outputs[kClassifyOutputScores] = std::move(info);
  }
  return BuildSignatureDef({{kClassifyInputs, input}}, outputs, kClassifyMethodName);
}

tensorflow::SignatureDef RegressionSignatureDef(const Output& examples, const Output& predictions) {
  if (!examples) InvalidArgument("Regression `examples` cannot be None.");
  if (!predictions) InvalidArgument("Regression `predictions` cannot be None.");
  const tensorflow::TensorInfo input = BuildTensorInfo(examples);
  if (input.dtype() != tensorflow::DT_STRING) {
    InvalidArgument("Regression input tensors must be of type string. Found tensors with type ",
                    TypeName(input.dtype()), " (", input.name(), ")");
  }
  const tensorflow::TensorInfo output = BuildTensorInfo(predictions);
  if (output.dtype() != tensorflow::DT_FLOAT) {
    InvalidArgument("Regression output tensors must be of type float. Found tensors with type ",
                    TypeName(output.dtype()), " (", output.name(), ")");
  }
  return BuildSignatureDef({{kRegressInputs, input}}, {{kRegressOutputs, output}}, kRegressMethodName);
}

bool IsValidSignature(const tensorflow::SignatureDef& signature_def) {
  const auto& inputs = signature_def.inputs();
  const auto& outputs = signature_def.outputs();
  const std::string& method = signature_def.method_name();
  if (method == kPredictMethodName) return !inputs.empty() && !outputs.empty();
  if (method == kRegressMethodName) {
    return Keys(inputs) == std::set<std::string>{kRegressInputs} &&
           inputs.at(kRegressInputs).dtype() == tensorflow::DT_STRING &&
           Keys(outputs) == std::set<std::string>{kRegressOutputs} &&
           outputs.at(kRegressOutputs).dtype() == tensorflow::DT_FLOAT;
  }
  if (method == kClassifyMethodName) {
    if (Keys(inputs) != std::set<std::string>{kClassifyInputs} ||
        inputs.at(kClassifyInputs).dtype() != tensorflow::DT_STRING || outputs.empty()) {
      return false;
    }
    for (const auto& [key, info] : outputs) {
      if (key == kClassifyOutputClasses && info.dtype() == tensorflow::DT_STRING) continue;
      if (key == kClassifyOutputScores && info.dtype() == tensorflow::DT_FLOAT) continue;
      return false;
    }
    return true;
  }
  return false;
}

}  // namespace flowtrain::saved_model
