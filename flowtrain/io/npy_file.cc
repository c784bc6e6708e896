#include "flowtrain/io/npy_file.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
// numpy.save aligns the start of the values to this many bytes.
constexpr size_t kArrayAlign = 64;
// numpy.save leaves room in the header for the growing axis to reach this many digits.
constexpr size_t kGrowthAxisMaxDigits = 21;
// Python literals nest at most this deep in a header we read (a structured descr is a list of
// tuples); deeper is refused before the recursion could exhaust the stack.
constexpr int kMaxNesting = 16;

// `text` with bytes outside printable ASCII as \xNN, for quoting a hostile header in a message.
std::string CEscape(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F && c != '\\' && c != '"') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    }
  }
  return out;
}

// A Python literal of a .npy header: what numpy's safe_eval accepts there.
struct PyValue {
  enum Kind { kString, kBool, kInt, kNone, kTuple, kList, kDict } kind = kNone;
  std::string text;  // kString
  bool boolean = false;
  int64_t integer = 0;
  // kTuple and kList: the elements; kDict: the values, keys[i] naming items[i]. (Not a
  // vector of pairs: a pair of an incomplete type does not compile with clang and libstdc++.)
  std::vector<PyValue> items;
  std::vector<std::string> keys;  // kDict (keys are strings)
};

// Parses the Python literal of a header; every failure is DataLoss naming the file and where.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  PyValue ParseAll() {
    PyValue value = Parse(0);
    SkipSpace();
    if (pos_ != text_.size()) Fail("unexpected text after the dict");
    return value;
  }

 private:
  [[noreturn]] void Fail(std::string_view what) const {
    DataLoss(name_, " is not a valid .npy file: its header ", what, " at byte ", pos_, " of \"",
             CEscape(text_.substr(0, 200)), "\"");
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool ConsumeWord(std::string_view word) {
    SkipSpace();
    if (text_.substr(pos_, word.size()) != word) return false;
    const size_t end = pos_ + word.size();
    if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) {
      return false;
    }
    pos_ = end;
    return true;
  }

  PyValue Parse(int depth) {
    if (depth > kMaxNesting) Fail("nests deeper than 16 levels");
    SkipSpace();
    if (pos_ >= text_.size()) Fail("ends inside a value");
    const char c = text_[pos_];
    PyValue value;
    if (c == '\'' || c == '"') {
      value.kind = PyValue::kString;
      value.text = ParseString();
    } else if (c == '{') {
      ++pos_;
      value.kind = PyValue::kDict;
      while (!Consume('}')) {
        SkipSpace();
        if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) Fail("has a non-string key");
        std::string key = ParseString();
        if (!Consume(':')) Fail("lacks ':' after a key");
        value.keys.push_back(std::move(key));
        value.items.push_back(Parse(depth + 1));
        if (!Consume(',')) {
          if (!Consume('}')) Fail("lacks ',' or '}' after a value");
          break;
        }
      }
    } else if (c == '(' || c == '[') {
      ++pos_;
      const char close = c == '(' ? ')' : ']';
      value.kind = c == '(' ? PyValue::kTuple : PyValue::kList;
      bool comma = false;
      while (!Consume(close)) {
        value.items.push_back(Parse(depth + 1));
        comma = Consume(',');
        if (!comma) {
          if (!Consume(close)) Fail("lacks ',' or a closing bracket after an item");
          break;
        }
      }
      // "(3)" is the integer 3 in Python, not a tuple.
      if (value.kind == PyValue::kTuple && value.items.size() == 1 && !comma) {
        PyValue inner = std::move(value.items[0]);
        return inner;
      }
    } else if (ConsumeWord("True")) {
      value.kind = PyValue::kBool;
      value.boolean = true;
    } else if (ConsumeWord("False")) {
      value.kind = PyValue::kBool;
      value.boolean = false;
    } else if (ConsumeWord("None")) {
      value.kind = PyValue::kNone;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      value.kind = PyValue::kInt;
      value.integer = ParseInt();
    } else {
      Fail("has an unexpected character");
    }
    return value;
  }

  std::string ParseString() {
    const char quote = text_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) Fail("ends inside a string");
      const char c = text_[pos_++];
      if (c == quote) return out;
      if (c == '\\') {
        if (pos_ >= text_.size()) Fail("ends inside a string");
        out += text_[pos_++];
      } else {
        out += c;
      }
    }
  }

  int64_t ParseInt() {
    const bool negative = text_[pos_] == '-';
    if (negative) ++pos_;
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') Fail("has a '-' without digits");
    uint64_t magnitude = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (magnitude > (uint64_t{1} << 63) / 10 || magnitude * 10 + digit > (uint64_t{1} << 63) - 1) {
        Fail("has an integer beyond 64 bits");
      }
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    // Python 2 wrote long integers as "3L".
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;
    return negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  }

  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

