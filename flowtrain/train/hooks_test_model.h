// Test support for the hook tests (hooks_test.cc, hook_schedule_test.cc): a model whose train
// op adds 1 to the global step and halves a "loss", and MonitoredSessions running it.
//
//   HooksTestModel m;
//   auto sess = m.Session({std::make_shared<StopAtStepHook>(LastStep{7})});
//   EXPECT_EQ(m.RunUntilStop(*sess), 7);
#ifndef FLOWTRAIN_TRAIN_HOOKS_TEST_MODEL_H_
#define FLOWTRAIN_TRAIN_HOOKS_TEST_MODEL_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/event_file_reader.h"

#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/summary/file_writer_cache.h"
#include "flowtrain/summary/summary.h"
#include "flowtrain/train/monitored_session.h"
#include "flowtrain/train/session_creator.h"

namespace flowtrain::train {

struct HooksTestModel {
  HooksTestModel() {
    auto as_default = graph.AsDefault();
    step = GetOrCreateGlobalStep(&graph);
    loss_var = Variable(Tensor::Scalar<float>(4.0f), {.name = "loss_var"});
    loss = ops::Identity(loss_var.ref(), "loss");
    train_op = ops::Group({step.AssignAdd(ops::Const(int64_t{1})).op(),
                           loss_var.Assign(ops::Mul(loss_var.value(), ops::Const(0.5f))).op()},
                          "train");
    eval_op = ops::Identity(loss_var.value(), "eval").op();  // a run that leaves the step alone
  }
  // The chief creator's options: one inter-op thread, so a read of the global step runs before
  // the step's update (as it usually does in TF) and hooks' trigger steps are deterministic.
  ChiefSessionCreatorOptions Chief() {
    ChiefSessionCreatorOptions options;
    options.graph = &graph;
    options.config.inter_op_parallelism_threads = 1;
    return options;
  }
  std::unique_ptr<MonitoredSession> Session(HookList hooks,
                                            HookScheduling scheduling = HookScheduling::kWhenDue) {
    MonitoredSessionOptions session_options;
    session_options.stop_grace_period = std::chrono::seconds(5);
    session_options.hook_scheduling = scheduling;
    auto as_default = graph.AsDefault();
    return std::make_unique<MonitoredSession>(std::make_shared<ChiefSessionCreator>(Chief()),
                                              std::move(hooks), session_options);
  }
  // A scalar summary of the loss, tagged "train_loss" (built once).
  Output LossSummary() {
    if (!loss_summary) {
      auto as_default = graph.AsDefault();
      loss_summary = summary::Scalar("train_loss", loss);
    }
    return loss_summary;
  }
  // Runs the train op until the session should stop (or `limit` runs); returns the runs.
  int RunUntilStop(MonitoredSession& sess, int limit = 1000) {
    int steps = 0;
    while (!sess.ShouldStop() && steps < limit) {
      sess.Run({train_op});
      ++steps;
    }
    return steps;
  }

  Graph graph;
  Variable step, loss_var;
  Output loss, loss_summary;
  Operation train_op, eval_op;
};

// Every event in `dir`'s event files, after flushing the cached writer for `dir`.
inline std::vector<tensorflow::Event> ReadEvents(const std::string& dir) {
  summary::FileWriterCache::Get(dir)->Flush();
  std::vector<tensorflow::Event> events;
  for (const std::string& file : io::ListEventFiles(dir)) {
    io::EventFileReader reader(file);
    tensorflow::Event e;
    while (reader.ReadEvent(&e)) events.push_back(e);
  }
  return events;
}

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_HOOKS_TEST_MODEL_H_
