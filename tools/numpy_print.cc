#include "tools/numpy_print.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string_view>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::tools {
namespace {

enum class FloatKind { kHalf, kFloat, kDouble };

// The shortest digits of `v` (in `format`) that read back as the same value of its kind: what
// numpy's Dragon4 gives with unique=True.
std::string Shortest(double v, FloatKind kind, std::chars_format format) {
  char buf[400];
  if (kind == FloatKind::kFloat) {
    return std::string(buf, std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v), format).ptr);
  }
  if (kind == FloatKind::kDouble)
    return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v, format).ptr);
  // to_chars has no half overload: the fewest digits that round to the same half.
  const half target = static_cast<half>(v);
  for (int precision = 0; precision < 20; ++precision) {
    const std::string s(buf, std::to_chars(buf, buf + sizeof(buf), v, format, precision).ptr);
    if (static_cast<half>(std::strtod(s.c_str(), nullptr)) == target) return s;
  }
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v, format).ptr);
}

std::string WithPrecision(double v, std::chars_format format, int64_t precision) {
  char buf[400];
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v, format, static_cast<int>(precision)).ptr);
}

// Drops the zeros ending a fraction, keeping the point ("1.500" -> "1.5", "2.000" -> "2.").
std::string TrimZeros(std::string s) {
  if (s.find('.') == std::string::npos) return s + ".";
  while (s.back() == '0') s.pop_back();
  return s;
}

// `v` positional with the fewest digits that identify it, rounded to at most `precision`
// fraction digits, the point kept: numpy's dragon4_positional(trim='.').
std::string Positional(double v, FloatKind kind, int64_t precision) {
  std::string s = TrimZeros(Shortest(v, kind, std::chars_format::fixed));
  if (static_cast<int64_t>(s.size() - s.find('.') - 1) > precision) {
    s = TrimZeros(WithPrecision(v, std::chars_format::fixed, precision));
  }
  return s;
}

// `v` in scientific form split into mantissa ("1.5", "2.") and exponent ("-05").
struct Scientific {
  std::string mantissa;
  std::string exponent;
};

Scientific ScientificParts(double v, FloatKind kind, int64_t precision) {
  std::string s = Shortest(v, kind, std::chars_format::scientific);
  size_t e = s.find('e');
  if (e != std::string::npos && s.find('.') != std::string::npos &&
      static_cast<int64_t>(e - s.find('.') - 1) > precision) {
    s = WithPrecision(v, std::chars_format::scientific, precision);
    e = s.find('e');
  }
  return {TrimZeros(s.substr(0, e)), s.substr(e + 1)};
}

std::string NonFinite(double v) { return std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf"); }

// Python's repr of a bytes object.
std::string BytesRepr(const std::string& bytes) {
  const bool double_quote = bytes.find('\'') != std::string::npos && bytes.find('"') == std::string::npos;
  const char quote = double_quote ? '"' : '\'';
  std::string out = "b";
  out += quote;
  for (unsigned char c : bytes) {
    if (c == '\\' || c == quote) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

// Element `i` of `t` as a double, for the float and integer types.
double AsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_HALF:
      return static_cast<double>(t.data<half>()[i]);
    case DT_FLOAT:
      return t.data<float>()[i];
    case DT_DOUBLE:
      return t.data<double>()[i];
    default:
      return 0;
  }
}

// Element `i` of an integer tensor, as numpy prints it.
std::string IntegerString(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_INT8:
      return std::to_string(t.data<int8_t>()[i]);
    case DT_INT16:
      return std::to_string(t.data<int16_t>()[i]);
    case DT_INT32:
      return std::to_string(t.data<int32_t>()[i]);
    case DT_INT64:
      return std::to_string(t.data<int64_t>()[i]);
    case DT_UINT8:
      return std::to_string(t.data<uint8_t>()[i]);
    case DT_UINT16:
      return std::to_string(t.data<uint16_t>()[i]);
    case DT_UINT32:
      return std::to_string(t.data<uint32_t>()[i]);
    case DT_UINT64:
      return std::to_string(t.data<uint64_t>()[i]);
    default:
      InvalidArgument("numpy print: dtype ", DataTypeString(t.dtype()), " has no numpy form");
  }
}

bool IsFloat(DataType dtype) { return dtype == DT_HALF || dtype == DT_FLOAT || dtype == DT_DOUBLE; }

FloatKind KindOf(DataType dtype) {
  return dtype == DT_HALF ? FloatKind::kHalf : dtype == DT_FLOAT ? FloatKind::kFloat : FloatKind::kDouble;
}

