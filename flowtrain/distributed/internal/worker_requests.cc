#include "flowtrain/distributed/internal/worker_requests.h"

#include <charconv>
#include <string>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/core/types.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain::distributed {
namespace {

std::string ShapeText(const tensorflow::TensorShapeProto& shape) {
  return StrCat(
      "[", StrJoin(shape.dim(), ",", [](std::string* out, const auto& dim) { StrAppend(out, dim.size()); }),
      "]");
}

}  // namespace

std::pair<std::string_view, int> ParseTensorName(std::string_view name, std::string_view what) {
  const size_t colon = name.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    InvalidArgument(what, " '", name, "' is not a tensor name of the form node:index");
  }
  const std::string_view digits = name.substr(colon + 1);
  int index = -1;
  const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  // from_chars takes a sign and stops at the first non-digit; neither belongs in a name.
  if (digits.empty() || digits.front() == '-' || parsed.ec != std::errc() ||
      parsed.ptr != digits.data() + digits.size()) {
    InvalidArgument(what, " '", name, "' has no output index in [0, 2^31) after its ':'");
  }
  return {name.substr(0, colon), index};
}

void CheckTransferKey(std::string_view key, std::string_view what) {
  if (key.starts_with('^')) {
    if (key.size() == 1) InvalidArgument(what, " '", key, "' is a control token naming no node");
    return;
  }
  ParseTensorName(key, what);
}

int64_t DecodedTensorBytes(const tensorflow::TensorProto& proto, std::string_view what) {
  const auto dtype = static_cast<DataType>(proto.dtype());
  if (!IsSupportedTensorType(dtype) || IsRefType(dtype)) {
    InvalidArgument(what, " has dtype ", DataTypeString(dtype), ", which a tensor cannot hold");
  }
  const tensorflow::TensorShapeProto& shape = proto.tensor_shape();
  if (shape.unknown_rank()) InvalidArgument(what, " has a shape of unknown rank");
  int64_t elements = 1;
  for (const auto& dim : shape.dim()) {
    if (dim.size() < 0)
      InvalidArgument(what, " has shape ", ShapeText(shape), ": dimension ", dim.size(), " < 0");
    if (!MultiplySizes(elements, dim.size(), &elements)) {
      InvalidArgument(what, " has shape ", ShapeText(shape), ", more than 2^63-1 elements");
    }
  }
  int64_t bytes = 0;
  if (dtype == DT_STRING) {
    // Values beyond the last given repeat it, as TensorFromProto broadcasts them.
    int64_t chars = 0;
    for (const std::string& s : proto.string_val()) chars += static_cast<int64_t>(s.size());
    const int64_t given = proto.string_val_size();
    int64_t repeated = 0;
    if (given > 0 && given < elements &&
        !MultiplySizes(elements - given, static_cast<int64_t>(proto.string_val(given - 1).size()),
                       &repeated)) {
      repeated = -1;
    }
    if (repeated < 0 || !MultiplySizes(elements, static_cast<int64_t>(sizeof(std::string)), &bytes) ||
        !AddSizes(bytes, chars, &bytes) || !AddSizes(bytes, repeated, &bytes)) {
      InvalidArgument(what, " of ", DataTypeString(dtype), " ", ShapeText(shape),
                      " takes more than 2^63-1 bytes");
    }
    return bytes;
  }
  if (!MultiplySizes(elements, static_cast<int64_t>(DataTypeSize(dtype)), &bytes)) {
    InvalidArgument(what, " of ", DataTypeString(dtype), " ", ShapeText(shape),
                    " takes more than 2^63-1 bytes");
  }
  const size_t content = proto.tensor_content().size();
  if (content != 0 && content != static_cast<uint64_t>(bytes)) {
    InvalidArgument(what, " has ", content, " bytes of tensor_content, but ", DataTypeString(dtype), " ",
                    ShapeText(shape), " takes ", bytes);
  }
  return bytes;
}

Tensor DecodeTensor(const tensorflow::TensorProto& proto, std::string_view what) {
  DecodedTensorBytes(proto, what);
  try {
    return TensorFromProto(proto);
  } catch (const Error& e) {
    RethrowWithContext(e, StrCat(what, ": "));
  }
}

}  // namespace flowtrain::distributed
