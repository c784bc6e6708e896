#include "flowtrain/train/coordinator.h"

#include <algorithm>

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
  std::lock_guard<std::mutex> lock(join_mu_);
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
  std::lock_guard<std::mutex> lock(join_mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
    stop_cv_.notify_all();
    threads.swap(registered_);
  }
  // `threads` may hold the last references: they are joined here, after the stop request.
}

bool Coordinator::IsCleanStop(const std::exception_ptr& exception) const {
  try {
    std::rethrow_exception(exception);
  } catch (const Error& e) {
    return std::find(clean_stop_codes_.begin(), clean_stop_codes_.end(), e.code()) !=
           clean_stop_codes_.end();
  } catch (...) {
    return false;
  }
}

void Coordinator::RequestStop(std::exception_ptr exception) {
  if (exception != nullptr && IsCleanStop(exception)) exception = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (joined_ && exception != nullptr) std::rethrow_exception(exception);
  if (stop_requested_) return;
  if (exception != nullptr && exception_ == nullptr) {
    exception_ = exception;
    FT_LOG(INFO) << "Error reported to Coordinator: " << ErrorFromException(exception).ToString();
  }
  stop_requested_ = true;
  stop_cv_.notify_all();
}

void Coordinator::ClearStop() {
  std::lock_guard<std::mutex> lock(mu_);
  joined_ = false;
  exception_ = nullptr;
  stop_requested_ = false;
}

bool Coordinator::ShouldStop() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_requested_;
}

bool Coordinator::WaitForStop(std::optional<std::chrono::nanoseconds> timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (!timeout) {
    stop_cv_.wait(lock, [this] { return stop_requested_; });
    return true;
  }
  return stop_cv_.wait_for(lock, *timeout, [this] { return stop_requested_; });
}

void Coordinator::StopOnException(const std::function<void()>& body) {
  try {
    body();
  } catch (...) {
    RequestStop(std::current_exception());
  }
}

void Coordinator::RegisterThread(std::shared_ptr<CoordinatedThread> thread) {
  std::lock_guard<std::mutex> lock(mu_);
  registered_.push_back(std::move(thread));
}

void Coordinator::Join(const ThreadList& threads, std::chrono::nanoseconds stop_grace_period,
                       bool ignore_live_threads) {
  ThreadList all;
  {
    std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
  return joined_;
}

void Coordinator::RaiseRequestedException() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (exception_ != nullptr) std::rethrow_exception(exception_);
}

// ---- LooperThread ----

LooperThread::LooperThread(Coordinator& coord, std::optional<std::chrono::nanoseconds> interval,
                           std::function<void()> target, std::string name)
    : CoordinatedThread(std::move(name)),
      coord_(coord),
      interval_(interval),
      target_(std::move(target)) {}

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
