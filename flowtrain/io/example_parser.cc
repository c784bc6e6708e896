#include "flowtrain/io/example_parser.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <exception>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/proto/example.pb.h"

namespace flowtrain::io {
namespace {

// Feature's oneof field numbers: bytes_list = 1, float_list = 2, int64_list = 3.
enum Kind { kNone = 0, kBytes = 1, kFloat = 2, kInt64 = 3 };

// One feature of one example: its kind and the bytes of its BytesList/FloatList/Int64List
// message, inside the serialized record (or inside a re-serialized Feature after a fallback).
struct FeatureView {
  Kind kind = kNone;
  std::string_view list;
};

std::string_view KindName(Kind kind) {
  switch (kind) {
    case kFloat:
      return "float";
    case kInt64:
      return "int64";
    case kBytes:
      return "string";
    default:
      return "none";
  }
}

Kind KindOf(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
      return kFloat;
    case DT_INT64:
      return kInt64;
    default:
      return kBytes;
  }
}

// A cursor over protobuf wire format. Every read returns false on malformed input.
class WireReader {
 public:
  explicit WireReader(std::string_view in) : in_(in) {}
  bool done() const { return in_.empty(); }

  bool Varint(uint64_t* value) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in_.empty()) return false;
      const uint8_t byte = static_cast<uint8_t>(in_.front());
      in_.remove_prefix(1);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *value = v;
        return true;
      }
    }
    return false;
  }
  bool Tag(uint32_t* field, uint32_t* wire_type) {
    uint64_t tag;
    if (!Varint(&tag) || tag > 0xffffffffu) return false;
    *field = static_cast<uint32_t>(tag >> 3);
    *wire_type = static_cast<uint32_t>(tag & 7);
    return *field != 0;
  }
  bool Delimited(std::string_view* out) {
    uint64_t size;
    if (!Varint(&size) || size > in_.size()) return false;
    *out = in_.substr(0, size);
    in_.remove_prefix(size);
    return true;
  }
  bool Fixed(size_t bytes, std::string_view* out) {
    if (in_.size() < bytes) return false;
    *out = in_.substr(0, bytes);
    in_.remove_prefix(bytes);
    return true;
  }
  // Skips a field's value; groups (deprecated) are left to the protobuf parser.
  bool Skip(uint32_t wire_type) {
    uint64_t ignored;
    std::string_view ignored_bytes;
    switch (wire_type) {
      case 0:
        return Varint(&ignored);
      case 1:
        return Fixed(8, &ignored_bytes);
      case 2:
        return Delimited(&ignored_bytes);
      case 5:
        return Fixed(4, &ignored_bytes);
      default:
        return false;
    }
  }

 private:
  std::string_view in_;
};

bool ScanFeature(std::string_view bytes, FeatureView* out) {
  WireReader r(bytes);
  *out = {};
  while (!r.done()) {
    uint32_t field, wire_type;
    if (!r.Tag(&field, &wire_type)) return false;
    if (field >= 1 && field <= 3 && wire_type == 2) {
      // A oneof member seen twice merges (or switches kind): the protobuf parser decides.
      if (out->kind != kNone) return false;
      out->kind = static_cast<Kind>(field);
      if (!r.Delimited(&out->list)) return false;
    } else if (!r.Skip(wire_type)) {
      return false;
    }
  }
  return true;
}