// What a descr says: the tensor dtype, the bytes of one element, and whether the file's bytes
// are in the other order than this host's.
struct ElementFormat {
  DataType dtype = DT_INVALID;
  char kind = 0;  // numpy's kind: b i u f S U
  int64_t item_bytes = 0;
  bool swap = false;
};

ElementFormat ParseDescr(const std::string& descr, const std::string& name) {
  auto unsupported = [&](std::string_view why) -> ElementFormat {
    InvalidArgument(name, ": .npy dtype '", CEscape(descr), "' ", why);
  };
  std::string_view rest = descr;
  char order = '|';
  if (!rest.empty() && (rest[0] == '<' || rest[0] == '>' || rest[0] == '|' || rest[0] == '=')) {
    order = rest[0];
    rest.remove_prefix(1);
  }
  if (rest.empty()) unsupported("is not a dtype");
  ElementFormat format;
  format.kind = rest[0];
  std::string_view digits = rest.substr(1);
  if (format.kind == 'O') {
    unsupported("is an object array (pickled Python objects), which flowtrain does not read");
  }
  if (digits.empty() && (format.kind == 'S' || format.kind == 'U' || format.kind == 'a')) {
    unsupported("has no length");
  }
  if (digits.empty() || digits.size() > 12 ||
      !std::all_of(digits.begin(), digits.end(), [](char d) { return d >= '0' && d <= '9'; })) {
    unsupported("is not a dtype flowtrain reads (b1 i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 S<n> U<n>)");
  }
  const int64_t size = std::stoll(std::string(digits));
  const bool big =
      order == '>' || ((order == '=' || order == '|') && std::endian::native == std::endian::big);
  format.swap = big != (std::endian::native == std::endian::big);
  format.item_bytes = size;
  switch (format.kind) {
    case 'b':
      if (size == 1) format.dtype = DT_BOOL;
      break;
    case 'i':
      format.dtype = size == 1   ? DT_INT8
                     : size == 2 ? DT_INT16
                     : size == 4 ? DT_INT32
                     : size == 8 ? DT_INT64
                                 : DT_INVALID;
      break;
    case 'u':
      format.dtype = size == 1   ? DT_UINT8
                     : size == 2 ? DT_UINT16
                     : size == 4 ? DT_UINT32
                     : size == 8 ? DT_UINT64
                                 : DT_INVALID;
      break;
    case 'f':
      format.dtype = size == 2 ? DT_HALF : size == 4 ? DT_FLOAT : size == 8 ? DT_DOUBLE : DT_INVALID;
      break;
    case 'c':
      if (size == 8 || size == 16) {
        unsupported(
            StrCat("is complex", size == 16 ? "128" : "64", ", which a flowtrain Tensor cannot hold"));
      }
      break;
    case 'a':
    case 'S':
      format.kind = 'S';
      format.dtype = DT_STRING;
      break;
    case 'U':
      format.dtype = DT_STRING;
      // Four bytes per character (UCS-4).
      if (!MultiplySizes(size, 4, &format.item_bytes)) unsupported("is too long");
      break;
    default:
      break;
  }
  if (format.dtype == DT_INVALID) {
    unsupported("is not a dtype flowtrain reads (b1 i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 S<n> U<n>)");
  }
  return format;
}

