#include "flowtrain/train/coordinator.h"

#include <algorithm>

#include "absl/time/time.h"

#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::train {

// ---- CoordinatedThread ----

CoordinatedThread::CoordinatedThread(std::string name, std::function<void()> body)
    : name_(std::move(name)), body_(std::move(body)) {}

CoordinatedThread::CoordinatedThread(std::string name) : name_(std::move(name)) {}

CoordinatedThread::~CoordinatedThread() { Join(); }

void CoordinatedThread::Start() {
  if (started_.exchange(true)) FailedPrecondition("Thread ", name_, " was already started");
  alive_.store(true, std::memory_order_release);
  absl::MutexLock lock(&join_mu_);
  thread_ = std::thread([this] {
    try {
      Run();
    } catch (const std::exception& e) {
      FT_LOG(ERROR) << "Exception in thread " << name_ << ": " << e.what();
    } catch (...) {
      FT_LOG(ERROR) << "Unknown exception in thread " << name_;
    }
    alive_.store(false, std::memory_order_release);
  });
}

void CoordinatedThread::Join() {
  absl::MutexLock lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

void CoordinatedThread::Run() {
  if (body_) body_();
}

// ---- Coordinator ----

Coordinator::Coordinator(std::vector<Code> clean_stop_codes)
    : clean_stop_codes_(std::move(clean_stop_codes)) {}

Coordinator::~Coordinator() {
  ThreadList threads;
  {
    absl::MutexLock lock(&mu_);
    stop_requested_ = true;
    stop_cv_.SignalAll();
    threads.swap(registered_);
  }
  // `threads` may hold the last references: they are joined here, after the stop request.
}

bool Coordinator::IsCleanStop(const std::exception_ptr& exception) const {
  try {
    std::rethrow_exception(exception);
  } catch (const Error& e) {
    return std::find(clean_stop_codes_.begin(), clean_stop_codes_.end(), e.code()) != clean_stop_codes_.end();
  } catch (...) {
    return false;
  }
}

void Coordinator::RequestStop(std::exception_ptr exception) {
  if (exception != nullptr && IsCleanStop(exception)) exception = nullptr;
  absl::MutexLock lock(&mu_);
  if (joined_ && exception != nullptr) std::rethrow_exception(exception);
  if (stop_requested_) return;
  if (exception != nullptr && exception_ == nullptr) {
    exception_ = exception;
    FT_LOG(INFO) << "Error reported to Coordinator: " << ErrorFromException(exception).ToString();
  }
  stop_requested_ = true;
  stop_cv_.SignalAll();
}

void Coordinator::ClearStop() {
  absl::MutexLock lock(&mu_);
  joined_ = false;
  exception_ = nullptr;
  stop_requested_ = false;
}

bool Coordinator::ShouldStop() const {
  absl::MutexLock lock(&mu_);
  return stop_requested_;
}

bool Coordinator::WaitForStop(std::optional<std::chrono::nanoseconds> timeout) const {
  absl::MutexLock lock(&mu_);
  if (!timeout) {
    while (!stop_requested_) stop_cv_.Wait(&mu_);
    return true;
  }
  // Measured on the steady clock from the start, so that a huge timeout cannot overflow.
  const auto start = std::chrono::steady_clock::now();
  while (!stop_requested_) {
    const auto elapsed = std::chrono::steady_clock::now() - start;
    if (elapsed >= *timeout) return false;
    stop_cv_.WaitWithTimeout(&mu_, absl::FromChrono(*timeout - elapsed));
  }
  return true;
}

void Coordinator::StopOnException(const std::function<void()>& body) {
  try {
    body();
  } catch (...) {
    RequestStop(std::current_exception());
  }
}

void Coordinator::RegisterThread(std::shared_ptr<CoordinatedThread> thread) {
  absl::MutexLock lock(&mu_);
  registered_.push_back(std::move(thread));
}

void Coordinator::Join(const ThreadList& threads, std::chrono::nanoseconds stop_grace_period,
                       bool ignore_live_threads) {
  ThreadList all;
  {
    absl::MutexLock lock(&mu_);
    all = registered_;
  }
  for (const auto& t : threads) {
    if (std::find(all.begin(), all.end(), t) == all.end()) all.push_back(t);
  }
  auto any_alive = [&] {
    return std::any_of(all.begin(), all.end(), [](const auto& t) { return t->IsAlive(); });
  };
  // Until a stop is requested, running threads may run for as long as they like.
  while (any_alive() && !WaitForStop(std::chrono::milliseconds(100))) {
  }
  // Then they get the grace period, polled with a doubling sleep so that threads ending
  // quickly are noticed quickly.
  using std::chrono::nanoseconds;
  nanoseconds remaining = stop_grace_period;
  nanoseconds sleep = std::chrono::milliseconds(1);
  while (any_alive() && remaining >= nanoseconds(0)) {
    sleep = std::max<nanoseconds>(std::min(sleep, remaining), std::chrono::milliseconds(1));
    std::this_thread::sleep_for(sleep);
    remaining -= sleep;
    sleep *= 2;
  }
  std::vector<std::string> stragglers;
  for (const auto& t : all) {
    if (t->IsAlive()) {
      stragglers.push_back(t->name());
    } else {
      t->Join();  // reclaim the finished std::thread
    }
  }
  absl::MutexLock lock(&mu_);
  joined_ = true;
  registered_.clear();
  if (exception_ != nullptr) std::rethrow_exception(exception_);
  if (!stragglers.empty()) {
    const std::string message =
        StrCat("Coordinator stopped with threads still running: ", StrJoin(stragglers, " "));
    if (!ignore_live_threads) FailedPrecondition(message);
    FT_LOG(INFO) << message;
  }
}

bool Coordinator::joined() const {
  absl::MutexLock lock(&mu_);
  return joined_;
}

void Coordinator::RaiseRequestedException() const {
  absl::MutexLock lock(&mu_);
  if (exception_ != nullptr) std::rethrow_exception(exception_);
}

// ---- LooperThread ----

LooperThread::LooperThread(Coordinator& coord, std::optional<std::chrono::nanoseconds> interval,
                           std::function<void()> target, std::string name)
    : CoordinatedThread(std::move(name)), coord_(coord), interval_(interval), target_(std::move(target)) {}

std::shared_ptr<LooperThread> LooperThread::Loop(Coordinator& coord,
                                                 std::optional<std::chrono::nanoseconds> interval,
                                                 std::function<void()> target) {
  auto looper = std::make_shared<LooperThread>(coord, interval, std::move(target));
  coord.RegisterThread(looper);
  looper->Start();
  return looper;
}

void LooperThread::RunLoop() {
  if (target_) target_();
}

void LooperThread::Run() {
  coord_.StopOnException([this] {
    StartLoop();
    if (!interval_) {
      while (!coord_.ShouldStop()) RunLoop();
    } else {
      // Fixed boundaries: a slow call shortens the next wait instead of shifting the schedule.
      auto next = std::chrono::steady_clock::now();
      for (;;) {
        const auto now = std::chrono::steady_clock::now();
        const auto wait = std::max<std::chrono::nanoseconds>(next - now, std::chrono::nanoseconds(0));
        if (coord_.WaitForStop(wait)) break;
        next += *interval_;
        RunLoop();
      }
    }
    StopLoop();
  });
}

}  // namespace flowtrain::train
