// SaveableObject: state that a train::Saver writes into checkpoints beside the variables and
// puts back on restore, as TF's BaseSaverBuilder.SaveableObject. Each spec is one tensor the
// save op writes under a checkpoint key; `restore` builds the ops that take the restored
// tensors (one per spec, in order) back into the object. A Saver saves the SaveableObjects
// given in its options, and — when it is given no variable list — those in the graph's
// SAVEABLE_OBJECTS collection (GraphKeys::kSaveableObjects, items of type
// std::shared_ptr<SaveableObject>), so Scaffold's default saver and CheckpointSaverHook
// pick them up as TF's do.
//
//   // An input pipeline's position saved with the model (see data::MakeSaveableFromIterator):
//   graph.AddToCollection(GraphKeys::kSaveableObjects, data::MakeSaveableFromIterator(it));
//   train::Saver saver;   // saves the variables and "Iterator:0-state"
#ifndef FLOWTRAIN_OPS_SAVEABLE_OBJECT_H_
#define FLOWTRAIN_OPS_SAVEABLE_OBJECT_H_

#include <functional>
#include <string>
#include <vector>

#include "flowtrain/graph/graph.h"

namespace flowtrain {

struct SaveableObject {
  struct SaveSpec {
    Output tensor;     // evaluated by the save op
    std::string name;  // checkpoint key
    // Empty for a whole tensor; for a part of a partitioned variable its slice of the tensor
    // `name` (SaveSliceInfo::Spec, e.g. "10 4 0,4:0,4"), saved and restored as TF does.
    std::string slice_spec = {};
  };
  // Builds the restore ops from the restored tensors (one per spec); called inside the
  // saver's name scope while it builds its restore subgraph.
  using RestoreFn = std::function<Operation(const std::vector<Output>& restored)>;

  // The object's node (e.g. the iterator's handle op): its device picks the shard in sharded
  // saves.
  Operation op;
  // Orders saveables among the variables (whose names are their op names).
  std::string name;
  std::vector<SaveSpec> specs;
  RestoreFn restore;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_SAVEABLE_OBJECT_H_
