// Building, reading and printing TF `AttrValue`s, the typed values attached to graph nodes
// (`T: DT_FLOAT`, `transpose_a: false`, `shape: [?,64]`).
//
//   tensorflow::AttrValue v = MakeAttrValue(DT_FLOAT);
//   DataType t = AttrValueAs<DataType>(v, "T");
//   std::string s = AttrValueDebugString(v);        // "DT_FLOAT"
#ifndef FLOWTRAIN_GRAPH_ATTR_VALUE_UTIL_H_
#define FLOWTRAIN_GRAPH_ATTR_VALUE_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/core/types.h"
#include "flowtrain/proto/attr_value.pb.h"

namespace flowtrain {

using AttrValue = tensorflow::AttrValue;

AttrValue MakeAttrValue(int64_t v);
inline AttrValue MakeAttrValue(int v) { return MakeAttrValue(static_cast<int64_t>(v)); }
AttrValue MakeAttrValue(float v);
AttrValue MakeAttrValue(bool v);
AttrValue MakeAttrValue(std::string_view v);
inline AttrValue MakeAttrValue(const char* v) { return MakeAttrValue(std::string_view(v)); }
inline AttrValue MakeAttrValue(const std::string& v) { return MakeAttrValue(std::string_view(v)); }
AttrValue MakeAttrValue(DataType v);
AttrValue MakeAttrValue(const PartialTensorShape& v);
inline AttrValue MakeAttrValue(const TensorShape& v) { return MakeAttrValue(PartialTensorShape(v)); }
AttrValue MakeAttrValue(const Tensor& v);
AttrValue MakeAttrValue(const std::vector<int64_t>& v);
AttrValue MakeAttrValue(const std::vector<int>& v);
AttrValue MakeAttrValue(const std::vector<float>& v);
AttrValue MakeAttrValue(const std::vector<std::string>& v);
AttrValue MakeAttrValue(const std::vector<DataType>& v);
AttrValue MakeAttrValue(const std::vector<PartialTensorShape>& v);

// Reads `value` as T, throwing InvalidArgument naming `attr_name` if it holds another kind.
// T: int64_t, int, float, bool, std::string, DataType, PartialTensorShape, TensorShape,
// Tensor, std::vector<int64_t|int|float|std::string|DataType|PartialTensorShape>.
template <typename T>
T AttrValueAs(const AttrValue& value, std::string_view attr_name);
template <>
int64_t AttrValueAs<int64_t>(const AttrValue& value, std::string_view attr_name);
template <>
int AttrValueAs<int>(const AttrValue& value, std::string_view attr_name);
template <>
float AttrValueAs<float>(const AttrValue& value, std::string_view attr_name);
template <>
bool AttrValueAs<bool>(const AttrValue& value, std::string_view attr_name);
template <>
std::string AttrValueAs<std::string>(const AttrValue& value, std::string_view attr_name);
template <>
DataType AttrValueAs<DataType>(const AttrValue& value, std::string_view attr_name);
template <>
PartialTensorShape AttrValueAs<PartialTensorShape>(const AttrValue& value, std::string_view attr_name);
template <>
TensorShape AttrValueAs<TensorShape>(const AttrValue& value, std::string_view attr_name);
template <>
Tensor AttrValueAs<Tensor>(const AttrValue& value, std::string_view attr_name);
template <>
std::vector<int64_t> AttrValueAs<std::vector<int64_t>>(const AttrValue& value, std::string_view attr_name);
template <>
std::vector<int> AttrValueAs<std::vector<int>>(const AttrValue& value, std::string_view attr_name);
template <>
std::vector<float> AttrValueAs<std::vector<float>>(const AttrValue& value, std::string_view attr_name);
template <>
std::vector<std::string> AttrValueAs<std::vector<std::string>>(const AttrValue& value,
                                                               std::string_view attr_name);
template <>
std::vector<DataType> AttrValueAs<std::vector<DataType>>(const AttrValue& value, std::string_view attr_name);
template <>
std::vector<PartialTensorShape> AttrValueAs<std::vector<PartialTensorShape>>(const AttrValue& value,
                                                                             std::string_view attr_name);

// The attr type name of `value` as TF spells it ("int", "list(type)", ...).
std::string AttrValueTypeName(const AttrValue& value);

// Checks that `value` has attr type `type` ("int", "list(shape)", ...).
bool AttrValueHasType(const AttrValue& value, std::string_view type);

// Parses a default value as written in an op spec ("false", "1e-3", "'SAME'", "[1, 2]",
// "DT_FLOAT", "[?,3]") for attr type `type`.
AttrValue ParseAttrValue(std::string_view type, std::string_view text);

// TF-like rendering: "DT_FLOAT", "[1,2]", "\"SAME\"", "<Tensor float [2]>".
std::string AttrValueDebugString(const AttrValue& value);

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_ATTR_VALUE_UTIL_H_
