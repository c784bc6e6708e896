// CheckpointReader inspects a checkpoint without any graph: the names, dtypes and shapes of its
// variables and their values. It is TF's tf.train.load_checkpoint / NewCheckpointReader for V2
// checkpoints, and what `inspect_checkpoint` prints.
//
//   io::CheckpointReader reader("runs/digits/model.ckpt-1200");
//   for (const auto& [name, shape] : reader.GetVariableToShapeMap()) { ... }
//   if (reader.HasTensor("global_step")) {
//     int64_t step = reader.GetTensor("global_step").scalar<int64_t>();
//   }
//   std::cout << reader.DebugString();   // "dense/bias (DT_FLOAT) [4]\n..."
//
// The per-slice entries of partitioned variables (keys TF encodes with OrderedCode, which begin
// with a 0 byte) are not variables and are left out of the maps, as TF does.
#ifndef FLOWTRAIN_IO_CHECKPOINT_READER_H_
#define FLOWTRAIN_IO_CHECKPOINT_READER_H_

#include <map>
#include <string>
#include <string_view>

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/core/types.h"
#include "flowtrain/io/tensor_bundle_reader.h"

namespace flowtrain::io {

class CheckpointReader {
 public:
  // `prefix` as Saver::Save returns it, e.g. "runs/x/model.ckpt-1200" (no ".index").
  explicit CheckpointReader(std::string prefix) : reader_(std::move(prefix)) {}

  bool HasTensor(std::string_view name) const;
  // The saved value; NotFound if absent, DataLoss if its bytes are damaged.
  Tensor GetTensor(std::string_view name) const { return reader_.Lookup(name); }

  std::map<std::string, TensorShape> GetVariableToShapeMap() const;
  std::map<std::string, DataType> GetVariableToDataTypeMap() const;

  // "name (DT_TYPE) [dims]" per variable, sorted by name, one per line; a partitioned
  // variable is listed once, with its full shape (beyond TF, whose listing shows the slice
  // entries instead).
  std::string DebugString() const;

  const std::string& prefix() const { return reader_.prefix(); }
  const BundleReader& bundle() const { return reader_; }

 private:
  BundleReader reader_;
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_CHECKPOINT_READER_H_