// Finds the features named `keys` in a serialized Example: (*found)[k] is the Feature
// message of keys[k] (the last one, as the map's parser keeps), `present[k]` whether there
// was one (set, never cleared). False if the record is not wire format this scanner handles.
bool ScanExample(std::string_view record, const std::vector<std::string_view>& keys, std::string_view* found,
                 char* present) {
  WireReader example(record);
  while (!example.done()) {
    uint32_t field, wire_type;
    if (!example.Tag(&field, &wire_type)) return false;
    if (field != 1 || wire_type != 2) {  // not Example.features
      if (!example.Skip(wire_type)) return false;
      continue;
    }
    std::string_view features_bytes;
    if (!example.Delimited(&features_bytes)) return false;
    WireReader features(features_bytes);
    while (!features.done()) {
      if (!features.Tag(&field, &wire_type)) return false;
      if (field != 1 || wire_type != 2) {  // not a Features.feature map entry
        if (!features.Skip(wire_type)) return false;
        continue;
      }
      std::string_view entry_bytes;
      if (!features.Delimited(&entry_bytes)) return false;
      WireReader entry(entry_bytes);
      std::string_view key, value;
      while (!entry.done()) {
        if (!entry.Tag(&field, &wire_type)) return false;
        if (field == 1 && wire_type == 2) {
          if (!entry.Delimited(&key)) return false;
        } else if (field == 2 && wire_type == 2) {
          if (!entry.Delimited(&value)) return false;
        } else if (!entry.Skip(wire_type)) {
          return false;
        }
      }
      for (size_t k = 0; k < keys.size(); ++k) {
        if (keys[k] == key) {
          found[k] = value;
          present[k] = true;
        }
      }
    }
  }
  return true;
}

// Counts the values of a list message whose kind matches `kind`; false if malformed.
bool CountValues(const FeatureView& f, int64_t* count) {
  WireReader r(f.list);
  int64_t n = 0;
  while (!r.done()) {
    uint32_t field, wire_type;
    if (!r.Tag(&field, &wire_type)) return false;
    std::string_view bytes;
    // As TF's fast parser: a list holds nothing but its values, not even unknown fields.
    if (field != 1) return false;
    if (f.kind == kBytes) {
      if (wire_type != 2 || !r.Delimited(&bytes)) return false;
      ++n;
    } else if (wire_type == 2) {  // packed
      if (!r.Delimited(&bytes)) return false;
      if (f.kind == kFloat) {
        if (bytes.size() % 4 != 0) return false;
        n += static_cast<int64_t>(bytes.size() / 4);
      } else {
        if (!bytes.empty() && (static_cast<uint8_t>(bytes.back()) & 0x80) != 0) return false;
        for (char c : bytes) n += (static_cast<uint8_t>(c) & 0x80) == 0;
      }
    } else if (f.kind == kFloat && wire_type == 5) {
      if (!r.Fixed(4, &bytes)) return false;
      ++n;
    } else if (f.kind == kInt64 && wire_type == 0) {
      uint64_t ignored;
      if (!r.Varint(&ignored)) return false;
      ++n;
    } else {
      return false;
    }
  }
  *count = n;
  return true;
}

float LoadFloat(const char* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  if constexpr (std::endian::native == std::endian::big) bits = __builtin_bswap32(bits);
  return std::bit_cast<float>(bits);
}

// Copies the values of a list already checked by CountValues to `out` (of the matching type).
void CopyValues(const FeatureView& f, void* out) {
  WireReader r(f.list);
  float* floats = static_cast<float*>(out);
  int64_t* ints = static_cast<int64_t*>(out);
  std::string* strings = static_cast<std::string*>(out);
  while (!r.done()) {
    uint32_t field = 0, wire_type = 0;
    r.Tag(&field, &wire_type);
    std::string_view bytes;
    if (f.kind == kBytes) {
      r.Delimited(&bytes);
      (strings++)->assign(bytes);
    } else if (wire_type == 2) {
      r.Delimited(&bytes);
      if (f.kind == kFloat) {
        if constexpr (std::endian::native == std::endian::little) {
          std::memcpy(floats, bytes.data(), bytes.size());
          floats += bytes.size() / 4;
        } else {
          for (size_t i = 0; i < bytes.size(); i += 4) *floats++ = LoadFloat(bytes.data() + i);
        }
      } else {
        WireReader packed(bytes);
        uint64_t v;
        while (packed.Varint(&v)) *ints++ = static_cast<int64_t>(v);
      }
    } else if (wire_type == 5) {
      r.Fixed(4, &bytes);
      *floats++ = LoadFloat(bytes.data());
    } else {
      uint64_t v = 0;
      r.Varint(&v);
      *ints++ = static_cast<int64_t>(v);
    }
  }
}

