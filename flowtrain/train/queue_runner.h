// QueueRunner: keeps a queue filled from background threads, as TF's tf.train.QueueRunner.
// It holds a queue, the enqueue ops to run in a loop (one thread each), and the ops that close
// the queue. When every enqueue thread has seen the queue closed (OutOfRange by default, e.g.
// its input ran out of epochs) the queue is closed, so consumers drain it and then get
// OutOfRange; when the coordinator stops, the queue is closed with pending enqueues cancelled,
// which unblocks every thread.
//
//   ops::FIFOQueue queue(100, {DT_FLOAT});
//   train::QueueRunner qr(queue, {queue.Enqueue({example}), queue.Enqueue({example})});
//   train::AddQueueRunner(qr);                          // into GraphKeys::kQueueRunners
//   Session sess(g);
//   train::Coordinator coord;
//   train::ThreadList threads = train::StartQueueRunners(sess, coord);
//   while (!coord.ShouldStop()) sess.Run({}, {}, {train_op});   // consumes queue.Dequeue()
//   coord.RequestStop();
//   coord.Join(threads);
//
// Copies share their state (live thread counts, exceptions), so a QueueRunner can be stored
// in a graph collection. Threads hold a reference to the session: join them (Coordinator::Join)
// before the session is destroyed.
#ifndef FLOWTRAIN_TRAIN_QUEUE_RUNNER_H_
#define FLOWTRAIN_TRAIN_QUEUE_RUNNER_H_

#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/ops/data_flow_ops.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/coordinator.h"

namespace flowtrain::train {

struct QueueRunnerOptions {
  // Default: queue.Close() (pending enqueues still complete).
  Operation close_op;
  // Default: queue.Close(/*cancel_pending_enqueues=*/true).
  Operation cancel_op;
  // Errors from an enqueue op that mean "the queue is closed"; a common alternative is
  // {kOutOfRange, kCancelled}. Must not be empty.
  std::vector<Code> queue_closed_codes = {Code::kOutOfRange};
};

class QueueRunner {
 public:
  // InvalidArgument "Must provide queue and enqueue_ops." without enqueue ops.
  QueueRunner(const ops::QueueBase& queue, std::vector<Operation> enqueue_ops,
              QueueRunnerOptions options = {});

  // Starts (if `start`) one thread per enqueue op, plus one that cancels the queue when
  // `coord` stops. Returns no threads if this runner's threads for `sess` still run. Without a
  // coordinator, errors other than a closed queue are logged and kept in exceptions_raised().
  ThreadList CreateThreads(SessionInterface& sess, Coordinator* coord = nullptr, bool start = false);

  const ops::QueueBase& queue() const { return state_->queue; }
  const std::vector<Operation>& enqueue_ops() const { return state_->enqueue_ops; }
  Operation close_op() const { return state_->close_op; }
  Operation cancel_op() const { return state_->cancel_op; }
  const std::vector<Code>& queue_closed_codes() const { return state_->queue_closed_codes; }
  // The queue's name: what TF's QueueRunner.name returns.
  const std::string& name() const { return state_->queue.name(); }
  std::vector<std::exception_ptr> exceptions_raised() const;

 private:
  struct State {
    ops::QueueBase queue;
    std::vector<Operation> enqueue_ops;
    Operation close_op;
    Operation cancel_op;
    std::vector<Code> queue_closed_codes;
    absl::Mutex mu;
    std::map<SessionInterface*, int> runs_per_session ABSL_GUARDED_BY(mu);
    std::vector<std::exception_ptr> exceptions_raised ABSL_GUARDED_BY(mu);
  };
  static void Run(std::shared_ptr<State> state, SessionInterface* sess, Operation enqueue_op,
                  Coordinator* coord);
  static void CloseOnStop(std::shared_ptr<State> state, SessionInterface* sess, Coordinator* coord);

  std::shared_ptr<State> state_;
};

// Adds `runner` to `collection` of its queue's graph.
void AddQueueRunner(const QueueRunner& runner, std::string_view collection = GraphKeys::kQueueRunners);

// Creates and starts the threads of every QueueRunner in `collection` of the session's graph,
// registered with `coord`. Returns them all.
ThreadList StartQueueRunners(SessionInterface& sess, Coordinator& coord,
                             std::string_view collection = GraphKeys::kQueueRunners);

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_QUEUE_RUNNER_H_
