#include "flowtrain/graph/attr_value_util.h"

#include <charconv>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain {

AttrValue MakeAttrValue(int64_t v) {
  AttrValue a;
  a.set_i(v);
  return a;
}
AttrValue MakeAttrValue(float v) {
  AttrValue a;
  a.set_f(v);
  return a;
}
AttrValue MakeAttrValue(bool v) {
  AttrValue a;
  a.set_b(v);
  return a;
}
AttrValue MakeAttrValue(std::string_view v) {
  AttrValue a;
  a.set_s(std::string(v));
  return a;
}
AttrValue MakeAttrValue(DataType v) {
  AttrValue a;
  a.set_type(static_cast<tensorflow::DataType>(v));
  return a;
}
AttrValue MakeAttrValue(const PartialTensorShape& v) {
  AttrValue a;
  *a.mutable_shape() = ShapeToProto(v);
  return a;
}
AttrValue MakeAttrValue(const Tensor& v) {
  AttrValue a;
  // Small constants use the typed fields, as TF's make_tensor_proto does for readability.
  *a.mutable_tensor() = TensorToProto(v, /*use_typed_fields=*/v.NumElements() <= 1);
  return a;
}
AttrValue MakeAttrValue(const std::vector<int64_t>& v) {
  AttrValue a;
  auto* list = a.mutable_list();
  for (int64_t x : v) list->add_i(x);
  return a;
}
AttrValue MakeAttrValue(const std::vector<int>& v) {
  return MakeAttrValue(std::vector<int64_t>(v.begin(), v.end()));
}
AttrValue MakeAttrValue(const std::vector<float>& v) {
  AttrValue a;
  auto* list = a.mutable_list();
  for (float x : v) list->add_f(x);
  return a;
}
AttrValue MakeAttrValue(const std::vector<std::string>& v) {
  AttrValue a;
  auto* list = a.mutable_list();
  for (const std::string& x : v) list->add_s(x);
  return a;
}
AttrValue MakeAttrValue(const std::vector<DataType>& v) {
  AttrValue a;
  auto* list = a.mutable_list();
  for (DataType x : v) list->add_type(static_cast<tensorflow::DataType>(x));
  return a;
}
AttrValue MakeAttrValue(const std::vector<PartialTensorShape>& v) {
  AttrValue a;
  auto* list = a.mutable_list();
  for (const PartialTensorShape& x : v) *list->add_shape() = ShapeToProto(x);
  return a;
}

namespace {

[[noreturn]] void WrongKind(const AttrValue& value, std::string_view attr_name, std::string_view expected) {
  InvalidArgument("Attr '", attr_name, "' has type ", AttrValueTypeName(value), ", expected ", expected);
}

}  // namespace

template <>
int64_t AttrValueAs<int64_t>(const AttrValue& v, std::string_view n) {
  if (v.value_case() != AttrValue::kI) WrongKind(v, n, "int");
  return v.i();
}
template <>
int AttrValueAs<int>(const AttrValue& v, std::string_view n) {
  return static_cast<int>(AttrValueAs<int64_t>(v, n));
}
template <>
float AttrValueAs<float>(const AttrValue& v, std::string_view n) {
  if (v.value_case() != AttrValue::kF) WrongKind(v, n, "float");
  return v.f();
}
template <>
bool AttrValueAs<bool>(const AttrValue& v, std::string_view n) {
  if (v.value_case() != AttrValue::kB) WrongKind(v, n, "bool");
  return v.b();
}
template <>
std::string AttrValueAs<std::string>(const AttrValue& v, std::string_view n) {
  if (v.value_case() != AttrValue::kS) WrongKind(v, n, "string");
  return v.s();
}
template <>
DataType AttrValueAs<DataType>(const AttrValue& v, std::string_view n) {
  if (v.value_case() != AttrValue::kType) WrongKind(v, n, "type");
  return static_cast<DataType>(v.type());
}
template <>
PartialTensorShape AttrValueAs<PartialTensorShape>(const AttrValue& v, std::string_view n) {
  if (v.value_case() != AttrValue::kShape) WrongKind(v, n, "shape");
  return PartialShapeFromProto(v.shape());
}
template <>
TensorShape AttrValueAs<TensorShape>(const AttrValue& v, std::string_view n) {
  if (v.value_case() != AttrValue::kShape) WrongKind(v, n, "shape");
  return ShapeFromProto(v.shape());
}
template <>
Tensor AttrValueAs<Tensor>(const AttrValue& v, std::string_view n) {
  if (v.value_case() != AttrValue::kTensor) WrongKind(v, n, "tensor");
  return TensorFromProto(v.tensor());
}

// An empty list is stored as a ListValue with no entries, so any list type matches it.
#define FT_LIST_ACCESSOR(CppType, Field, Name, Convert)                                            \
  template <>                                                                                      \
  std::vector<CppType> AttrValueAs<std::vector<CppType>>(const AttrValue& v, std::string_view n) { \
    if (v.value_case() != AttrValue::kList) WrongKind(v, n, Name);                                 \
    std::vector<CppType> out;                                                                      \
    for (const auto& x : v.list().Field()) out.push_back(Convert(x));                              \
    return out;                                                                                    \
  }
FT_LIST_ACCESSOR(int64_t, i, "list(int)", static_cast<int64_t>)
FT_LIST_ACCESSOR(int, i, "list(int)", static_cast<int>)
FT_LIST_ACCESSOR(float, f, "list(float)", static_cast<float>)
FT_LIST_ACCESSOR(std::string, s, "list(string)", std::string)
FT_LIST_ACCESSOR(DataType, type, "list(type)", static_cast<DataType>)
FT_LIST_ACCESSOR(PartialTensorShape, shape, "list(shape)", PartialShapeFromProto)
#undef FT_LIST_ACCESSOR

