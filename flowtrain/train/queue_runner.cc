#include "flowtrain/train/queue_runner.h"

#include <algorithm>

#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::train {
namespace {

bool HasCode(const std::vector<Code>& codes, Code code) {
  return std::find(codes.begin(), codes.end(), code) != codes.end();
}

}  // namespace

QueueRunner::QueueRunner(const ops::QueueBase& queue, std::vector<Operation> enqueue_ops,
                         QueueRunnerOptions options)
    : state_(std::make_shared<State>()) {
  if (!queue.handle() || enqueue_ops.empty()) InvalidArgument("Must provide queue and enqueue_ops.");
  if (options.queue_closed_codes.empty()) {
    InvalidArgument("queue_closed_exception_types must be a non-empty list of error codes");
  }
  state_->queue = queue;
  state_->enqueue_ops = std::move(enqueue_ops);
  state_->close_op = options.close_op ? options.close_op : queue.Close();
  state_->cancel_op = options.cancel_op ? options.cancel_op : queue.Close(true);
  state_->queue_closed_codes = std::move(options.queue_closed_codes);
}

std::vector<std::exception_ptr> QueueRunner::exceptions_raised() const {
  absl::MutexLock lock(&state_->mu);
  return state_->exceptions_raised;
}

ThreadList QueueRunner::CreateThreads(SessionInterface& sess, Coordinator* coord, bool start) {
  {
    absl::MutexLock lock(&state_->mu);
    auto it = state_->runs_per_session.find(&sess);
    if (it != state_->runs_per_session.end() && it->second > 0) return {};  // still running
    state_->runs_per_session[&sess] = static_cast<int>(state_->enqueue_ops.size());
    state_->exceptions_raised.clear();
  }
  ThreadList threads;
  for (const Operation& op : state_->enqueue_ops) {
    threads.push_back(std::make_shared<CoordinatedThread>(
        StrCat("QueueRunnerThread-", name(), "-", op.name()),
        [state = state_, s = &sess, op, coord] { Run(state, s, op, coord); }));
  }
  if (coord != nullptr) {
    threads.push_back(std::make_shared<CoordinatedThread>(
        StrCat("QueueRunnerThread-", name(), "-close_on_stop"),
        [state = state_, s = &sess, coord] { CloseOnStop(state, s, coord); }));
  }
  for (const auto& t : threads) {
    if (coord != nullptr) coord->RegisterThread(t);
    if (start) t->Start();
  }
  return threads;
}

void QueueRunner::Run(std::shared_ptr<State> state, SessionInterface* sess, Operation enqueue_op,
                      Coordinator* coord) {
  bool decremented = false;
  auto decrement = [&] {
    absl::MutexLock lock(&state->mu);
    decremented = true;
    return --state->runs_per_session[sess] == 0;
  };
  try {
    for (;;) {
      if (coord != nullptr && coord->ShouldStop()) break;
      try {
        sess->Run({}, {}, {enqueue_op});
      } catch (const Error& e) {
        if (!HasCode(state->queue_closed_codes, e.code())) throw;
        // This thread is done; the last one to finish closes the queue so consumers drain it.
        if (decrement()) {
          try {
            sess->Run({}, {}, {state->close_op});
          } catch (const std::exception& close_error) {
            FT_LOG(INFO) << "Ignored exception while closing queue " << state->queue.name() << ": "
                         << close_error.what();
          }
        }
        return;
      }
    }
  } catch (...) {
    if (coord != nullptr) {
      coord->RequestStop(std::current_exception());
    } else {
      FT_LOG(ERROR) << "Exception in QueueRunner: "
                    << ErrorFromException(std::current_exception()).ToString();
      absl::MutexLock lock(&state->mu);
      state->exceptions_raised.push_back(std::current_exception());
    }
  }
  if (!decremented) decrement();
}

void QueueRunner::CloseOnStop(std::shared_ptr<State> state, SessionInterface* sess, Coordinator* coord) {
  coord->WaitForStop();
  try {
    sess->Run({}, {}, {state->cancel_op});
  } catch (const std::exception& e) {
    FT_LOG(INFO) << "Ignored exception while cancelling queue " << state->queue.name() << ": " << e.what();
  }
}

void AddQueueRunner(const QueueRunner& runner, std::string_view collection) {
  runner.queue().handle().graph()->AddToCollection(collection, runner);
}

ThreadList StartQueueRunners(SessionInterface& sess, Coordinator& coord, std::string_view collection) {
  const std::vector<QueueRunner> runners = sess.graph().GetCollection<QueueRunner>(collection);
  if (runners.empty()) {
    FT_LOG(WARNING) << "StartQueueRunners found no queue runners in collection '" << collection << "'";
  }
  ThreadList all;
  for (QueueRunner runner : runners) {
    ThreadList threads = runner.CreateThreads(sess, &coord, /*start=*/true);
    all.insert(all.end(), threads.begin(), threads.end());
  }
  return all;
}

}  // namespace flowtrain::train
