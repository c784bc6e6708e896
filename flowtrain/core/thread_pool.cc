#include "flowtrain/core/thread_pool.h"

#include <sched.h>

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include "flowtrain/core/error.h"

namespace flowtrain {

struct ThreadPool::Impl {
  explicit Impl(int num_threads) : pool(num_threads), device(&pool, num_threads) {}
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

ThreadPool::ThreadPool(std::string name, int num_threads) : name_(std::move(name)) {
  FT_REQUIRE(num_threads >= 1, "ThreadPool '", name_, "' needs at least one thread, got ", num_threads);
  impl_ = std::make_unique<Impl>(num_threads);
}

ThreadPool::~ThreadPool() = default;

void ThreadPool::Schedule(std::function<void()> task) { impl_->pool.Schedule(std::move(task)); }

int ThreadPool::NumThreads() const { return impl_->pool.NumThreads(); }

int ThreadPool::CurrentThreadId() const { return impl_->pool.CurrentThreadId(); }

void ThreadPool::ParallelFor(int64_t total, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (total <= 0) return;
  if (NumThreads() == 1 || total == 1) {
    fn(0, total);
    return;
  }
  impl_->device.parallelFor(total, Eigen::TensorOpCost(0, 0, static_cast<double>(cost_per_unit)),
                            [&fn](Eigen::Index begin, Eigen::Index end) { fn(begin, end); });
}

Eigen::ThreadPoolInterface* ThreadPool::AsEigenThreadPool() { return &impl_->pool; }

const Eigen::ThreadPoolDevice& ThreadPool::EigenDevice() { return impl_->device; }

int NumSchedulableCPUs() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

}  // namespace flowtrain