void AppendUtf8(uint32_t code_point, std::string* out) {
  if (code_point < 0x80) {
    *out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    *out += static_cast<char>(0xC0 | (code_point >> 6));
    *out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    *out += static_cast<char>(0xE0 | (code_point >> 12));
    *out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (code_point >> 18));
    *out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// The C-order element index `c_index` of `dims`, as an element index into the same values
// stored in Fortran (column-major) order.
class FortranIndexer {
 public:
  explicit FortranIndexer(const DimVector& dims) : dims_(dims), index_(dims.size(), 0) {
    int64_t stride = 1;
    for (int64_t d : dims_) {
      strides_.push_back(stride);
      stride *= d;
    }
  }
  // The Fortran offset of the current C-order position; then steps to the next position.
  int64_t Next() {
    int64_t offset = 0;
    for (size_t d = 0; d < dims_.size(); ++d) offset += index_[d] * strides_[d];
    for (size_t d = dims_.size(); d-- > 0;) {
      if (++index_[d] < dims_[d]) break;
      index_[d] = 0;
    }
    return offset;
  }

 private:
  DimVector dims_, strides_;
  std::vector<int64_t> index_;
};

const PyValue& Entry(const PyValue& dict, std::string_view key, const std::string& name) {
  for (size_t i = 0; i < dict.keys.size(); ++i) {
    if (dict.keys[i] == key) return dict.items[i];
  }
  DataLoss(name, " is not a valid .npy file: its header lacks the key '", key, "'");
}

std::string ShapeRepr(const TensorShape& shape) {
  std::string out = "(";
  for (int d = 0; d < shape.dims(); ++d) {
    if (d > 0) out += ", ";
    StrAppend(&out, shape.dim_size(d));
  }
  if (shape.dims() == 1) out += ",";
  return out + ")";
}

}  // namespace

std::string NpyDescr(DataType dtype) {
  const char order = std::endian::native == std::endian::little ? '<' : '>';
  switch (dtype) {
    case DT_BOOL:
      return "|b1";
    case DT_INT8:
      return "|i1";
    case DT_UINT8:
      return "|u1";
    case DT_INT16:
      return StrCat(std::string(1, order), "i2");
    case DT_INT32:
      return StrCat(std::string(1, order), "i4");
    case DT_INT64:
      return StrCat(std::string(1, order), "i8");
    case DT_UINT16:
      return StrCat(std::string(1, order), "u2");
    case DT_UINT32:
      return StrCat(std::string(1, order), "u4");
    case DT_UINT64:
      return StrCat(std::string(1, order), "u8");
    case DT_HALF:
      return StrCat(std::string(1, order), "f2");
    case DT_FLOAT:
      return StrCat(std::string(1, order), "f4");
    case DT_DOUBLE:
      return StrCat(std::string(1, order), "f8");
    case DT_STRING:
      return "|S";
    default:
      InvalidArgument(".npy files cannot hold ", DataTypeString(dtype), " tensors");
  }
}

