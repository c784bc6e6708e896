// Coordinator: lets a group of threads stop together, as TF's tf.train.Coordinator. Any
// thread may request a stop, optionally reporting the exception that made it stop; the others
// poll ShouldStop() or wait in WaitForStop(); the main thread Join()s them and gets the first
// reported exception re-thrown.
//
//   train::Coordinator coord;
//   auto worker = std::make_shared<train::CoordinatedThread>("worker", [&] {
//     coord.StopOnException([&] {
//       while (!coord.ShouldStop()) sess.Run({}, {}, {enqueue_op});
//     });
//   });
//   coord.RegisterThread(worker);
//   worker->Start();
//   ...
//   coord.RequestStop();
//   coord.Join();                       // re-throws what a thread reported, if anything
//
// Threads never let exceptions escape: they hand them to RequestStop() as std::exception_ptr.
// Only the first exception reported before any stop request is kept; exceptions whose code is
// a "clean stop" code (OutOfRange by default, as input exhaustion) count as a plain stop.
#ifndef FLOWTRAIN_TRAIN_COORDINATOR_H_
#define FLOWTRAIN_TRAIN_COORDINATOR_H_

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"

namespace flowtrain::train {

// A thread that can be asked whether it is still running (std::thread cannot), so that
// Coordinator::Join can wait for a grace period and name the stragglers. Its body must not
// throw; if it does anyway the exception is logged and dropped.
class CoordinatedThread {
 public:
  CoordinatedThread(std::string name, std::function<void()> body);
  // Waits for the body to return: a thread never outlives the objects its body uses.
  virtual ~CoordinatedThread();
  CoordinatedThread(const CoordinatedThread&) = delete;
  CoordinatedThread& operator=(const CoordinatedThread&) = delete;

  // Starts the thread; FailedPrecondition if it was started before.
  void Start();
  // True from Start() until the body returns.
  bool IsAlive() const { return alive_.load(std::memory_order_acquire); }
  bool started() const { return started_.load(std::memory_order_acquire); }
  // Waits until the body has returned (returns at once if never started).
  void Join();
  const std::string& name() const { return name_; }

 protected:
  // For subclasses that supply the body themselves (LooperThread).
  explicit CoordinatedThread(std::string name);
  // The thread's work; the default runs the body given to the constructor.
  virtual void Run();

 private:
  std::string name_;
  std::function<void()> body_;
  std::atomic<bool> started_{false};
  std::atomic<bool> alive_{false};
  absl::Mutex join_mu_;
  std::thread thread_ ABSL_GUARDED_BY(join_mu_);
};

using ThreadList = std::vector<std::shared_ptr<CoordinatedThread>>;

class Coordinator {
 public:
  // `clean_stop_codes`: codes of exceptions that mean "stop, nothing went wrong". TF's default
  // is OutOfRange; MonitoredSession passes none.
  explicit Coordinator(std::vector<Code> clean_stop_codes = {Code::kOutOfRange});
  // Requests a stop, so registered threads that wait for one (a QueueRunner's cancel thread)
  // end instead of blocking the destruction of their last owner. Join before this to see
  // their errors.
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Requests that the threads stop. `exception` (from std::current_exception() in a catch
  // block) is recorded if it is the first one and no stop was requested before; once Join()
  // has run, a reported exception is re-thrown at once instead.
  void RequestStop(std::exception_ptr exception = nullptr);
  // Forgets the stop request, the recorded exception and the joined state.
  void ClearStop();
  bool ShouldStop() const;
  // Waits until a stop is requested or `timeout` passes (forever if nullopt); returns
  // ShouldStop().
  bool WaitForStop(std::optional<std::chrono::nanoseconds> timeout = std::nullopt) const;

  // TF's `with coord.stop_on_exception():` — runs `body`; any exception it throws is reported
  // with RequestStop and swallowed. A function rather than a scope guard because a destructor
  // cannot see the exception that is unwinding through it.
  void StopOnException(const std::function<void()>& body);

  void RegisterThread(std::shared_ptr<CoordinatedThread> thread);
  // Waits for the registered threads and `threads`: until they all end or a stop is requested,
  // then for at most `stop_grace_period` for them to end. Re-throws the recorded exception if
  // there is one; otherwise, if threads are still running, throws FailedPrecondition
  // "Coordinator stopped with threads still running: <names>" (only logged when
  // `ignore_live_threads`). Registered threads are forgotten either way.
  void Join(const ThreadList& threads = {},
            std::chrono::nanoseconds stop_grace_period = std::chrono::seconds(120),
            bool ignore_live_threads = false);
  bool joined() const;
  // Throws the recorded exception, if any.
  void RaiseRequestedException() const;

 private:
  bool IsCleanStop(const std::exception_ptr& exception) const;

  const std::vector<Code> clean_stop_codes_;
  mutable absl::Mutex mu_;
  mutable absl::CondVar stop_cv_;  // signalled when stop_requested_ becomes true
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool joined_ ABSL_GUARDED_BY(mu_) = false;
  std::exception_ptr exception_ ABSL_GUARDED_BY(mu_);
  ThreadList registered_ ABSL_GUARDED_BY(mu_);
};

// Runs a function repeatedly in a thread registered with a coordinator until it stops, as
// TF's LooperThread: back to back when `interval` is nullopt, else at fixed boundaries (the
// first call immediately). Exceptions from the function stop the coordinator.
//
//   auto looper = train::LooperThread::Loop(coord, std::chrono::seconds(10),
//                                           [&] { LogProgress(); });
//
// Subclasses may override StartLoop/RunLoop/StopLoop instead of passing a target.
class LooperThread : public CoordinatedThread {
 public:
  LooperThread(Coordinator& coord, std::optional<std::chrono::nanoseconds> interval,
               std::function<void()> target = nullptr, std::string name = "LooperThread");
  // Creates, registers and starts a looper.
  static std::shared_ptr<LooperThread> Loop(Coordinator& coord,
                                            std::optional<std::chrono::nanoseconds> interval,
                                            std::function<void()> target);

 protected:
  virtual void StartLoop() {}
  // Calls the target.
  virtual void RunLoop();
  virtual void StopLoop() {}
  void Run() override;

 private:
  Coordinator& coord_;
  std::optional<std::chrono::nanoseconds> interval_;
  std::function<void()> target_;
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_COORDINATOR_H_
