#include "flowtrain/framework/dataset.h"

#include <any>
#include <cstring>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/values_dataset.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain::data {
namespace {

constexpr char kStateMagic[] = "ftiter1";

void PutString(std::string* out, std::string_view s) {
  const uint64_t n = s.size();
  out->append(reinterpret_cast<const char*>(&n), sizeof(n));
  out->append(s);
}

bool GetString(std::string_view* in, std::string* s) {
  uint64_t n;
  if (in->size() < sizeof(n)) return false;
  std::memcpy(&n, in->data(), sizeof(n));
  in->remove_prefix(sizeof(n));
  if (in->size() < n) return false;
  s->assign(in->data(), n);
  in->remove_prefix(n);
  return true;
}

// DeliveredOrigins' entries: per owner, the tensors it delivered and their origins.
struct Delivered {
  std::vector<Tensor> tensors;
  RecordOrigins origins;
};

ABSL_CONST_INIT absl::Mutex delivered_mu(absl::kConstInit);

std::unordered_map<const void*, Delivered>& DeliveredByOwner() ABSL_EXCLUSIVE_LOCKS_REQUIRED(delivered_mu) {
  static auto* entries = new std::unordered_map<const void*, Delivered>;
  return *entries;
}

}  // namespace

const RecordOrigins& NoOrigins() {
  static const RecordOrigins* none = new RecordOrigins;
  return *none;
}

void DeliveredOrigins::Record(const void* owner, const std::vector<Tensor>& element,
                              const RecordOrigins& origins) {
  Delivered delivered;
  for (const Tensor& t : element) {
    if (t.dtype() == DT_STRING && t.NumElements() == static_cast<int64_t>(origins.size()) && t.dims() <= 1) {
      delivered.tensors.push_back(t);
    }
  }
  if (delivered.tensors.empty()) return Forget(owner);
  delivered.origins = origins;
  absl::MutexLock lock(&delivered_mu);
  std::swap(DeliveredByOwner()[owner], delivered);
  // `delivered`, now the replaced entry, is released after the lock (declared before it).
}

void DeliveredOrigins::Forget(const void* owner) {
  Delivered dropped;  // released outside the lock
  absl::MutexLock lock(&delivered_mu);
  auto it = DeliveredByOwner().find(owner);
  if (it == DeliveredByOwner().end()) return;
  dropped = std::move(it->second);
  DeliveredByOwner().erase(it);
}

RecordOrigins DeliveredOrigins::Find(const Tensor& t) {
  if (t.dtype() != DT_STRING || t.raw_data() == nullptr) return {};
  absl::MutexLock lock(&delivered_mu);
  for (const auto& [owner, delivered] : DeliveredByOwner()) {
    for (const Tensor& d : delivered.tensors) {
      if (d.raw_data() == t.raw_data() && d.NumElements() == t.NumElements()) return delivered.origins;
    }
  }
  return {};
}

void IteratorState::WriteInt(const std::string& key, int64_t value) { values_[key] = StrCat(value); }

void IteratorState::WriteString(const std::string& key, std::string value) {
  values_[key] = std::move(value);
}

void IteratorState::WriteTensor(const std::string& key, const Tensor& value) {
  // A window (a variant holding a ValuesDataset) is kept by its elements; other variants have
  // no serialized form.
  tensorflow::TensorProto window;
  if (ValuesDatasetToProto(value, &window)) {
    values_[key] = window.SerializeAsString();
    return;
  }
  values_[key] = TensorToProto(value).SerializeAsString();
}

const std::string& IteratorState::ReadString(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    NotFound("Iterator state has no entry '", key, "': it was saved from another input pipeline");
  }
  return it->second;
}

int64_t IteratorState::ReadInt(const std::string& key) const {
  const std::string& text = ReadString(key);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    DataLoss("Iterator state entry '", key, "' is not an integer");
  }
  return value;
}

Tensor IteratorState::ReadTensor(const std::string& key) const {
  tensorflow::TensorProto proto;
  if (!proto.ParseFromString(ReadString(key))) DataLoss("Iterator state entry '", key, "' is not a tensor");
  Tensor window;
  if (ValuesDatasetFromProto(proto, &window)) return window;
  return TensorFromProto(proto);
}

std::string IteratorState::Serialize() const {
  std::string out = kStateMagic;
  for (const auto& [key, value] : values_) {
    PutString(&out, key);
    PutString(&out, value);
  }
  return out;
}

IteratorState IteratorState::Parse(const std::string& bytes) {
  std::string_view in(bytes);
  if (in.substr(0, sizeof(kStateMagic) - 1) != kStateMagic) {
    DataLoss("Not a serialized iterator state (", bytes.size(), " bytes)");
  }
  in.remove_prefix(sizeof(kStateMagic) - 1);
  IteratorState state;
  while (!in.empty()) {
    std::string key, value;
    if (!GetString(&in, &key) || !GetString(&in, &value)) DataLoss("Serialized iterator state is truncated");
    state.values_[std::move(key)] = std::move(value);
  }
  return state;
}

Tensor DatasetToTensor(DatasetRef dataset) {
  Tensor t(DT_VARIANT, TensorShape());
  t.scalar<std::any>() = std::move(dataset);
  return t;
}

DatasetRef DatasetFromTensor(const Tensor& tensor, std::string_view op) {
  if (tensor.dtype() == DT_VARIANT && tensor.NumElements() == 1) {
    if (const DatasetRef* ref = std::any_cast<DatasetRef>(&tensor.scalar<std::any>())) return *ref;
  }
  InvalidArgument(op, " expects a dataset, got ", tensor.DebugString());
}

}  // namespace flowtrain::data
