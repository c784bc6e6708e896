#include "flowtrain/core/types.h"

#include <array>

#include "flowtrain/core/error.h"

namespace flowtrain {
namespace {

struct TypeInfo {
  DataType dtype;
  const char* name;
  const char* enum_name;
  size_t size;
};

constexpr std::array<TypeInfo, 24> kTypes = {{
    {DT_INVALID, "invalid", "DT_INVALID", 0},
    {DT_FLOAT, "float", "DT_FLOAT", 4},
    {DT_DOUBLE, "double", "DT_DOUBLE", 8},
    {DT_INT32, "int32", "DT_INT32", 4},
    {DT_UINT8, "uint8", "DT_UINT8", 1},
    {DT_INT16, "int16", "DT_INT16", 2},
    {DT_INT8, "int8", "DT_INT8", 1},
    {DT_STRING, "string", "DT_STRING", 0},
    {DT_COMPLEX64, "complex64", "DT_COMPLEX64", 8},
    {DT_INT64, "int64", "DT_INT64", 8},
    {DT_BOOL, "bool", "DT_BOOL", 1},
    {DT_QINT8, "qint8", "DT_QINT8", 1},
    {DT_QUINT8, "quint8", "DT_QUINT8", 1},
    {DT_QINT32, "qint32", "DT_QINT32", 4},
    {DT_BFLOAT16, "bfloat16", "DT_BFLOAT16", 2},
    {DT_QINT16, "qint16", "DT_QINT16", 2},
    {DT_QUINT16, "quint16", "DT_QUINT16", 2},
    {DT_UINT16, "uint16", "DT_UINT16", 2},
    {DT_COMPLEX128, "complex128", "DT_COMPLEX128", 16},
    {DT_HALF, "half", "DT_HALF", 2},
    {DT_RESOURCE, "resource", "DT_RESOURCE", 0},
    {DT_VARIANT, "variant", "DT_VARIANT", 0},
    {DT_UINT32, "uint32", "DT_UINT32", 4},
    {DT_UINT64, "uint64", "DT_UINT64", 8},
}};

const TypeInfo* Find(DataType dtype) {
  const int base = BaseType(dtype);
  if (base < 0 || base >= static_cast<int>(kTypes.size())) return nullptr;
  return &kTypes[base];
}

}  // namespace

size_t DataTypeSize(DataType dtype) {
  const TypeInfo* info = Find(dtype);
  return info ? info->size : 0;
}

std::string DataTypeString(DataType dtype) {
  const TypeInfo* info = Find(dtype);
  if (info == nullptr) return StrCat("unknown dtype enum (", static_cast<int>(dtype), ")");
  return IsRefType(dtype) ? StrCat(info->name, "_ref") : std::string(info->name);
}

std::string DataTypeEnumName(DataType dtype) {
  const TypeInfo* info = Find(dtype);
  if (info == nullptr) return StrCat(static_cast<int>(dtype));
  return IsRefType(dtype) ? StrCat(info->enum_name, "_REF") : std::string(info->enum_name);
}

DataType DataTypeFromString(std::string_view name) {
  bool ref = false;
  if (name.size() > 4 && (name.ends_with("_ref") || name.ends_with("_REF"))) {
    ref = true;
    name.remove_suffix(4);
  }
  for (const TypeInfo& info : kTypes) {
    if (name == info.name || name == info.enum_name) {
      return ref ? MakeRefType(info.dtype) : info.dtype;
    }
  }
  return DT_INVALID;
}

bool IsSupportedTensorType(DataType dtype) {
  switch (BaseType(dtype)) {
    case DT_FLOAT:
    case DT_DOUBLE:
    case DT_INT32:
    case DT_UINT8:
    case DT_INT16:
    case DT_INT8:
    case DT_STRING:
    case DT_INT64:
    case DT_BOOL:
    case DT_BFLOAT16:
    case DT_UINT16:
    case DT_HALF:
    case DT_UINT32:
    case DT_UINT64:
      return true;
    default:
      return false;
  }
}

bool IsFloatingType(DataType dtype) {
  switch (BaseType(dtype)) {
    case DT_FLOAT:
    case DT_DOUBLE:
    case DT_HALF:
    case DT_BFLOAT16:
      return true;
    default:
      return false;
  }
}

bool IsIntegerType(DataType dtype) {
  switch (BaseType(dtype)) {
    case DT_INT8:
    case DT_INT16:
    case DT_INT32:
    case DT_INT64:
    case DT_UINT8:
    case DT_UINT16:
    case DT_UINT32:
    case DT_UINT64:
      return true;
    default:
      return false;
  }
}

void ThrowUnsupportedType(DataType dtype, std::string_view what) {
  InvalidArgument(what, ": data type ", DataTypeString(dtype), " is not supported");
}

}  // namespace flowtrain
