// BundleWriter saves named tensors as a TensorFlow V2 tensor bundle: the checkpoint format that
// TF's SaveV2 op writes and that TF, TF Serving and flowtrain read (layout in tensor_bundle.h).
//
//   io::BundleWriter writer("runs/digits/model.ckpt-1200");
//   writer.Add("dense/kernel", kernel);
//   writer.Add("global_step", Tensor::Scalar<int64_t>(1200));
//   writer.Finish();      // data file, then index, each renamed into place
//
// Tensors are streamed to the data file as they are added, through a small staging buffer, so
// saving a model needs a few MB beyond the model itself. Both files are written under temporary
// names, fsync'ed and renamed into place (data first, index last), so a crash at any moment
// leaves no half-written file under a checkpoint's name; a writer destroyed without Finish()
// removes its temporary files. Not thread-safe.
//
// MergeBundles joins the per-device bundles of a sharded save into one checkpoint, as TF's
// MergeV2Checkpoints op does:
//
//   io::MergeBundles({tmp + "/part-00000-of-00002", tmp + "/part-00001-of-00002"},
//                    "runs/digits/model.ckpt-1200", {.delete_old_dirs = true});
#ifndef FLOWTRAIN_IO_TENSOR_BUNDLE_WRITER_H_
#define FLOWTRAIN_IO_TENSOR_BUNDLE_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_slice.h"

namespace flowtrain {
class AtomicFileWriter;
}

namespace flowtrain::io {

class BundleWriter {
 public:
  struct Options {
    // Each tensor's data starts at a multiple of this many bytes; the zero padding is not
    // counted in the entry's size. TF's SaveV2 uses 1 (dense packing).
    int data_alignment = 1;
  };

  // Creates the prefix's directory if needed and opens the temporary data file.
  explicit BundleWriter(std::string prefix) : BundleWriter(std::move(prefix), Options()) {}
  BundleWriter(std::string prefix, Options options);
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;
  ~BundleWriter();  // without Finish(), removes the temporary files

  // Appends `tensor`'s bytes to the data file and records its entry under `key`. Data is laid
  // out in the order of Add calls; the index lists keys sorted. InvalidArgument for the empty
  // key (reserved for the header), a duplicate key or an empty Tensor. The bytes are written
  // straight from the tensor, which must not change during the call.
  void Add(std::string_view key, const Tensor& tensor);

  // Saves `slice_tensor` as the part `slice` of the tensor `full_key` of `full_shape`, as TF's
  // BundleWriter::AddSlice: the entry of `full_key` (dtype, full shape, no data) lists the
  // slice, whose values are added under EncodeTensorNameSlice(full_key, slice). Several slices
  // of one key may be added. InvalidArgument if the slice does not fit `full_shape`, the tensor
  // is not the slice's shape, or dtype or full shape differ from an earlier slice's.
  void AddSlice(std::string_view full_key, const TensorShape& full_shape, const TensorSlice& slice,
                const Tensor& slice_tensor);

  // Writes the index and renames both files into place. The writer is unusable afterwards.
  void Finish();

  const std::string& prefix() const { return prefix_; }
  // Bytes in the data file so far.
  uint64_t data_size() const;

 private:
  void CheckUsable() const;
  uint32_t AppendChecksummed(const void* data, size_t n, uint32_t crc);
  void StartWriteback();
  void WriteNumericTensor(const Tensor& tensor, tensorflow::BundleEntryProto* entry);
  void WriteStringTensor(const Tensor& tensor, tensorflow::BundleEntryProto* entry);
  void PadToAlignment();

  std::string prefix_;
  Options options_;
  std::unique_ptr<AtomicFileWriter> data_;
  BundleEntryMap entries_;
  // A second descriptor on the temporary data file, used only to start writeback early.
  int writeback_fd_ = -1;
  uint64_t writeback_started_ = 0;  // data bytes handed to writeback so far
  bool finished_ = false;
  bool failed_ = false;
};

struct MergeBundlesOptions {
  // After merging, removes the directory of each input prefix that differs from the merged
  // prefix's directory, if it is empty (TF's MergeV2Checkpoints delete_old_dirs).
  bool delete_old_dirs = false;
};

// Merges the bundles at `prefixes` into one bundle at `merged_prefix`: their data files are
// renamed to `<merged_prefix>.data-<i>-of-<n>` (numbered in the order of `prefixes`), one
// index holding every entry with its new shard id is written atomically, and the inputs' index
// files are deleted. `merged_prefix` may equal one of `prefixes`. InvalidArgument if two
// bundles hold the same key or disagree on endianness or format version.
void MergeBundles(const std::vector<std::string>& prefixes, const std::string& merged_prefix,
                  const MergeBundlesOptions& options = {});

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_TENSOR_BUNDLE_WRITER_H_