Tensor ParseNpy(std::string_view contents, const std::string& name) {
  if (contents.size() < kMagic.size() + 2 || contents.substr(0, kMagic.size()) != kMagic) {
    DataLoss(name, " is not a .npy file: it does not start with the magic \"\\x93NUMPY\"");
  }
  const int major = static_cast<unsigned char>(contents[6]);
  const int minor = static_cast<unsigned char>(contents[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    InvalidArgument(name, ": .npy format version ", major, ".", minor,
                    " is not one flowtrain reads (1.0, 2.0, 3.0)");
  }
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (contents.size() < 8 + length_bytes) DataLoss(name, " ends inside its .npy header length");
  uint64_t header_length = 0;
  for (size_t i = 0; i < length_bytes; ++i) {
    header_length |= uint64_t{static_cast<unsigned char>(contents[8 + i])} << (8 * i);
  }
  const size_t header_start = 8 + length_bytes;
  if (header_length > contents.size() - header_start) {
    DataLoss(name, " is not a valid .npy file: its header length ", header_length, " runs past the file's ",
             contents.size(), " bytes");
  }
  const std::string_view header_text = contents.substr(header_start, header_length);
  const PyValue header = HeaderParser(header_text, name).ParseAll();
  if (header.kind != PyValue::kDict) DataLoss(name, " is not a valid .npy file: its header is not a dict");
  for (const std::string& key : header.keys) {
    if (key != "descr" && key != "fortran_order" && key != "shape") {
      DataLoss(name, " is not a valid .npy file: its header has the unknown key '", CEscape(key), "'");
    }
  }
  const PyValue& descr = Entry(header, "descr", name);
  const PyValue& fortran = Entry(header, "fortran_order", name);
  const PyValue& shape_value = Entry(header, "shape", name);
  if (descr.kind == PyValue::kList) {
    InvalidArgument(name,
                    ": .npy file of a structured dtype (a list of fields), which flowtrain does not read");
  }
  if (descr.kind != PyValue::kString)
    DataLoss(name, " is not a valid .npy file: its 'descr' is not a string");
  if (fortran.kind != PyValue::kBool) {
    DataLoss(name, " is not a valid .npy file: its 'fortran_order' is not True or False");
  }
  if (shape_value.kind != PyValue::kTuple)
    DataLoss(name, " is not a valid .npy file: its 'shape' is not a tuple");
  const ElementFormat format = ParseDescr(descr.text, name);

  DimVector dims;
  for (const PyValue& dim : shape_value.items) {
    if (dim.kind != PyValue::kInt || dim.integer < 0) {
      DataLoss(name, " is not a valid .npy file: its 'shape' holds something other than sizes >= 0");
    }
    dims.push_back(dim.integer);
  }
  const std::string shape_text = StrCat("(", StrJoin(dims, ", "), ")");
  int64_t elements = 1;
  int64_t bytes = format.item_bytes;
  for (int64_t d : dims) {
    if (!MultiplySizes(elements, d, &elements) || !MultiplySizes(bytes, d, &bytes)) {
      DataLoss(name, " is not a valid .npy file: its shape ", shape_text, " of '", descr.text,
               "' overflows 64 bits");
    }
  }
  const size_t data_start = header_start + header_length;
  const uint64_t available = contents.size() - data_start;
  if (static_cast<uint64_t>(bytes) > available) {
    DataLoss(name, " ends inside its .npy data: shape ", shape_text, " of '", descr.text, "' needs ", bytes,
             " bytes but the file holds ", available);
  }
  // TensorShape has a rank limit; its error is InvalidArgument, which we name the file in.
  TensorShape shape;
  try {
    shape = TensorShape(std::span<const int64_t>(dims.data(), dims.size()));
  } catch (const Error& e) {
    RethrowWithContext(e, StrCat(name, ": "));
  }

  const char* data = contents.data() + data_start;
  Tensor tensor(format.dtype, shape);
  if (elements == 0) return tensor;
  std::optional<FortranIndexer> fortran_index;
  if (fortran.boolean && dims.size() > 1) fortran_index.emplace(dims);
  // Element k of the tensor (C order) is element source(k) of the file.
  auto source = [&](int64_t k) -> const char* {
    const int64_t i = fortran_index ? fortran_index->Next() : k;
    return data + i * format.item_bytes;
  };
  const size_t width = static_cast<size_t>(format.item_bytes);
  if (format.dtype == DT_STRING) {
    auto out = tensor.flat<std::string>();
    for (int64_t k = 0; k < elements; ++k) {
      const char* item = source(k);
      std::string& value = out[static_cast<size_t>(k)];
      if (format.kind == 'S') {
        size_t n = width;
        while (n > 0 && item[n - 1] == '\0') --n;  // numpy strips the padding NULs
        value.assign(item, n);
      } else {
        size_t chars = width / 4;
        auto code_point = [&](size_t c) {
          uint32_t v;
          std::memcpy(&v, item + 4 * c, 4);
          return format.swap ? ((v >> 24) | ((v >> 8) & 0xFF00) | ((v << 8) & 0xFF0000) | (v << 24)) : v;
        };
        while (chars > 0 && code_point(chars - 1) == 0) --chars;
        for (size_t c = 0; c < chars; ++c) {
          const uint32_t v = code_point(c);
          if (v > 0x10FFFF) {
            DataLoss(name, " is not a valid .npy file: element ", k, " of its '", descr.text,
                     "' holds the code point ", v, ", beyond Unicode");
          }
          AppendUtf8(v, &value);
        }
      }
    }
  } else if (format.dtype == DT_BOOL) {
    bool* out = tensor.data<bool>();
    for (int64_t k = 0; k < elements; ++k) out[k] = *source(k) != 0;
  } else {
    char* out = static_cast<char*>(tensor.raw_data());
    if (!fortran_index) {
      std::memcpy(out, data, static_cast<size_t>(bytes));
    } else {
      for (int64_t k = 0; k < elements; ++k) std::memcpy(out + k * format.item_bytes, source(k), width);
    }
    if (format.swap && width > 1) {
      for (size_t off = 0; off < static_cast<size_t>(bytes); off += width)
        std::reverse(out + off, out + off + width);
    }
  }
  return tensor;
}

Tensor ReadNpyFile(const std::string& path) {
  if (!FileExists(path)) NotFound(".npy file ", path, " does not exist");
  return ParseNpy(ReadFileToString(path), path);
}

std::string SerializeNpy(const Tensor& tensor) {
  std::string descr = NpyDescr(tensor.dtype());
  size_t string_width = 0;
  if (tensor.dtype() == DT_STRING) {
    // numpy's bytes dtype is as wide as the longest value, and at least one byte.
    string_width = 1;
    for (const std::string& s : tensor.flat<std::string>()) string_width = std::max(string_width, s.size());
    StrAppend(&descr, string_width);
  }
  std::string dict =
      StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", ShapeRepr(tensor.shape()), ", }");
  // The spare room numpy.save leaves for the first axis to grow in place.
  if (tensor.dims() > 0) {
    const size_t digits = StrCat(tensor.dim_size(0)).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // Version 1.0 has a 2-byte header length; numpy moves to 2.0 only when it would not fit.
  const size_t header_length_1 = dict.size() + 1;
  const size_t pad_1 = kArrayAlign - ((8 + 2 + header_length_1) % kArrayAlign);
  const bool version_2 = header_length_1 + pad_1 > 0xFFFF;
  const size_t length_bytes = version_2 ? 4 : 2;
  const size_t pad = kArrayAlign - ((8 + length_bytes + header_length_1) % kArrayAlign);
  const uint64_t header_length = header_length_1 + pad;

  std::string out(kMagic);
  out += static_cast<char>(version_2 ? 2 : 1);
  out += '\0';
  for (size_t i = 0; i < length_bytes; ++i) out += static_cast<char>((header_length >> (8 * i)) & 0xFF);
  out += dict;
  out.append(pad, ' ');
  out += '\n';

  const int64_t n = tensor.NumElements();
  if (tensor.dtype() == DT_STRING) {
    for (const std::string& s : tensor.flat<std::string>()) {
      out += s;
      out.append(string_width - s.size(), '\0');
    }
  } else if (tensor.dtype() == DT_BOOL) {
    const bool* values = tensor.data<bool>();
    for (int64_t k = 0; k < n; ++k) out += values[k] ? '\1' : '\0';
  } else {
    // NpyDescr names this host's byte order, so the values go out as they are.
    out.append(static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes());
  }
  return out;
}

void WriteNpyFile(const std::string& path, const Tensor& tensor) {
  WriteFileAtomically(path, SerializeNpy(tensor));
}

}  // namespace flowtrain::io