void CopyDefault(const Tensor& default_value, Tensor& out, int64_t offset) {
  const int64_t n = default_value.NumElements();
  switch (out.dtype()) {
    case DT_FLOAT:
      std::copy_n(default_value.data<float>(), n, out.data<float>() + offset);
      break;
    case DT_INT64:
      std::copy_n(default_value.data<int64_t>(), n, out.data<int64_t>() + offset);
      break;
    default:
      std::copy_n(default_value.data<std::string>(), n, out.data<std::string>() + offset);
      break;
  }
}

// A required feature's default is empty (ParseExample's input) or not set (a spec's).
bool HasDefault(const Tensor& default_value) {
  return default_value.IsInitialized() && default_value.NumElements() > 0;
}

// Sets every element of `out` to the first element of `padding`, or to 0 / "" without one.
void FillPadding(Tensor& out, const Tensor& padding) {
  const bool given = HasDefault(padding);
  const int64_t n = out.NumElements();
  switch (out.dtype()) {
    case DT_FLOAT:
      std::fill_n(out.data<float>(), n, given ? padding.data<float>()[0] : 0.0f);
      break;
    case DT_INT64:
      std::fill_n(out.data<int64_t>(), n, given ? padding.data<int64_t>()[0] : int64_t{0});
      break;
    default:
      std::fill_n(out.data<std::string>(), n, given ? padding.data<std::string>()[0] : std::string());
      break;
  }
}

void* ValuesAt(Tensor& t, int64_t offset) {
  switch (t.dtype()) {
    case DT_FLOAT:
      return t.data<float>() + offset;
    case DT_INT64:
      return t.data<int64_t>() + offset;
    default:
      return t.data<std::string>() + offset;
  }
}

}  // namespace

ExampleParser::ExampleParser(std::vector<SparseFeatureSpec> sparse, std::vector<DenseFeatureSpec> dense,
                             std::vector<RaggedFeatureSpec> ragged)
    : sparse_(std::move(sparse)), dense_(std::move(dense)), ragged_(std::move(ragged)) {
  auto check_dtype = [](const std::string& key, DataType dtype) {
    if (dtype != DT_FLOAT && dtype != DT_INT64 && dtype != DT_STRING) {
      InvalidArgument("Feature ", key, ": ", DataTypeString(dtype),
                      " is not a feature type (float, int64 or string)");
    }
  };
  for (const SparseFeatureSpec& s : sparse_) check_dtype(s.key, s.dtype);
  for (const DenseFeatureSpec& d : dense_) check_dtype(d.key, d.dtype);
  for (const RaggedFeatureSpec& r : ragged_) {
    check_dtype(r.key, r.dtype);
    if (r.splits_dtype != DT_INT32 && r.splits_dtype != DT_INT64) {
      InvalidArgument("Feature ", r.key, ": row splits must be int32 or int64, got ",
                      DataTypeString(r.splits_dtype));
    }
  }
}

