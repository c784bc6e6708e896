#include "flowtrain/io/checkpoint_reader.h"

#include "flowtrain/core/str_util.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain::io {
namespace {

// Slice entries of partitioned variables are keyed by TF's EncodeTensorNameSlice, whose
// OrderedCode encoding starts with the number 0, i.e. a 0 byte; variable names never do.
bool IsSliceKey(std::string_view key) { return !key.empty() && key.front() == '\0'; }

}  // namespace

bool CheckpointReader::HasTensor(std::string_view name) const {
  return !IsSliceKey(name) && reader_.Contains(name);
}

std::map<std::string, TensorShape> CheckpointReader::GetVariableToShapeMap() const {
  std::map<std::string, TensorShape> shapes;
  for (const auto& [key, entry] : reader_.entries()) {
    if (!IsSliceKey(key)) shapes.emplace(key, ShapeFromProto(entry.shape()));
  }
  return shapes;
}

std::map<std::string, DataType> CheckpointReader::GetVariableToDataTypeMap() const {
  std::map<std::string, DataType> dtypes;
  for (const auto& [key, entry] : reader_.entries()) {
    if (!IsSliceKey(key)) dtypes.emplace(key, static_cast<DataType>(entry.dtype()));
  }
  return dtypes;
}

std::string CheckpointReader::DebugString() const {
  std::string out;
  for (const auto& [key, entry] : reader_.entries()) {
    if (IsSliceKey(key)) continue;
    StrAppend(&out, key, " (", DataTypeEnumName(static_cast<DataType>(entry.dtype())), ") ",
              ShapeFromProto(entry.shape()).DebugString(), "\n");
  }
  return out;
}

}  // namespace flowtrain::io