// A numpy scalar's str(): floats as Python's repr ("2.0", "1e-05"), not the array form ("2.").
std::string ScalarString(const Tensor& t) {
  if (t.dtype() == DT_BOOL) return t.data<bool>()[0] ? "True" : "False";
  if (t.dtype() == DT_STRING) return BytesRepr(t.data<std::string>()[0]);
  if (!IsFloat(t.dtype())) return IntegerString(t, 0);
  const double v = AsDouble(t, 0);
  if (!std::isfinite(v)) return NonFinite(v);
  const double magnitude = std::fabs(v);
  if (v == 0 || (magnitude >= 1e-4 && magnitude < 1e16)) {
    std::string s = Shortest(v, KindOf(t.dtype()), std::chars_format::fixed);
    return s.find('.') == std::string::npos ? s + ".0" : s;
  }
  return Shortest(v, KindOf(t.dtype()), std::chars_format::scientific);
}

// Turns a flat element index into its text, aligned as numpy aligns the shown elements.
using ElementFormat = std::function<std::string(int64_t)>;

// numpy's FloatingFormat (floatmode "maxprec", sign "-") over the elements `shown`.
ElementFormat FloatFormat(const Tensor& t, const std::vector<int64_t>& shown, int64_t precision) {
  const FloatKind kind = KindOf(t.dtype());
  std::vector<double> finite;
  bool any_nonfinite = false, neg_inf = false;
  double max_abs = 0, min_abs = std::numeric_limits<double>::infinity();
  for (int64_t i : shown) {
    const double v = AsDouble(t, i);
    if (!std::isfinite(v)) {
      any_nonfinite = true;
      neg_inf |= std::isinf(v) && v < 0;
      continue;
    }
    finite.push_back(v);
    if (v != 0) {
      max_abs = std::max(max_abs, std::fabs(v));
      min_abs = std::min(min_abs, std::fabs(v));
    }
  }
  const bool exp_format = max_abs > 0 && (max_abs >= 1e8 || min_abs < 1e-4 || max_abs / min_abs > 1e3);
  size_t pad_left = 0, pad_right = 0, frac_digits = 0, exp_digits = 0;
  for (double v : finite) {
    if (exp_format) {
      const Scientific s = ScientificParts(v, kind, precision);
      const size_t point = s.mantissa.find('.');
      pad_left = std::max(pad_left, point);
      frac_digits = std::max(frac_digits, s.mantissa.size() - point - 1);
      exp_digits = std::max(exp_digits, s.exponent.size() - 1);
    } else {
      const std::string s = Positional(v, kind, precision);
      const size_t point = s.find('.');
      pad_left = std::max(pad_left, point);
      pad_right = std::max(pad_right, s.size() - point - 1);
    }
  }
  if (exp_format) pad_right = exp_digits + 2 + frac_digits;
  if (any_nonfinite) {
    // "nan" and "inf" are right-aligned in the width of the numbers, which grows to fit them.
    const size_t offset = pad_right + 1, widest = neg_inf ? 4 : 3;
    if (widest > offset) pad_left = std::max(pad_left, widest - offset);
  }
  return [=, &t](int64_t i) {
    const double v = AsDouble(t, i);
    std::string out;
    if (!std::isfinite(v)) {
      out = NonFinite(v);
      return std::string(pad_left + pad_right + 1 - out.size(), ' ') + out;
    }
    if (exp_format) {
      // Every mantissa has the same number of fraction digits (numpy's trim='k').
      Scientific s = ScientificParts(v, kind, precision);
      s.mantissa.append(frac_digits - (s.mantissa.size() - s.mantissa.find('.') - 1), '0');
      std::string digits = s.exponent.substr(1);
      digits.insert(0, exp_digits - digits.size(), '0');
      out = s.mantissa + "e" + s.exponent[0] + digits;
      return std::string(pad_left - s.mantissa.find('.'), ' ') + out;
    }
    out = Positional(v, kind, precision);
    const size_t point = out.find('.');
    return std::string(pad_left - point, ' ') + out + std::string(pad_right - (out.size() - point - 1), ' ');
  };
}

ElementFormat MakeFormat(const Tensor& t, const std::vector<int64_t>& shown, int64_t precision) {
  if (IsFloat(t.dtype())) return FloatFormat(t, shown, precision);
  if (t.dtype() == DT_BOOL) {
    return [&t](int64_t i) { return std::string(t.data<bool>()[i] ? " True" : "False"); };
  }
  if (t.dtype() == DT_STRING) return [&t](int64_t i) { return BytesRepr(t.data<std::string>()[i]); };
  size_t width = 0;
  for (int64_t i : shown) width = std::max(width, IntegerString(t, i).size());
  return [&t, width](int64_t i) {
    const std::string s = IntegerString(t, i);
    return std::string(width - s.size(), ' ') + s;
  };
}

