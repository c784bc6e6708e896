// A fixed pool of worker threads (Eigen's non-blocking pool underneath, as in TensorFlow).
// The session runs independent graph nodes on one (inter-op) and kernels split their work
// across another (intra-op).
//
//   ThreadPool pool("inter_op", 2);
//   pool.Schedule([] { ... });
//   pool.ParallelFor(n, /*cost_per_unit=*/100, [&](int64_t begin, int64_t end) { ... });
//
// Tasks must not throw: catch and hand exceptions on (the executor and Coordinator do).
#ifndef FLOWTRAIN_CORE_THREAD_POOL_H_
#define FLOWTRAIN_CORE_THREAD_POOL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace Eigen {
class ThreadPoolInterface;
struct ThreadPoolDevice;
}  // namespace Eigen

namespace flowtrain {

class ThreadPool {
 public:
  ThreadPool(std::string name, int num_threads);
  ~ThreadPool();  // waits for queued tasks to finish
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> task);
  int NumThreads() const;
  // Index of the calling thread in this pool, or -1 if it is not one of its threads.
  int CurrentThreadId() const;

  // Calls fn over [0, total) split into shards sized by `cost_per_unit` (roughly, cycles per
  // element); runs inline when the work is too small to be worth splitting. Blocks until done.
  void ParallelFor(int64_t total, int64_t cost_per_unit, const std::function<void(int64_t, int64_t)>& fn);

  Eigen::ThreadPoolInterface* AsEigenThreadPool();
  // An Eigen device that evaluates tensor expressions on this pool.
  const Eigen::ThreadPoolDevice& EigenDevice();

  const std::string& name() const { return name_; }

 private:
  struct Impl;
  std::string name_;
  std::unique_ptr<Impl> impl_;
};

// The number of cores this process may use (sched_getaffinity), at least 1.
int NumSchedulableCPUs();

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_THREAD_POOL_H_
