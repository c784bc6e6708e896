#include "flowtrain/ops/io_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"

namespace flowtrain {
namespace {

// Scalars broadcast; otherwise the shape of the first non-scalar input.
void StringJoinShape(InferenceContext& c) {
  PartialTensorShape out({});
  for (int i = 0; i < c.num_inputs(); ++i) {
    const PartialTensorShape& in = c.input(i);
    if (in.dims() == 0) continue;
    out = in;
    break;
  }
  c.set_output(0, out);
}

}  // namespace

FT_REGISTER_OP("SaveV2")
    .Input("prefix: string")
    .Input("tensor_names: string")
    .Input("shape_and_slices: string")
    .Input("tensors: dtypes")
    .Attr("dtypes: list(type)")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

FT_REGISTER_OP("RestoreV2")
    .Input("prefix: string")
    .Input("tensor_names: string")
    .Input("shape_and_slices: string")
    .Output("tensors: dtypes")
    .Attr("dtypes: list(type)")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

FT_REGISTER_OP("MergeV2Checkpoints")
    .Input("checkpoint_prefixes: string")
    .Input("destination_prefix: string")
    .Attr("delete_old_dirs: bool = true")
    // TF >= 2.6: true skips prefixes without files. flowtrain implements the default (false),
    // what TF's savers write; the kernel refuses true.
    .Attr("allow_missing_files: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

FT_REGISTER_OP("ShardedFilename")
    .Input("basename: string")
    .Input("shard: int32")
    .Input("num_shards: int32")
    .Output("filename: string")
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("ShardedFilespec")
    .Input("basename: string")
    .Input("num_shards: int32")
    .Output("filename: string")
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("StringJoin")
    .Input("inputs: N * string")
    .Attr("N: int")
    .Attr("separator: string = ''")
    .Output("output: string")
    .SetShapeFn(StringJoinShape);

// Whether each string matches `pattern` as a whole. TF's savers (2.x) test the checkpoint
// prefix with "^s3://.*" to pick the temporary-file suffix. The pattern is RE2 syntax, as in TF
// (the kernel matches with RE2 itself).
FT_REGISTER_OP("StaticRegexFullMatch")
    .Input("input: string")
    .Output("output: bool")
    .Attr("pattern: string")
    .SetShapeFn(shape_fns::UnchangedShape);

namespace ops {

Output StaticRegexFullMatch(Output input, const std::string& pattern, std::string_view name) {
  return NodeBuilder("StaticRegexFullMatch", name).Input(input).Attr("pattern", pattern).Finalize();
}

Operation SaveV2(Output prefix, Output tensor_names, Output shape_and_slices,
                 const std::vector<Output>& tensors, std::string_view name) {
  return NodeBuilder("SaveV2", name)
      .Input(prefix)
      .Input(tensor_names)
      .Input(shape_and_slices)
      .Input(tensors)
      .Finalize();
}

Operation SaveV2(Output prefix, const std::vector<std::string>& tensor_names,
                 const std::vector<std::string>& shape_and_slices, const std::vector<Output>& tensors,
                 std::string_view name) {
  if (tensor_names.size() != tensors.size() || shape_and_slices.size() != tensors.size()) {
    InvalidArgument("SaveV2 '", name, "': ", tensor_names.size(), " names and ", shape_and_slices.size(),
                    " slices for ", tensors.size(), " tensors");
  }
  OpNameScope scope(*prefix.graph(), name);
  Output names = Const(Tensor::FromVector<std::string>(tensor_names), "tensor_names");
  Output slices = Const(Tensor::FromVector<std::string>(shape_and_slices), "shape_and_slices");
  scope.Exit();
  return NodeBuilder("SaveV2", scope.op_name())
      .ExactName()
      .Input(prefix)
      .Input(names)
      .Input(slices)
      .Input(tensors)
      .Finalize();
}

std::vector<Output> RestoreV2(Output prefix, Output tensor_names, Output shape_and_slices,
                              const std::vector<DataType>& dtypes, std::string_view name) {
  Operation op = NodeBuilder("RestoreV2", name)
                     .Input(prefix)
                     .Input(tensor_names)
                     .Input(shape_and_slices)
                     .Attr("dtypes", dtypes)
                     .Finalize();
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

std::vector<Output> RestoreV2(Output prefix, const std::vector<std::string>& tensor_names,
                              const std::vector<std::string>& shape_and_slices,
                              const std::vector<DataType>& dtypes, std::string_view name) {
  if (tensor_names.size() != dtypes.size() || shape_and_slices.size() != dtypes.size()) {
    InvalidArgument("RestoreV2 '", name, "': ", tensor_names.size(), " names and ", shape_and_slices.size(),
                    " slices for ", dtypes.size(), " dtypes");
  }
  OpNameScope scope(*prefix.graph(), name);
  Output names = Const(Tensor::FromVector<std::string>(tensor_names), "tensor_names");
  Output slices = Const(Tensor::FromVector<std::string>(shape_and_slices), "shape_and_slices");
  scope.Exit();
  Operation op = NodeBuilder("RestoreV2", scope.op_name())
                     .ExactName()
                     .Input(prefix)
                     .Input(names)
                     .Input(slices)
                     .Attr("dtypes", dtypes)
                     .Finalize();
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

Operation MergeV2Checkpoints(Output checkpoint_prefixes, Output destination_prefix, bool delete_old_dirs,
                             std::string_view name) {
  return NodeBuilder("MergeV2Checkpoints", name)
      .Input(checkpoint_prefixes)
      .Input(destination_prefix)
      .Attr("delete_old_dirs", delete_old_dirs)
      .Finalize();
}

Output ShardedFilename(Output basename, Output shard, Output num_shards, std::string_view name) {
  return NodeBuilder("ShardedFilename", name).Input(basename).Input(shard).Input(num_shards).Finalize();
}

Output ShardedFilespec(Output basename, Output num_shards, std::string_view name) {
  return NodeBuilder("ShardedFilespec", name).Input(basename).Input(num_shards).Finalize();
}

Output StringJoin(const std::vector<Output>& inputs, std::string_view separator, std::string_view name) {
  if (inputs.empty()) InvalidArgument("StringJoin '", name, "' needs at least one input");
  return NodeBuilder("StringJoin", name).Input(inputs).Attr("separator", separator).Finalize();
}

}  // namespace ops
}  // namespace flowtrain