// numpy's _formatArray: nested brackets, rows of the last axis wrapped at the line width, and
// with `summarize` each axis longer than 2·edgeitems cut to its ends around "...".
class ArrayFormatter {
 public:
  ArrayFormatter(const Tensor& t, const NumpyPrintOptions& options, bool summarize)
      : t_(t), options_(options), summarize_(summarize), strides_(t.dims(), 1) {
    for (int d = t.dims() - 2; d >= 0; --d) strides_[d] = strides_[d + 1] * t.dim_size(d + 1);
  }

  // The flat indices of the elements printed, in order.
  std::vector<int64_t> Shown() const {
    std::vector<int64_t> out;
    CollectShown(0, 0, out);
    return out;
  }

  std::string Format(const ElementFormat& element) const {
    return Recurse(element, 0, 0, " ", options_.linewidth);
  }

 private:
  // The indices along axis `d` that are printed; -1 marks where "..." goes.
  std::vector<int64_t> Indices(int d) const {
    const int64_t n = t_.dim_size(d);
    std::vector<int64_t> out;
    if (summarize_ && 2 * options_.edgeitems < n) {
      for (int64_t i = 0; i < options_.edgeitems; ++i) out.push_back(i);
      out.push_back(-1);
      for (int64_t i = n - options_.edgeitems; i < n; ++i) out.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i) out.push_back(i);
    }
    return out;
  }

  void CollectShown(int d, int64_t base, std::vector<int64_t>& out) const {
    if (d == t_.dims()) {
      out.push_back(base);
      return;
    }
    for (int64_t i : Indices(d)) {
      if (i >= 0) CollectShown(d + 1, base + i * strides_[d], out);
    }
  }

  // Appends `word` to `line`, first moving `line` into `s` when the word would pass `width`
  // (unless the line holds nothing but its indent).
  static void ExtendLine(std::string& s, std::string& line, const std::string& word, int64_t width,
                         const std::string& indent) {
    if (static_cast<int64_t>(line.size() + word.size()) > width && line.size() > indent.size()) {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      s += line + "\n";
      line = indent;
    }
    line += word;
  }

  std::string Recurse(const ElementFormat& element, int d, int64_t base, const std::string& indent,
                      int64_t width) const {
    if (d == t_.dims()) return element(base);
    const std::string next_indent = indent + " ";
    const int64_t next_width = width - 1;  // room for the closing ']'
    const std::vector<int64_t> indices = Indices(d);
    std::string s;
    if (d == t_.dims() - 1) {
      std::string line = indent;
      for (size_t k = 0; k < indices.size(); ++k) {
        const bool last = k + 1 == indices.size();
        const std::string word = indices[k] < 0 ? "..."
                                                : Recurse(element, d + 1, base + indices[k] * strides_[d],
                                                          next_indent, next_width);
        ExtendLine(s, line, word, last ? next_width : width, indent);
        if (!last) line += " ";
      }
      s += line;
    } else {
      const std::string separator(t_.dims() - 1 - d, '\n');
      for (size_t k = 0; k < indices.size(); ++k) {
        s += indent;
        s += indices[k] < 0
                 ? "..."
                 : Recurse(element, d + 1, base + indices[k] * strides_[d], next_indent, next_width);
        if (k + 1 < indices.size()) s += separator;
      }
    }
    return "[" + s.substr(indent.size()) + "]";
  }

  const Tensor& t_;
  const NumpyPrintOptions& options_;
  const bool summarize_;
  std::vector<int64_t> strides_;
};

}  // namespace

NumpyPrintOptions ParsePrintOptions(const std::string& spec, NumpyPrintOptions options) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) InvalidArgument("'", spec, "' is not in the form k=v.");
  const std::string key = spec.substr(0, eq), text = spec.substr(eq + 1);
  int64_t* target = key == "threshold"   ? &options.threshold
                    : key == "edgeitems" ? &options.edgeitems
                    : key == "linewidth" ? &options.linewidth
                    : key == "precision" ? &options.precision
                                         : nullptr;
  if (target == nullptr) {
    InvalidArgument("'", key,
                    "' is not a printoption flowtrain takes (threshold, edgeitems, linewidth, precision)");
  }
  if (key == "threshold" && text == "inf") {
    *target = std::numeric_limits<int64_t>::max();
    return options;
  }
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    InvalidArgument("'", spec, "': ", key, " must be a non-negative integer");
  }
  *target = value;
  return options;
}

std::string NumpyString(const Tensor& tensor, const NumpyPrintOptions& options) {
  if (tensor.dtype() == DT_RESOURCE || tensor.dtype() == DT_VARIANT) {
    InvalidArgument("numpy print: dtype ", DataTypeString(tensor.dtype()), " has no numpy form");
  }
  if (tensor.dims() == 0) return ScalarString(tensor);
  if (tensor.NumElements() == 0) return "[]";
  const ArrayFormatter formatter(tensor, options, tensor.NumElements() > options.threshold);
  return formatter.Format(MakeFormat(tensor, formatter.Shown(), options.precision));
}

}  // namespace flowtrain::tools
