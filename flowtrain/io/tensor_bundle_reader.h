// BundleReader reads a TensorFlow V2 tensor bundle (a TF or flowtrain checkpoint; layout in
// tensor_bundle.h) and checks every byte it returns against the checksums TF stores.
//
//   io::BundleReader reader("runs/digits/model.ckpt-1200");
//   for (const std::string& name : reader.ListKeys()) {
//     auto [dtype, shape] = reader.LookupDtypeAndShape(name);
//   }
//   Tensor kernel = reader.Lookup("dense/kernel");
//   reader.VerifyAll();   // checks every tensor's checksum, one tensor at a time
//
// Opening reads and verifies the whole index (it holds only metadata). Tensor data is read on
// demand with positioned reads, so Lookup may be called from several threads at once.
//
// Errors: a missing index is NotFound; a missing key is NotFound naming the key and the prefix;
// a damaged index, truncated data or a checksum mismatch is DataLoss naming the file (and the
// tensor). A damaged checkpoint never yields wrong values or a crash.
#ifndef FLOWTRAIN_IO_TENSOR_BUNDLE_READER_H_
#define FLOWTRAIN_IO_TENSOR_BUNDLE_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/core/types.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_slice.h"

namespace flowtrain::io {

class BundleReader {
 public:
  explicit BundleReader(std::string prefix);
  BundleReader(const BundleReader&) = delete;
  BundleReader& operator=(const BundleReader&) = delete;
  ~BundleReader();

  const std::string& prefix() const { return prefix_; }
  const tensorflow::BundleHeaderProto& header() const { return header_; }
  int num_shards() const { return header_.num_shards(); }

  bool Contains(std::string_view key) const;

  struct DtypeAndShape {
    DataType dtype;
    TensorShape shape;
  };
  DtypeAndShape LookupDtypeAndShape(std::string_view key) const;
  // The stored metadata of `key` (dtype, shape, shard, offset, size, checksum).
  const tensorflow::BundleEntryProto& GetBundleEntryProto(std::string_view key) const;

  // Reads the tensor stored under `key` into a new Tensor, verifying its checksum. A tensor
  // saved as slices (a partitioned variable) is put together from them.
  Tensor Lookup(std::string_view key) const;
  // The part `slice` of the tensor `key`, whether it was saved whole or as slices of any
  // partitioning (TF's LookupSlice): this is how a variable restores into another partition
  // count. InvalidArgument if the slice does not fit the tensor; NotFound if the saved slices
  // do not cover it; DataLoss naming the slice when the index lists a slice that does not fit
  // the full shape, overlaps another, or whose entry is missing or of another shape or dtype.
  Tensor LookupSlice(std::string_view key, const TensorSlice& slice) const;
  // As Lookup, into `out`'s existing buffer (for restoring into variables that already exist);
  // `out` must have the stored dtype and shape (InvalidArgument otherwise).
  void LookupInto(std::string_view key, Tensor* out) const;

  // Every tensor name, sorted (the header entry excluded).
  std::vector<std::string> ListKeys() const;
  // Every entry by name, sorted, for iteration without copying the keys.
  const BundleEntryMap& entries() const { return entries_; }

  // Reads every tensor's bytes and checks its checksum, holding one chunk (or, for string
  // tensors, one tensor) in memory at a time. DataLoss naming the first damaged tensor.
  void VerifyAll() const;

  // One line per tensor, "name (DT_FLOAT) [2,4]", as TF's BundleReader::DebugString.
  std::string DebugString() const;

 private:
  const tensorflow::BundleEntryProto& EntryOrThrow(std::string_view key) const;
  // The slices the sliced tensor `key` is stored as, each checked against the full shape, the
  // others and its own entry and data; NotFound unless together they cover `wanted`.
  std::vector<TensorSlice> StoredSlices(std::string_view key, const tensorflow::BundleEntryProto& entry,
                                        const TensorSlice& wanted) const;
  // Fills `out` (of the slice's shape) with `slice` of the sliced tensor `key`, from the
  // slices StoredSlices returned (and checked) for it.
  void ReadSliceInto(std::string_view key, const tensorflow::BundleEntryProto& entry,
                     const std::vector<TensorSlice>& stored, const TensorSlice& slice, Tensor* out) const;
  void ReadValue(std::string_view key, const tensorflow::BundleEntryProto& entry, Tensor* out) const;
  void ReadStringValue(std::string_view key, const tensorflow::BundleEntryProto& entry, Tensor* out) const;
  // Reads [offset, offset + n) of the entry's shard into `dest` (or only checksums it when
  // `dest` is null) and returns the CRC32C of the bytes read.
  uint32_t ReadChecksummed(std::string_view key, const tensorflow::BundleEntryProto& entry, char* dest) const;
  // The open descriptor of `shard`'s data file, after checking [offset, offset + size) lies
  // within it.
  int DataFile(std::string_view key, const tensorflow::BundleEntryProto& entry) const;
  void CheckChecksum(std::string_view key, const tensorflow::BundleEntryProto& entry, uint32_t actual) const;

  std::string prefix_;
  tensorflow::BundleHeaderProto header_;
  BundleEntryMap entries_;
  bool need_to_swap_bytes_ = false;

  mutable absl::Mutex files_mu_;
  mutable std::vector<int> data_fds_ ABSL_GUARDED_BY(files_mu_);  // -1 until first opened
  mutable std::vector<uint64_t> data_sizes_ ABSL_GUARDED_BY(files_mu_);
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_TENSOR_BUNDLE_READER_H_
