#include "flowtrain/io/csv_record.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::io {
namespace {

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename Int>
bool ParseInt(std::string_view s, Int* out) {
  s = TrimSpaces(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return error == std::errc() && end == s.data() + s.size();
}

// A float or double; out-of-range values saturate to +-inf (or underflow to 0), as TF's
// parser does.
template <typename Float>
bool ParseFloat(std::string_view s, Float* out) {
  s = TrimSpaces(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (end != s.data() + s.size()) return false;
  if (error == std::errc::result_out_of_range) {
    // from_chars leaves *out unchanged: find the direction from the text's exponent.
    const double wide = std::strtod(std::string(s).c_str(), nullptr);
    *out = std::abs(wide) >= 1 ? std::copysign(std::numeric_limits<Float>::infinity(), wide)
                               : std::copysign(Float(0), wide);
    return true;
  }
  return error == std::errc();
}

}  // namespace

CsvDecoder::CsvDecoder(CsvOptions options, std::vector<Tensor> defaults)
    : options_(std::move(options)), defaults_(std::move(defaults)) {
  if (!options_.select_cols.empty()) {
    if (options_.select_cols.size() != defaults_.size()) {
      InvalidArgument("Length of select_cols and record_defaults do not match.");
    }
    for (size_t i = 0; i < options_.select_cols.size(); ++i) {
      if (options_.select_cols[i] < 0) InvalidArgument("select_cols contains negative values.");
      if (i > 0 && options_.select_cols[i] <= options_.select_cols[i - 1]) {
        InvalidArgument("select_cols is not strictly increasing.");
      }
    }
  }
  for (size_t i = 0; i < defaults_.size(); ++i) {
    const Tensor& d = defaults_[i];
    if (d.dims() > 1)
      InvalidArgument("Shape of a default must be a length-0 or length-1 vector, or a scalar.");
    if (d.NumElements() > 1) {
      InvalidArgument("There should only be 1 default per field but field ", i, " has ", d.NumElements());
    }
    switch (d.dtype()) {
      case DT_FLOAT:
      case DT_DOUBLE:
      case DT_INT32:
      case DT_INT64:
      case DT_STRING:
        break;
      default:
        InvalidArgument("DecodeCSV: field ", i, " has a default of ", DataTypeString(d.dtype()),
                        "; allowed types are float, double, int32, int64 and string");
    }
    types_.push_back(d.dtype());
  }
}

void CsvDecoder::SplitFields(std::string_view record, int64_t index, std::vector<std::string_view>* fields,
                             std::vector<std::string>* unescaped) const {
  fields->clear();
  unescaped->clear();
  unescaped->reserve(record.size());  // views into it must stay valid: no reallocation
  const char delim = options_.field_delim;
  const int64_t last_col = options_.select_cols.empty() ? -1 : options_.select_cols.back();
  if (record.empty()) return;  // no fields at all, as in TF; "a," has two, the second empty
  size_t pos = 0;
  for (int64_t col = 0;; ++col) {
    if (last_col >= 0 && col > last_col) return;
    if (options_.use_quote_delim && pos < record.size() && record[pos] == '"') {
      // Quoted: up to the closing quote, which must be followed by the delimiter or the end.
      std::string value;
      bool escaped = false;
      size_t i = pos + 1;
      for (;;) {
        if (i >= record.size()) {
          InvalidArgument("Quoted field has to end with quote followed by delim or end (record ", index,
                          ", field ", col, ")");
        }
        if (record[i] == '"') {
          if (i + 1 < record.size() && record[i + 1] == '"') {
            value += '"';
            escaped = true;
            i += 2;
            continue;
          }
          if (i + 1 < record.size() && record[i + 1] != delim) {
            InvalidArgument("Quote inside a string has to be escaped by another quote (record ", index,
                            ", field ", col, ")");
          }
          break;
        }
        value += record[i++];
      }
      if (escaped) {
        unescaped->push_back(std::move(value));
        fields->push_back(unescaped->back());
      } else {
        fields->push_back(record.substr(pos + 1, i - pos - 1));
      }
      pos = i + 1;  // at the delimiter or the end
    } else {
      size_t end = pos;
      while (end < record.size() && record[end] != delim) {
        const char c = record[end];
        if ((options_.use_quote_delim && c == '"') || c == '\r' || c == '\n') {
          InvalidArgument("Unquoted fields cannot have quotes/CRLFs inside (record ", index, ", field ", col,
                          ")");
        }
        ++end;
      }
      fields->push_back(record.substr(pos, end - pos));
      pos = end;
    }
    if (pos >= record.size()) return;
    ++pos;  // past the delimiter; at the end, the next round adds the empty last field
  }
}

std::vector<Tensor> CsvDecoder::Decode(const Tensor& records) const {
  if (records.dtype() != DT_STRING) InvalidArgument("DecodeCSV: records must be strings");
  std::vector<Tensor> outputs;
  for (DataType t : types_) outputs.emplace_back(t, records.shape());
  auto lines = records.flat<std::string>();
  const size_t num_outputs = defaults_.size();
  std::vector<std::string_view> fields;
  std::vector<std::string> unescaped;
  std::vector<std::string_view> selected(num_outputs);
  for (int64_t r = 0; r < static_cast<int64_t>(lines.size()); ++r) {
    SplitFields(lines[r], r, &fields, &unescaped);
    if (options_.select_cols.empty()) {
      if (fields.size() != num_outputs) {
        InvalidArgument("Expect ", num_outputs, " fields but have ", fields.size(), " in record ", r);
      }
      for (size_t f = 0; f < num_outputs; ++f) selected[f] = fields[f];
    } else {
      size_t found = 0;
      for (size_t f = 0; f < num_outputs; ++f) {
        const auto col = static_cast<size_t>(options_.select_cols[f]);
        if (col < fields.size()) selected[found++] = fields[col];
      }
      if (found != num_outputs) {
        InvalidArgument("Expect ", num_outputs, " fields but have ", found, " in record ", r);
      }
    }
    for (size_t f = 0; f < num_outputs; ++f) {
      const std::string_view field = selected[f];
      const bool missing = field.empty() || (!options_.na_value.empty() && field == options_.na_value);
      const Tensor& def = defaults_[f];
      if (missing && def.NumElements() == 0) {
        InvalidArgument("Field ", f, " is required but missing in record ", r, "!");
      }
      auto bad = [&](std::string_view type) {
        InvalidArgument("Field ", f, " in record ", r, " is not a valid ", type, ": ", field);
      };
      switch (types_[f]) {
        case DT_FLOAT: {
          float v = missing ? def.flat<float>()[0] : 0;
          if (!missing && !ParseFloat(field, &v)) bad("float");
          outputs[f].flat<float>()[r] = v;
          break;
        }
        case DT_DOUBLE: {
          double v = missing ? def.flat<double>()[0] : 0;
          if (!missing && !ParseFloat(field, &v)) bad("double");
          outputs[f].flat<double>()[r] = v;
          break;
        }
        case DT_INT32: {
          int32_t v = missing ? def.flat<int32_t>()[0] : 0;
          if (!missing && !ParseInt(field, &v)) bad("int32");
          outputs[f].flat<int32_t>()[r] = v;
          break;
        }
        case DT_INT64: {
          int64_t v = missing ? def.flat<int64_t>()[0] : 0;
          if (!missing && !ParseInt(field, &v)) bad("int64");
          outputs[f].flat<int64_t>()[r] = v;
          break;
        }
        default:
          outputs[f].flat<std::string>()[r] = missing ? def.flat<std::string>()[0] : std::string(field);
      }
    }
  }
  return outputs;
}

}  // namespace flowtrain::io
