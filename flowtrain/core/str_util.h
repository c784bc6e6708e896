// String building for messages and names. (Debian's Abseil is built with its own string_view,
// which does not mix with std::string_view, so flowtrain keeps these small helpers.)
//
//   std::string msg = StrCat("Shape ", shape.DebugString(), " has ", n, " elements");
//   StrAppend(&out, ", ", 3.5f);
//   std::string s = StrJoin(std::vector<int64_t>{1, 2}, ",");   // "1,2"
//
// Floating-point values print in the shortest form that reads back exactly.
#ifndef FLOWTRAIN_CORE_STR_UTIL_H_
#define FLOWTRAIN_CORE_STR_UTIL_H_

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>

namespace flowtrain {
namespace str_internal {

inline void AppendPiece(std::string* out, std::string_view piece) { out->append(piece); }
inline void AppendPiece(std::string* out, const char* piece) { out->append(piece); }
inline void AppendPiece(std::string* out, const std::string& piece) { out->append(piece); }
inline void AppendPiece(std::string* out, char c) { out->push_back(c); }
inline void AppendPiece(std::string* out, bool b) { out->append(b ? "true" : "false"); }

template <typename T>
requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool> &&
         !std::is_same_v<T, char>) void AppendPiece(std::string* out, T value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

template <typename T>
requires std::is_enum_v<T>
void AppendPiece(std::string* out, T value) {
  AppendPiece(out, static_cast<std::underlying_type_t<T>>(value));
}

}  // namespace str_internal

template <typename... Parts>
void StrAppend(std::string* out, const Parts&... parts) {
  (str_internal::AppendPiece(out, parts), ...);
}

template <typename... Parts>
std::string StrCat(const Parts&... parts) {
  std::string out;
  StrAppend(&out, parts...);
  return out;
}

template <typename Range>
std::string StrJoin(const Range& range, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& item : range) {
    if (!first) out.append(separator);
    first = false;
    str_internal::AppendPiece(&out, item);
  }
  return out;
}

// Joins with `format(std::string* out, const Item&)` appending each item.
template <typename Range, typename Formatter>
std::string StrJoin(const Range& range, std::string_view separator, Formatter&& format) {
  std::string out;
  bool first = true;
  for (const auto& item : range) {
    if (!first) out.append(separator);
    first = false;
    format(&out, item);
  }
  return out;
}

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_STR_UTIL_H_