std::vector<Tensor> ExampleParser::Parse(const Tensor& serialized, const Tensor* names, bool single,
                                         const std::vector<Tensor>& dense_defaults, ThreadPool* pool,
                                         const ExampleNamer& namer) const {
  const int64_t batch = serialized.NumElements();
  const auto records = serialized.flat<std::string>();
  auto name_of = [&](int64_t i) -> std::string {
    if (names != nullptr && names->NumElements() == batch) return names->flat<std::string>()[i];
    if (namer != nullptr) return namer(i);
    return "<unknown>";
  };
  const int ns = static_cast<int>(sparse_.size());
  const int nd = static_cast<int>(dense_.size());
  const int nr = static_cast<int>(ragged_.size());
  const int nk = ns + nd + nr;
  std::vector<std::string_view> keys;
  for (const SparseFeatureSpec& s : sparse_) keys.push_back(s.key);
  for (const DenseFeatureSpec& d : dense_) keys.push_back(d.key);
  for (const RaggedFeatureSpec& r : ragged_) keys.push_back(r.key);

  std::vector<Tensor> outputs(3 * ns + nd + 2 * nr);
  std::vector<const Tensor*> defaults(nd);
  for (int d = 0; d < nd; ++d) {
    const DenseFeatureSpec& spec = dense_[d];
    defaults[d] = dense_defaults.empty() ? &spec.default_value : &dense_defaults[d];
    if (spec.variable_length) continue;  // allocated once the longest example is known
    const Tensor& default_value = *defaults[d];
    if (HasDefault(default_value) &&
        (default_value.NumElements() != spec.shape.num_elements() || default_value.dtype() != spec.dtype)) {
      InvalidArgument("Default value of feature ", spec.key, " has shape ",
                      default_value.shape().DebugString(), ", expected ", spec.shape.DebugString());
    }
    TensorShape out_shape = spec.shape;
    if (!single) out_shape.InsertDim(0, batch);
    outputs[3 * ns + d] = Tensor(spec.dtype, out_shape);
  }

  // Per example: the views of the features whose output size depends on the whole batch
  // (sparse, variable-length dense, ragged; the fixed dense ones go straight to the outputs),
  // and the re-serialized Features of examples the scanner left to the protobuf parser.
  std::vector<FeatureView> kept_views(static_cast<size_t>(batch) * nk);
  std::vector<std::vector<std::string>> owned(batch);

  // Per-thread buffers, reused from example to example.
  struct Scratch {
    explicit Scratch(int nk) : found(nk), present(nk), views(nk), counts(nk) {}
    std::vector<std::string_view> found;
    std::vector<char> present;
    std::vector<FeatureView> views;
    std::vector<int64_t> counts;
  };
  auto parse_one = [&](int64_t i, Scratch& scratch) {
    // References rather than a structured binding: clang before 16 cannot capture bindings
    // in the lambda below.
    std::vector<std::string_view>& found = scratch.found;
    std::vector<char>& present = scratch.present;
    std::vector<FeatureView>& views = scratch.views;
    std::vector<int64_t>& counts = scratch.counts;
    // The index of the first feature the scanner cannot read, or -1.
    auto scan_features = [&] {
      for (int k = 0; k < nk; ++k) {
        views[k] = {};
        counts[k] = 0;
        if (!present[k]) continue;
        if (!ScanFeature(found[k], &views[k])) return k;
        if (views[k].kind != kNone && !CountValues(views[k], &counts[k])) return k;
      }
      return -1;
    };
    std::fill(present.begin(), present.end(), 0);
    if (!ScanExample(records[i], keys, found.data(), present.data()) || scan_features() >= 0) {
      // Left to the protobuf parser, whose re-serialized Features the scanner always reads.
      tensorflow::Example example;
      if (!example.ParseFromString(records[i])) {
        InvalidArgument("Name: ", name_of(i), ", Could not parse example input, value: '",
                        std::string_view(records[i]).substr(0, 32), "' (example ", i, " of ", batch, ")");
      }
      const auto& map = example.features().feature();
      owned[i].clear();
      owned[i].reserve(nk);  // views point into these strings: no reallocation
      for (int k = 0; k < nk; ++k) {
        auto it = map.find(std::string(keys[k]));
        present[k] = it != map.end();
        if (!present[k]) continue;
        owned[i].push_back(it->second.SerializeAsString());
        found[k] = owned[i].back();
      }
      // What protobuf accepts and the scanner does not is a list with fields other than its
      // values (a value of the wrong wire type, an unknown field), which TF rejects too.
      if (const int bad = scan_features(); bad >= 0) {
        InvalidArgument("Name: ", name_of(i), ", Key: ", keys[bad], ", Index: ", i,
                        ".  Can't parse serialized Example.");
      }
    }
    auto check_kind = [&](const FeatureView& view, const std::string& key, DataType dtype) {
      if (view.kind != KindOf(dtype)) {
        InvalidArgument("Name: ", name_of(i), ", Feature: ", key,
                        ".  Data types don't match. Data type: ", KindName(view.kind),
                        " but expected type: ", DataTypeString(dtype), " (example ", i, ")");
      }
    };
    // Sparse and ragged mismatches are worded as TF's fast parser words them.
    auto check_list_kind = [&](const FeatureView& view, std::string_view key, DataType dtype) {
      if (view.kind != KindOf(dtype)) {
        InvalidArgument("Name: ", name_of(i), ", Key: ", key, ", Index: ", i,
                        ".  Data types don't match. Expected type: ", DataTypeString(dtype),
                        ", Actual type: ", KindName(view.kind));
      }
    };
    for (int s = 0; s < ns; ++s) {
      if (views[s].kind == kNone) continue;
      check_list_kind(views[s], sparse_[s].key, sparse_[s].dtype);
      kept_views[i * nk + s] = views[s];
    }
    for (int r = 0; r < nr; ++r) {
      const FeatureView& view = views[ns + nd + r];
      if (view.kind == kNone) continue;
      check_list_kind(view, ragged_[r].key, ragged_[r].dtype);
      kept_views[i * nk + ns + nd + r] = view;
    }
    for (int d = 0; d < nd; ++d) {
      const DenseFeatureSpec& spec = dense_[d];
      const FeatureView& view = views[ns + d];
      Tensor& out = outputs[3 * ns + d];
      const int64_t n = spec.shape.num_elements();
      if (spec.variable_length) {
        if (view.kind == kNone) continue;  // allow_missing: no values
        check_kind(view, spec.key, spec.dtype);
        const int64_t count = counts[ns + d];
        if (n == 0 ? count != 0 : count % n != 0) {
          PartialTensorShape shape(spec.shape);
          DimVector dims = shape.dim_sizes();
          dims.insert(dims.begin(), -1);
          InvalidArgument(
              "Name: ", name_of(i), ", Key: ", spec.key, ", Index: ", i, ".  Number of ",
              DataTypeString(spec.dtype), " values is not a multiple of stride length. Saw ", count,
              " values but output shape is: ",
              PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())).DebugString());
        }
        kept_views[i * nk + ns + d] = view;
        continue;
      }
      if (view.kind == kNone) {
        if (!HasDefault(*defaults[d])) {
          InvalidArgument("Name: ", name_of(i), ", Feature: ", spec.key,
                          " (data type: ", DataTypeString(spec.dtype),
                          ") is required but could not be found (example ", i, ")");
        }
        CopyDefault(*defaults[d], out, i * n);
        continue;
      }
      check_kind(view, spec.key, spec.dtype);
      const int64_t count = counts[ns + d];
      if (count != n) {
        InvalidArgument("Name: ", name_of(i), ", Key: ", spec.key, ", Index: ", i, ".  Number of ",
                        DataTypeString(spec.dtype), " values != expected.  Values size: ", count,
                        " but output shape: ", spec.shape.DebugString());
      }
      CopyValues(view, ValuesAt(out, i * n));
    }
  };

  // Examples in parallel shards; the error of the lowest-numbered bad example wins, so the
  // message does not depend on scheduling.
  absl::Mutex error_mu;
  int64_t error_index = batch;
  std::exception_ptr error;
  auto parse_range = [&](int64_t begin, int64_t end) {
    Scratch scratch(nk);
    for (int64_t i = begin; i < end; ++i) {
      try {
        parse_one(i, scratch);
      } catch (...) {
        absl::MutexLock lock(&error_mu);
        if (i < error_index) {
          error_index = i;
          error = std::current_exception();
        }
        return;
      }
    }
  };
  if (pool != nullptr && batch > 1) {
    const int64_t bytes = batch > 0 ? static_cast<int64_t>(records[0].size()) : 0;
    pool->ParallelFor(batch, std::max<int64_t>(bytes, 100), parse_range);
  } else {
    parse_range(0, batch);
  }
  if (error) std::rethrow_exception(error);

  for (int s = 0; s < ns; ++s) {
    const SparseFeatureSpec& spec = sparse_[s];
    int64_t total = 0, max_len = 0;
    std::vector<int64_t> counts(batch, 0);
    for (int64_t i = 0; i < batch; ++i) {
      const FeatureView& view = kept_views[i * nk + s];
      if (view.kind == kNone) continue;
      CountValues(view, &counts[i]);
      total += counts[i];
      max_len = std::max(max_len, counts[i]);
    }
    const int rank = single ? 1 : 2;
    Tensor indices(DT_INT64, TensorShape({total, rank}));
    Tensor values(spec.dtype, TensorShape({total}));
    Tensor shape(DT_INT64, TensorShape({rank}));
    int64_t* idx = indices.data<int64_t>();
    int64_t at = 0;
    for (int64_t i = 0; i < batch; ++i) {
      const FeatureView& view = kept_views[i * nk + s];
      if (view.kind == kNone) continue;
      CopyValues(view, ValuesAt(values, at));
      for (int64_t j = 0; j < counts[i]; ++j, ++at) {
        if (single) {
          idx[at] = j;
        } else {
          idx[2 * at] = i;
          idx[2 * at + 1] = j;
        }
      }
    }
    if (single) {
      shape.flat<int64_t>()[0] = max_len;
    } else {
      shape.flat<int64_t>()[0] = batch;
      shape.flat<int64_t>()[1] = max_len;
    }
    outputs[s] = std::move(indices);
    outputs[ns + s] = std::move(values);
    outputs[2 * ns + s] = std::move(shape);
  }

  for (int d = 0; d < nd; ++d) {
    const DenseFeatureSpec& spec = dense_[d];
    if (!spec.variable_length) continue;
    const int64_t stride = spec.shape.num_elements();
    std::vector<int64_t> counts(batch, 0);
    int64_t max_rows = 0;
    for (int64_t i = 0; i < batch; ++i) {
      const FeatureView& view = kept_views[i * nk + ns + d];
      if (view.kind == kNone) continue;
      CountValues(view, &counts[i]);
      if (stride > 0) max_rows = std::max(max_rows, counts[i] / stride);
    }
    TensorShape out_shape = spec.shape;
    out_shape.InsertDim(0, max_rows);
    if (!single) out_shape.InsertDim(0, batch);
    Tensor out(spec.dtype, out_shape);
    FillPadding(out, *defaults[d]);
    for (int64_t i = 0; i < batch; ++i) {
      const FeatureView& view = kept_views[i * nk + ns + d];
      if (view.kind != kNone && counts[i] > 0) CopyValues(view, ValuesAt(out, i * max_rows * stride));
    }
    outputs[3 * ns + d] = std::move(out);
  }

  for (int r = 0; r < nr; ++r) {
    const RaggedFeatureSpec& spec = ragged_[r];
    std::vector<int64_t> splits(batch + 1, 0);
    for (int64_t i = 0; i < batch; ++i) {
      const FeatureView& view = kept_views[i * nk + ns + nd + r];
      int64_t count = 0;
      if (view.kind != kNone) CountValues(view, &count);
      splits[i + 1] = splits[i] + count;
    }
    Tensor values(spec.dtype, TensorShape({splits[batch]}));
    for (int64_t i = 0; i < batch; ++i) {
      const FeatureView& view = kept_views[i * nk + ns + nd + r];
      if (splits[i + 1] > splits[i]) CopyValues(view, ValuesAt(values, splits[i]));
    }
    // A single example's values need no splits: TF gives an empty tensor.
    const int64_t num_splits = single ? 0 : batch + 1;
    Tensor row_splits(spec.splits_dtype, TensorShape({num_splits}));
    for (int64_t i = 0; i < num_splits; ++i) {
      if (spec.splits_dtype == DT_INT32) {
        row_splits.data<int32_t>()[i] = static_cast<int32_t>(splits[i]);
      } else {
        row_splits.data<int64_t>()[i] = splits[i];
      }
    }
    outputs[3 * ns + nd + r] = std::move(values);
    outputs[3 * ns + nd + nr + r] = std::move(row_splits);
  }
  return outputs;
}

}  // namespace flowtrain::io
