// DataType: the element type of a tensor, numbered exactly as TensorFlow's `types.proto` so
// the numbers can be written to checkpoints, GraphDefs and TensorProtos unchanged.
//
//   DataType dt = DataTypeToEnum<float>::value;      // DT_FLOAT
//   size_t bytes = DataTypeSize(dt);                  // 4
//   std::string name = DataTypeString(dt);            // "float"
//
// C++ element types: float, double, int8..int64, uint8/16/32/64, bool, std::string (DT_STRING),
// Eigen::half (DT_HALF), Eigen::bfloat16 (DT_BFLOAT16), ResourceHandle (DT_RESOURCE) and
// std::any (DT_VARIANT).
#ifndef FLOWTRAIN_CORE_TYPES_H_
#define FLOWTRAIN_CORE_TYPES_H_

#include <any>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <Eigen/Core>

namespace flowtrain {

// Append-only; equal to TF's enum. Reference types (value + 100) are how TF1 marks the
// outputs of VariableV2 in op signatures; we keep them for GraphDef compatibility only.
enum DataType : int {
  DT_INVALID = 0,
  DT_FLOAT = 1,
  DT_DOUBLE = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 5,
  DT_INT8 = 6,
  DT_STRING = 7,
  DT_COMPLEX64 = 8,
  DT_INT64 = 9,
  DT_BOOL = 10,
  DT_QINT8 = 11,
  DT_QUINT8 = 12,
  DT_QINT32 = 13,
  DT_BFLOAT16 = 14,
  DT_QINT16 = 15,
  DT_QUINT16 = 16,
  DT_UINT16 = 17,
  DT_COMPLEX128 = 18,
  DT_HALF = 19,
  DT_RESOURCE = 20,
  DT_VARIANT = 21,
  DT_UINT32 = 22,
  DT_UINT64 = 23,
  kDataTypeRefOffset = 100,
};

struct ResourceHandle;  // resource_handle.h

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

// Bytes per element; 0 for types without a fixed-size element (string, resource, variant).
size_t DataTypeSize(DataType dtype);

// TF's short name ("float", "int64", "string"); "float_ref" for reference types.
std::string DataTypeString(DataType dtype);

// TF's enum spelling as it appears in GraphDef text ("DT_FLOAT").
std::string DataTypeEnumName(DataType dtype);

// Parses a short name ("float") or an enum spelling ("DT_FLOAT"); DT_INVALID if unknown.
DataType DataTypeFromString(std::string_view name);

inline bool IsRefType(DataType dtype) { return dtype > kDataTypeRefOffset; }
inline DataType BaseType(DataType dtype) {
  return IsRefType(dtype) ? static_cast<DataType>(dtype - kDataTypeRefOffset) : dtype;
}
inline DataType MakeRefType(DataType dtype) {
  return IsRefType(dtype) ? dtype : static_cast<DataType>(dtype + kDataTypeRefOffset);
}

// True for the types a Tensor can hold (fixed-size numeric types, bool and string).
bool IsSupportedTensorType(DataType dtype);
bool IsFloatingType(DataType dtype);  // half, bfloat16, float, double
bool IsIntegerType(DataType dtype);   // signed and unsigned integers

// Maps C++ element types to DataType.
template <typename T>
struct DataTypeToEnum;
#define FT_MATCH_TYPE_AND_ENUM(TYPE, ENUM)  \
  template <>                               \
  struct DataTypeToEnum<TYPE> {             \
    static constexpr DataType value = ENUM; \
  };
FT_MATCH_TYPE_AND_ENUM(float, DT_FLOAT)
FT_MATCH_TYPE_AND_ENUM(double, DT_DOUBLE)
FT_MATCH_TYPE_AND_ENUM(int32_t, DT_INT32)
FT_MATCH_TYPE_AND_ENUM(uint8_t, DT_UINT8)
FT_MATCH_TYPE_AND_ENUM(int16_t, DT_INT16)
FT_MATCH_TYPE_AND_ENUM(int8_t, DT_INT8)
FT_MATCH_TYPE_AND_ENUM(std::string, DT_STRING)
FT_MATCH_TYPE_AND_ENUM(int64_t, DT_INT64)
FT_MATCH_TYPE_AND_ENUM(bool, DT_BOOL)
FT_MATCH_TYPE_AND_ENUM(bfloat16, DT_BFLOAT16)
FT_MATCH_TYPE_AND_ENUM(uint16_t, DT_UINT16)
FT_MATCH_TYPE_AND_ENUM(half, DT_HALF)
FT_MATCH_TYPE_AND_ENUM(uint32_t, DT_UINT32)
FT_MATCH_TYPE_AND_ENUM(uint64_t, DT_UINT64)
FT_MATCH_TYPE_AND_ENUM(ResourceHandle, DT_RESOURCE)
FT_MATCH_TYPE_AND_ENUM(std::any, DT_VARIANT)
#undef FT_MATCH_TYPE_AND_ENUM

// Calls `fn.template operator()<T>()` with the C++ type T of `dtype`; throws
// InvalidArgument naming `what` for a dtype that has no C++ element type here.
//   size_t n = DispatchDataType(dt, "Add", [&]<typename T>() { return sizeof(T); });
template <typename Fn>
decltype(auto) DispatchDataType(DataType dtype, std::string_view what, Fn&& fn);

// As DispatchDataType, restricted to numeric (non-string, non-bool) types.
template <typename Fn>
decltype(auto) DispatchNumericType(DataType dtype, std::string_view what, Fn&& fn);

[[noreturn]] void ThrowUnsupportedType(DataType dtype, std::string_view what);

template <typename Fn>
decltype(auto) DispatchNumericType(DataType dtype, std::string_view what, Fn&& fn) {
  switch (BaseType(dtype)) {
    case DT_FLOAT:
      return fn.template operator()<float>();
    case DT_DOUBLE:
      return fn.template operator()<double>();
    case DT_INT32:
      return fn.template operator()<int32_t>();
    case DT_INT64:
      return fn.template operator()<int64_t>();
    case DT_UINT8:
      return fn.template operator()<uint8_t>();
    case DT_INT16:
      return fn.template operator()<int16_t>();
    case DT_INT8:
      return fn.template operator()<int8_t>();
    case DT_UINT16:
      return fn.template operator()<uint16_t>();
    case DT_UINT32:
      return fn.template operator()<uint32_t>();
    case DT_UINT64:
      return fn.template operator()<uint64_t>();
    case DT_HALF:
      return fn.template operator()<half>();
    case DT_BFLOAT16:
      return fn.template operator()<bfloat16>();
    default:
      ThrowUnsupportedType(dtype, what);
  }
}

template <typename Fn>
decltype(auto) DispatchDataType(DataType dtype, std::string_view what, Fn&& fn) {
  switch (BaseType(dtype)) {
    case DT_BOOL:
      return fn.template operator()<bool>();
    case DT_STRING:
      return fn.template operator()<std::string>();
    default:
      return DispatchNumericType(dtype, what, std::forward<Fn>(fn));
  }
}

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_TYPES_H_