std::string AttrValueTypeName(const AttrValue& value) {
  switch (value.value_case()) {
    case AttrValue::kS:
      return "string";
    case AttrValue::kI:
      return "int";
    case AttrValue::kF:
      return "float";
    case AttrValue::kB:
      return "bool";
    case AttrValue::kType:
      return "type";
    case AttrValue::kShape:
      return "shape";
    case AttrValue::kTensor:
      return "tensor";
    case AttrValue::kFunc:
      return "func";
    case AttrValue::kPlaceholder:
      return "placeholder";
    case AttrValue::kList: {
      const auto& l = value.list();
      if (l.s_size()) return "list(string)";
      if (l.i_size()) return "list(int)";
      if (l.f_size()) return "list(float)";
      if (l.b_size()) return "list(bool)";
      if (l.type_size()) return "list(type)";
      if (l.shape_size()) return "list(shape)";
      if (l.tensor_size()) return "list(tensor)";
      if (l.func_size()) return "list(func)";
      return "list";
    }
    case AttrValue::VALUE_NOT_SET:
      break;
  }
  return "unset";
}

bool AttrValueHasType(const AttrValue& value, std::string_view type) {
  const std::string actual = AttrValueTypeName(value);
  if (actual == type) return true;
  if (actual == "list" && type.starts_with("list(")) return true;  // empty list
  return false;
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitList(std::string_view text) {
  text = Trim(text);
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') {
    InvalidArgument("Expected a list in brackets, got '", text, "'");
  }
  text = Trim(text.substr(1, text.size() - 2));
  std::vector<std::string_view> items;
  if (text.empty()) return items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    items.push_back(Trim(text.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

int64_t ParseInt(std::string_view text) {
  int64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    InvalidArgument("Expected an integer, got '", text, "'");
  }
  return v;
}

float ParseFloat(std::string_view text) {
  float v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    InvalidArgument("Expected a number, got '", text, "'");
  }
  return v;
}

std::string ParseString(std::string_view text) {
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front()) {
    return std::string(text.substr(1, text.size() - 2));
  }
  InvalidArgument("Expected a quoted string, got '", text, "'");
}

DataType ParseType(std::string_view text) {
  const DataType t = DataTypeFromString(text);
  if (t == DT_INVALID) InvalidArgument("Unknown type '", text, "'");
  return t;
}

PartialTensorShape ParseShape(std::string_view text) {
  if (Trim(text) == "<unknown>") return PartialTensorShape::Unknown();
  DimVector dims;
  for (std::string_view item : SplitList(text)) {
    dims.push_back(item == "?" ? -1 : ParseInt(item));
  }
  return PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
}

bool ParseBool(std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  InvalidArgument("Expected true or false, got '", text, "'");
}

}  // namespace

AttrValue ParseAttrValue(std::string_view type, std::string_view text) {
  text = Trim(text);
  if (type == "int") return MakeAttrValue(ParseInt(text));
  if (type == "float") return MakeAttrValue(ParseFloat(text));
  if (type == "bool") return MakeAttrValue(ParseBool(text));
  if (type == "string") return MakeAttrValue(ParseString(text));
  if (type == "type") return MakeAttrValue(ParseType(text));
  if (type == "shape") return MakeAttrValue(ParseShape(text));
  if (type.starts_with("list(")) {
    const std::string_view element = type.substr(5, type.size() - 6);
    AttrValue a;
    auto* list = a.mutable_list();
    for (std::string_view item : SplitList(text)) {
      if (element == "int")
        list->add_i(ParseInt(item));
      else if (element == "float")
        list->add_f(ParseFloat(item));
      else if (element == "bool")
        list->add_b(ParseBool(item));
      else if (element == "string")
        list->add_s(ParseString(item));
      else if (element == "type")
        list->add_type(static_cast<tensorflow::DataType>(ParseType(item)));
      else
        InvalidArgument("Cannot parse a default for attr type ", type);
    }
    return a;
  }
  InvalidArgument("Cannot parse a default for attr type ", type);
}

std::string AttrValueDebugString(const AttrValue& value) {
  switch (value.value_case()) {
    case AttrValue::kS:
      return StrCat("\"", value.s(), "\"");
    case AttrValue::kI:
      return StrCat(value.i());
    case AttrValue::kF:
      return StrCat(value.f());
    case AttrValue::kB:
      return value.b() ? "true" : "false";
    case AttrValue::kType:
      return DataTypeEnumName(static_cast<DataType>(value.type()));
    case AttrValue::kShape:
      return PartialShapeFromProto(value.shape()).DebugString();
    case AttrValue::kTensor:
      return StrCat("<Tensor ", DataTypeString(static_cast<DataType>(value.tensor().dtype())), " ",
                    PartialShapeFromProto(value.tensor().tensor_shape()).DebugString(), ">");
    case AttrValue::kList: {
      const auto& l = value.list();
      std::vector<std::string> items;
      for (const auto& s : l.s()) items.push_back(StrCat("\"", s, "\""));
      for (int64_t i : l.i()) items.push_back(StrCat(i));
      for (float f : l.f()) items.push_back(StrCat(f));
      for (bool b : l.b()) items.push_back(b ? "true" : "false");
      for (int t : l.type()) items.push_back(DataTypeEnumName(static_cast<DataType>(t)));
      for (const auto& s : l.shape()) items.push_back(PartialShapeFromProto(s).DebugString());
      return StrCat("[", StrJoin(items, ", "), "]");
    }
    case AttrValue::kFunc:
      return StrCat("func:", value.func().name());
    case AttrValue::kPlaceholder:
      return StrCat("$", value.placeholder());
    case AttrValue::VALUE_NOT_SET:
      break;
  }
  return "<unset>";
}

}  // namespace flowtrain
