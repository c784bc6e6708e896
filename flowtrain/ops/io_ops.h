// Checkpoint ops with TF's names: SaveV2 and RestoreV2 on V2 tensor bundles,
// MergeV2Checkpoints for sharded saves, and the string ops that build shard file names
// (ShardedFilename, ShardedFilespec, StringJoin). train::Saver builds its graph from these.
//
//   Operation save = ops::SaveV2(prefix, {"w", "b"}, {"", ""}, {w, b});   // save/SaveV2
//   std::vector<Output> restored = ops::RestoreV2(prefix, {"w"}, {""}, {DT_FLOAT});
//
// (Reconstructed by the input-pipeline engineer after accidentally overwriting the untracked
// original; signatures and op specs are recovered from its compiled object — please review.)
#ifndef FLOWTRAIN_OPS_IO_OPS_H_
#define FLOWTRAIN_OPS_IO_OPS_H_

#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

Operation SaveV2(Output prefix, Output tensor_names, Output shape_and_slices,
                 const std::vector<Output>& tensors, std::string_view name = "SaveV2");
// Names and slices become Consts "<op>/tensor_names" and "<op>/shape_and_slices".
Operation SaveV2(Output prefix, const std::vector<std::string>& tensor_names,
                 const std::vector<std::string>& shape_and_slices, const std::vector<Output>& tensors,
                 std::string_view name = "SaveV2");

std::vector<Output> RestoreV2(Output prefix, Output tensor_names, Output shape_and_slices,
                              const std::vector<DataType>& dtypes, std::string_view name = "RestoreV2");
std::vector<Output> RestoreV2(Output prefix, const std::vector<std::string>& tensor_names,
                              const std::vector<std::string>& shape_and_slices,
                              const std::vector<DataType>& dtypes, std::string_view name = "RestoreV2");

Operation MergeV2Checkpoints(Output checkpoint_prefixes, Output destination_prefix,
                             bool delete_old_dirs = true, std::string_view name = "MergeV2Checkpoints");

// "<basename>-<shard>-of-<num_shards>", both five digits.
Output ShardedFilename(Output basename, Output shard, Output num_shards,
                       std::string_view name = "ShardedFilename");
// "<basename>-?????-of-<num_shards>".
Output ShardedFilespec(Output basename, Output num_shards, std::string_view name = "ShardedFilespec");
// Element-wise concatenation of strings (scalars broadcast) with `separator` between them.
Output StringJoin(const std::vector<Output>& inputs, std::string_view separator = "",
                  std::string_view name = "StringJoin");
// True where the whole string matches `pattern` (TF's StaticRegexFullMatch, which TF 2.x's
// savers put in every graph).
Output StaticRegexFullMatch(Output input, const std::string& pattern,
                            std::string_view name = "StaticRegexFullMatch");

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_IO_OPS_H_
