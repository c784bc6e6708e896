// The on-disk layout shared by BundleWriter, BundleReader and MergeBundles: TensorFlow's V2
// "tensor bundle", the format of every TF checkpoint since 1.0.
//
// A bundle with prefix P is
//   P.index                   a LevelDB-format table (SSTable): key "" -> BundleHeaderProto,
//                             tensor name -> BundleEntryProto (dtype, shape, shard, offset, size,
//                             masked CRC32C of the data bytes), keys in bytewise order;
//   P.data-00000-of-00001     the tensors' bytes, concatenated, no header or padding
//                             (one file per shard after a sharded save: P.data-0000i-of-0000n).
//
//   std::string index = MetaFilename("runs/x/model.ckpt-10");          // ".../model.ckpt-10.index"
//   std::string data = DataFilename("runs/x/model.ckpt-10", 0, 1);     // "...data-00000-of-00001"
//
// The index is written and read with Debian's libleveldb, configured to produce the exact bytes
// TensorFlow's own table code writes (256 KiB blocks, restart interval 16, no compression, no
// filter). Reading accepts snappy-compressed blocks too, which older TF versions wrote.
#ifndef FLOWTRAIN_IO_TENSOR_BUNDLE_H_
#define FLOWTRAIN_IO_TENSOR_BUNDLE_H_

#include <map>
#include <string>
#include <string_view>

#include "flowtrain/proto/tensor_bundle.pb.h"

namespace flowtrain::io {

// Format versions, equal to TensorFlow's. A reader accepts bundles whose producer is at least
// kTensorBundleMinProducer and whose min_consumer is at most kTensorBundleVersion.
inline constexpr int kTensorBundleVersion = 1;
inline constexpr int kTensorBundleMinProducer = 0;
inline constexpr int kTensorBundleMinConsumer = 0;

// The key of the header entry; it sorts before every tensor name.
inline constexpr std::string_view kHeaderEntryKey = "";

// "<prefix>.index".
std::string MetaFilename(std::string_view prefix);
// "<prefix>.data-%05d-of-%05d".
std::string DataFilename(std::string_view prefix, int shard_id, int num_shards);

// The header TF writes for a bundle with `num_shards` data files on a little-endian host:
// num_shards, endianness LITTLE, version {producer: 1}.
tensorflow::BundleHeaderProto MakeBundleHeader(int num_shards);

// Tensor name -> entry, in the bytewise key order of the index. Keys compare as
// std::string_view so lookups by view need no copy.
using BundleEntryMap = std::map<std::string, tensorflow::BundleEntryProto, std::less<>>;

namespace bundle_internal {

// The bytes of an index table holding `header` under "" and then `entries` in key order,
// byte-identical to what TensorFlow writes for the same protos.
std::string BuildIndexTable(const tensorflow::BundleHeaderProto& header, const BundleEntryMap& entries);

struct IndexContents {
  tensorflow::BundleHeaderProto header;
  BundleEntryMap entries;
};

// Reads and checks the index table at `index_path`: every block checksum, the header entry,
// the format version, and that every entry parses with a valid shape and shard id.
// NotFound if the file is missing; DataLoss naming the file if it is damaged.
IndexContents ReadIndexTable(const std::string& index_path);

}  // namespace bundle_internal
}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_TENSOR_BUNDLE_H_
