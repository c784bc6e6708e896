// The names a SavedModel directory and its MetaGraphs use (TF's saved_model/constants):
//
//   export_dir/
//     saved_model.pb          the SavedModel proto (or saved_model.pbtxt, its text form)
//     variables/variables.*   one V2 checkpoint shared by every MetaGraph
//     assets/                 files the graph reads (vocabularies, ...), fed by AssetFileDefs
//     assets.extra/           the user's: neither written nor read by the builder or loader
//                             (TF Serving keeps warm-up requests there)
#ifndef FLOWTRAIN_SAVED_MODEL_CONSTANTS_H_
#define FLOWTRAIN_SAVED_MODEL_CONSTANTS_H_

#include <cstdint>

namespace flowtrain::saved_model {

// The SavedModel format's version, written to saved_model_schema_version.
inline constexpr int64_t kSavedModelSchemaVersion = 1;

inline constexpr char kSavedModelFilenamePb[] = "saved_model.pb";
inline constexpr char kSavedModelFilenamePbTxt[] = "saved_model.pbtxt";
inline constexpr char kSavedModelVariablesDirectory[] = "variables";
// The checkpoint prefix inside the variables directory: variables/variables.index, ...
inline constexpr char kSavedModelVariablesFilename[] = "variables";
inline constexpr char kSavedModelAssetsDirectory[] = "assets";
inline constexpr char kSavedModelAssetsExtraDirectory[] = "assets.extra";

// Collection of AssetFileDefs (as google.protobuf.Any) that TF1's builder writes.
inline constexpr char kSavedModelAssetsKey[] = "saved_model_assets";
// Collection holding the op the loader runs after restoring the variables.
inline constexpr char kSavedModelMainOpKey[] = "saved_model_main_op";
// The same, as TF before 1.2 wrote it; used only when there is no main op.
inline constexpr char kSavedModelLegacyInitOpKey[] = "legacy_init_op";
// Collection of the train op (recorded, never run by the loader).
inline constexpr char kSavedModelTrainOpKey[] = "saved_model_train_op";
// Signature whose output of the same key names TF2's init op; it comes before the collections.
inline constexpr char kSavedModelInitOpSignatureKey[] = "__saved_model_init_op";
inline constexpr char kSavedModelTrainOpSignatureKey[] = "__saved_model_train_op";

}  // namespace flowtrain::saved_model

#endif  // FLOWTRAIN_SAVED_MODEL_CONSTANTS_H_
