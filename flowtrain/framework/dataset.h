// The objects behind tf.data in a session. A DatasetBase is an immutable description of a
// sequence of elements (each a tuple of tensors) made by a dataset op (TensorSliceDataset,
// MapDataset...) and passed to the next dataset op as a scalar DT_VARIANT tensor holding a
// `DatasetRef`. An IteratorBase walks one dataset; the iterator resource (IteratorV2) holds the
// current one, which MakeIterator replaces and IteratorGetNext advances.
//
//   data::DatasetRef ds = ...;                          // from a DT_VARIANT tensor
//   std::unique_ptr<data::IteratorBase> it = ds->MakeIterator();
//   data::IteratorContext ctx;
//   std::vector<Tensor> element;
//   while (it->GetNext(ctx, &element)) Use(element);
//
// Iterators can write their position into an IteratorState and continue from one, so that
// a restarted run resumes with the next unseen element (SerializeIterator/DeserializeIterator).
//
// Elements read from files carry their RecordOrigins (ops/dataset_functions.h) beside them:
// `it->origins()` after GetNext says which records the element holds, so that errors about
// it name file and record index.
#ifndef FLOWTRAIN_FRAMEWORK_DATASET_H_
#define FLOWTRAIN_FRAMEWORK_DATASET_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/framework/cancellation.h"
#include "flowtrain/ops/dataset_functions.h"

namespace flowtrain::data {

// A flat key → value record of an iterator's position. Each iterator writes its keys under a
// prefix of its own (see IteratorBase::prefix) so nested iterators do not collide.
class IteratorState {
 public:
  void WriteInt(const std::string& key, int64_t value);
  void WriteString(const std::string& key, std::string value);
  void WriteTensor(const std::string& key, const Tensor& value);
  // NotFound naming the key if it is missing (a state from another pipeline).
  int64_t ReadInt(const std::string& key) const;
  const std::string& ReadString(const std::string& key) const;
  Tensor ReadTensor(const std::string& key) const;
  bool Contains(const std::string& key) const { return values_.count(key) > 0; }
  // No entries: the state of an iterator that has no position yet (never initialized).
  bool empty() const { return values_.empty(); }

  std::string Serialize() const;
  // DataLoss if `bytes` is not a serialized state.
  static IteratorState Parse(const std::string& bytes);

 private:
  std::map<std::string, std::string> values_;
};

// What GetNext may wait on: the run's cancellation and deadline.
struct IteratorContext {
  CancellationManager* cancellation = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// The origins of an element that was not read from files: none.
const RecordOrigins& NoOrigins();

class IteratorBase {
 public:
  explicit IteratorBase(std::string prefix) : prefix_(std::move(prefix)) {}
  virtual ~IteratorBase() = default;
  IteratorBase(const IteratorBase&) = delete;
  IteratorBase& operator=(const IteratorBase&) = delete;

  // Sets *out to the next element and returns true, or returns false at the end. Not
  // thread-safe: the iterator resource serializes calls.
  virtual bool GetNext(IteratorContext& ctx, std::vector<Tensor>* out) = 0;
  // Where the element GetNext last returned was read from: one origin per record it holds
  // (per row of a batch), or none (NoOrigins()) when it was not read from files (or after a
  // restore). Valid until the next GetNext.
  virtual const RecordOrigins& origins() const { return NoOrigins(); }
  virtual void Save(IteratorState& state) = 0;
  virtual void Restore(IteratorState& state) = 0;

  // Key names of this iterator inside an IteratorState: "<prefix>/<name>".
  std::string Key(const std::string& name) const { return prefix_ + "/" + name; }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
};

class DatasetBase {
 public:
  virtual ~DatasetBase() = default;
  // `prefix` names the iterator in saved states (the parent's prefix plus this dataset's kind).
  virtual std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const = 0;
  virtual std::string DebugString() const = 0;
};

using DatasetRef = std::shared_ptr<const DatasetBase>;

// The origins of the string tensors that iterators last delivered to the step, so that a
// kernel failing on one of them later in the step (ParseExample on a batch of serialized
// Examples after IteratorGetNext) can name the record at fault. A Tensor has no room for such
// metadata, so entries are keyed by buffer address; each entry holds a reference to its tensor,
// so the buffer cannot be freed and its address reused while the entry exists. An iterator
// keeps one entry (its last element's), replaced at each GetNext and dropped with it.
//
//   DeliveredOrigins::Record(resource, element, origins);        // IteratorGetNext
//   RecordOrigins o = DeliveredOrigins::Find(serialized);        // ParseExample, on bad input
class DeliveredOrigins {
 public:
  // Remembers the components of `element` that are string tensors with one origin per
  // element (a batch of records, or one record), under `owner`, replacing its previous entry.
  static void Record(const void* owner, const std::vector<Tensor>& element, const RecordOrigins& origins);
  static void Forget(const void* owner);
  // The origins of the elements of `t` (in order) if it shares the buffer of a remembered
  // tensor of the same size; empty otherwise.
  static RecordOrigins Find(const Tensor& t);
};

// Wraps a dataset in a scalar DT_VARIANT tensor, and back (InvalidArgument naming `op` if the
// tensor holds no dataset).
Tensor DatasetToTensor(DatasetRef dataset);
DatasetRef DatasetFromTensor(const Tensor& tensor, std::string_view op);

}  // namespace flowtrain::data

#endif  // FLOWTRAIN_FRAMEWORK_DATASET_H_
