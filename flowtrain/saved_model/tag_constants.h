// The tags TF gives the MetaGraphs of a SavedModel (tf.saved_model.tag_constants): a loader
// picks the MetaGraph whose tag set equals the one it asks for.
//
//   builder.AddMetaGraphAndVariables(sess, {saved_model::kServing}, signatures);
//   SavedModelBundle bundle = saved_model::Load({}, {saved_model::kServing}, dir);
#ifndef FLOWTRAIN_SAVED_MODEL_TAG_CONSTANTS_H_
#define FLOWTRAIN_SAVED_MODEL_TAG_CONSTANTS_H_

namespace flowtrain::saved_model {

// The graph used for inference (serving).
inline constexpr char kServing[] = "serve";
// The graph used for training.
inline constexpr char kTraining[] = "train";
// The graph used for evaluation.
inline constexpr char kEval[] = "eval";
// The graph is meant to run on a GPU.
inline constexpr char kGpu[] = "gpu";
// The graph is meant to run on a TPU.
inline constexpr char kTpu[] = "tpu";

}  // namespace flowtrain::saved_model

#endif  // FLOWTRAIN_SAVED_MODEL_TAG_CONSTANTS_H_
