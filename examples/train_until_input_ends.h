// The training half shared by the input-pipeline examples (queue_pipeline.cc,
// dataset_pipeline.cc): an MLP over whatever batches the pipeline yields, trained with
// MonitoredTrainingSession until the input runs out. Each example is about its pipeline; this
// is the part they have in common.
#ifndef FLOWTRAIN_EXAMPLES_TRAIN_UNTIL_INPUT_ENDS_H_
#define FLOWTRAIN_EXAMPLES_TRAIN_UNTIL_INPUT_ENDS_H_

#include <memory>
#include <string>

#include "flowtrain/flowtrain.h"

namespace examples {

// Pixel bytes (uint8 [..., 784]) as floats centred on 0, as TF's MNIST reader examples do.
inline flowtrain::Output CenteredPixels(flowtrain::Output pixels) {
  namespace ops = flowtrain::ops;
  return ops::Sub(ops::Mul(ops::Cast(pixels, flowtrain::DT_FLOAT), ops::Const(1.0f / 255)), ops::Const(0.5f));
}

// Trains a 784-128-10 MLP on (images [batch, 784], labels [batch] int64) with SGD, checkpoints
// and summaries in `model_dir`, logging the loss every 100 steps, until the pipeline raises
// OutOfRange. Returns the number of steps run.
inline int64_t TrainUntilInputEnds(flowtrain::Output images, flowtrain::Output labels,
                                   const std::string& model_dir,
                                   std::shared_ptr<flowtrain::train::Scaffold> scaffold = nullptr) {
  namespace ft = flowtrain;
  namespace ops = ft::ops;
  ft::Output hidden = ft::layers::Dense(images, 128, ops::Relu);
  ft::Output logits = ft::layers::Dense(hidden, 10);
  ft::Output loss =
      ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits), {}, false, "loss");
  ft::summary::Scalar("loss", loss);
  ft::Variable step = ft::train::GetOrCreateGlobalStep();
  ft::Operation train_op = ft::train::GradientDescentOptimizer(0.1).Minimize(loss, step);

  ft::train::MonitoredTrainingSessionOptions opts;
  opts.checkpoint_dir = model_dir;
  opts.scaffold = std::move(scaffold);
  opts.hooks = {std::make_shared<ft::train::LoggingTensorHook>(
      ft::train::LoggingTensorHook::Tensors{{"step", step.value()}, {"loss", loss}}, 100)};
  int64_t steps = 0;
  auto sess = ft::train::MonitoredTrainingSession(opts);
  // As TF's `with` block, the Run that meets the end of the input stops the session
  // (OnOutOfRange::kStop) instead of throwing: it returns empty tensors, and the loop ends.
  while (!sess->ShouldStop()) {
    if (!sess->Run({}, {loss}, {train_op})[0].IsInitialized()) break;
    ++steps;
  }
  sess->Close();  // hooks' End: the final checkpoint
  return steps;
}

}  // namespace examples

#endif  // FLOWTRAIN_EXAMPLES_TRAIN_UNTIL_INPUT_ENDS_H_
