// Scaffold: the ops a monitored session needs to set up a model — initialisation, readiness
// checks, the summary op and the Saver — each either given or, in Finalize(), taken from its
// graph collection or built with TF's default (tf.train.Scaffold).
//
//   auto scaffold = std::make_shared<train::Scaffold>();
//   scaffold->init_fn = [](train::Scaffold&, SessionInterface& sess) { LoadPretrained(sess); };
//   scaffold->Finalize(graph);   // fills the defaults and finalizes the graph
//
// Defaults (TF 1.15): init_op = group(global variables initializer); ready_op = the names of
// uninitialized global and local variables; ready_for_local_init_op = uninitialized global
// variables; local_init_op = group(local variables initializer, table initializers);
// summary_op = merge of the SUMMARIES collection (none when empty); saver = the one Saver in
// the SAVERS collection, else a new sharded Saver (max_to_keep 5) added to it — which, with
// exact_resume (MonitoredTrainingSession's default, beyond TF), also saves the input
// pipelines' and random ops' positions.
#ifndef FLOWTRAIN_TRAIN_SCAFFOLD_H_
#define FLOWTRAIN_TRAIN_SCAFFOLD_H_

#include <functional>
#include <memory>

#include "flowtrain/graph/graph.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain::train {

class Saver;

struct Scaffold {
  Operation init_op;
  FeedList init_feed_dict;
  // Called after init_op when the model was not restored: `init_fn(scaffold, session)`.
  std::function<void(Scaffold&, SessionInterface&)> init_fn;
  Output ready_op;
  Output ready_for_local_init_op;
  Operation local_init_op;
  // Feeds for local_init_op (TF >= 2.1 compat.v1), e.g. the arrays an initializable dataset
  // iterator slices, so they need not be baked into the graph as constants.
  FeedList local_init_feed_dict;
  Output summary_op;
  std::shared_ptr<Saver> saver;
  // Beyond TF: the default saver built by Finalize also saves, as optional saveables (see
  // SaverOptions::optional_saveable_objects), the position of every iterator in the graph's
  // data::kGlobalIterators collection and, when ops::DrawsRandomNumbersInSteps(graph), the
  // random ops' positions — those not already in SAVEABLE_OBJECTS. False (a plain
  // MonitoredSession's default, e.g. an evaluator, whose iterators must not continue a
  // trainer's position) builds TF's default saver. MonitoredTrainingSession sets it from
  // MonitoredTrainingSessionOptions::exact_resume.
  bool exact_resume = false;

  // Fills the missing pieces from `graph`'s collections or TF's defaults (adding what it
  // builds to the collections), then finalizes the graph. Idempotent.
  void Finalize(Graph& graph);
  bool finalized() const { return finalized_; }

  // TF's Scaffold.default_local_init_op().
  static Operation DefaultLocalInitOp(Graph& graph);

 private:
  bool finalized_ = false;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_SCAFFOLD_H_
