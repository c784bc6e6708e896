#include "flowtrain/framework/queue.h"

#include <optional>

#include "absl/time/time.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/internal/batch_util.h"

namespace flowtrain {
namespace {

const char* KindName(Queue::Kind kind) {
  switch (kind) {
    case Queue::Kind::kFifo:
      return "FIFOQueue";
    case Queue::Kind::kRandomShuffle:
      return "RandomShuffleQueue";
    case Queue::Kind::kPaddingFifo:
      return "PaddingFIFOQueue";
  }
  return "Queue";
}

uint64_t PickSeed(uint64_t seed) { return seed != 0 ? seed : std::random_device()(); }

}  // namespace

Queue::Queue(Options options) : options_(std::move(options)), rng_(PickSeed(options_.seed)) {
  if (options_.dtypes.empty()) InvalidArgument(Describe(), " needs at least one component type");
  if (!options_.shapes.empty() && options_.shapes.size() != options_.dtypes.size()) {
    InvalidArgument(Describe(), " has ", options_.dtypes.size(), " component types but ",
                    options_.shapes.size(), " shapes");
  }
  if (options_.kind == Kind::kPaddingFifo && options_.shapes.empty()) {
    InvalidArgument("Shapes must be provided for all components of ", Describe());
  }
}

std::string Queue::Describe() const { return StrCat(KindName(options_.kind), " '", options_.name, "'"); }

std::string Queue::DebugString() const { return StrCat(Describe(), " size ", Size()); }

int64_t Queue::Size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(elements_.size());
}

bool Queue::IsClosed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

void Queue::CheckTuple(const Tuple& tuple, bool batched) const {
  if (tuple.size() != options_.dtypes.size()) {
    InvalidArgument(Describe(), " expects ", options_.dtypes.size(), " components, got ", tuple.size());
  }
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (tuple[i].dtype() != options_.dtypes[i]) {
      InvalidArgument("Type mismatch in tuple component ", i, ". Expected ",
                      DataTypeString(options_.dtypes[i]), ", got ", DataTypeString(tuple[i].dtype()));
    }
    if (batched && tuple[i].dims() < 1) {
      InvalidArgument("Shape mismatch in tuple component ", i,
                      ". Expected a batch of at least rank 1, got a scalar");
    }
    if (options_.shapes.empty()) continue;
    TensorShape shape = tuple[i].shape();
    if (batched) shape.RemoveDim(0);
    if (!options_.shapes[i].IsCompatibleWith(shape)) {
      InvalidArgument("Shape mismatch in tuple component ", i, ". Expected ",
                      options_.shapes[i].DebugString(), ", got ", shape.DebugString());
    }
  }
  if (batched) {
    for (size_t i = 1; i < tuple.size(); ++i) {
      if (tuple[i].dim_size(0) != tuple[0].dim_size(0)) {
        InvalidArgument("Batch sizes differ between tuple components 0 (", tuple[0].dim_size(0), ") and ", i,
                        " (", tuple[i].dim_size(0), ")");
      }
    }
  }
}

template <typename Ready>
void Queue::WaitUntil(const Wait& wait, std::string_view what, Ready ready) {
  auto cancelled = [&] { return wait.cancellation != nullptr && wait.cancellation->IsCancelled(); };
  // Every pass re-checks `ready()` after re-taking mu_: while mu_ was released to deregister
  // the callback, another thread may have taken the room or the elements we woke for.
  for (;;) {
    if (ready()) return;
    if (cancelled()) Cancelled(what, " operation was cancelled");
    if (std::chrono::steady_clock::now() >= wait.deadline) {
      DeadlineExceeded("Timed out waiting for ", what, " on ", Describe());
    }
    std::optional<CancellationManager::Token> token;
    if (wait.cancellation != nullptr) {
      // Registered without holding mu_: the callback takes mu_ to notify.
      mu_.Unlock();
      token = wait.cancellation->RegisterCallback([this] {
        absl::MutexLock guard(&mu_);
        cv_.SignalAll();
      });
      mu_.Lock();
      if (!token) Cancelled(what, " operation was cancelled");
    }
    while (!ready() && !cancelled()) {
      if (wait.deadline == std::chrono::steady_clock::time_point::max()) {
        cv_.Wait(&mu_);
      } else if (cv_.WaitWithTimeout(&mu_,
                                     absl::FromChrono(wait.deadline - std::chrono::steady_clock::now()))) {
        break;  // timed out: the loop above reports it unless ready() came true meanwhile
      }
    }
    if (token) {
      mu_.Unlock();
      wait.cancellation->DeregisterCallback(*token);
      mu_.Lock();
    }
  }
}

void Queue::Enqueue(Tuple tuple, const Wait& wait) {
  CheckTuple(tuple, /*batched=*/false);
  absl::MutexLock lock(&mu_);
  if (closed_) Cancelled(Describe(), " is closed.");
  auto has_room = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return enqueues_cancelled_ || options_.capacity < 0 ||
           static_cast<int64_t>(elements_.size()) < options_.capacity;
  };
  WaitUntil(wait, "Enqueue", has_room);
  if (enqueues_cancelled_) Cancelled("Enqueue operation was cancelled");
  elements_.push_back(std::move(tuple));
  cv_.SignalAll();
}

void Queue::EnqueueMany(const Tuple& batch, const Wait& wait) {
  CheckTuple(batch, /*batched=*/true);
  std::vector<std::vector<Tensor>> rows;
  rows.reserve(batch.size());
  for (const Tensor& component : batch) rows.push_back(batch_util::Unstack(component));
  const int64_t n = batch[0].dim_size(0);
  absl::MutexLock lock(&mu_);
  if (closed_) Cancelled(Describe(), " is closed.");
  for (int64_t i = 0; i < n; ++i) {
    auto has_room = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return enqueues_cancelled_ || options_.capacity < 0 ||
             static_cast<int64_t>(elements_.size()) < options_.capacity;
    };
    WaitUntil(wait, "Enqueue", has_room);
    if (enqueues_cancelled_) Cancelled("Enqueue operation was cancelled");
    Tuple tuple;
    tuple.reserve(rows.size());
    for (auto& component_rows : rows) tuple.push_back(std::move(component_rows[i]));
    elements_.push_back(std::move(tuple));
    cv_.SignalAll();
  }
}

Queue::Tuple Queue::TakeOneLocked() {
  size_t index = 0;
  if (options_.kind == Kind::kRandomShuffle && elements_.size() > 1) {
    index = std::uniform_int_distribution<size_t>(0, elements_.size() - 1)(rng_);
    std::swap(elements_[index], elements_.back());
    Tuple out = std::move(elements_.back());
    elements_.pop_back();
    return out;
  }
  Tuple out = std::move(elements_.front());
  elements_.pop_front();
  return out;
}

Queue::Tuple Queue::Dequeue(const Wait& wait) {
  Tuple batch = DequeueMany(1, false, wait);
  for (Tensor& component : batch) component = batch_util::Unstack(component)[0];
  return batch;
}

Queue::Tuple Queue::DequeueMany(int64_t n, bool up_to, const Wait& wait) {
  if (n < 0) InvalidArgument("Dequeue of ", Describe(), " requested ", n, " < 0 elements");
  if (options_.capacity >= 0 && n > options_.capacity && options_.kind != Kind::kRandomShuffle) {
    InvalidArgument("Dequeue requested ", n, " elements from ", Describe(), " with capacity ",
                    options_.capacity);
  }
  std::vector<Tuple> taken;
  {
    absl::MutexLock lock(&mu_);
    // A RandomShuffleQueue keeps min_after_dequeue elements to mix with until it is closed.
    auto available = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      const int64_t keep = options_.kind == Kind::kRandomShuffle && !closed_ ? options_.min_after_dequeue : 0;
      return static_cast<int64_t>(elements_.size()) >= n + keep || closed_;
    };
    WaitUntil(wait, "Dequeue", available);
    const int64_t size = static_cast<int64_t>(elements_.size());
    int64_t count = n;
    if (size < n) {  // closed
      if (!up_to || size == 0) {
        OutOfRange(Describe(), " is closed and has insufficient elements (requested ", n, ", current size ",
                   size, ")");
      }
      count = size;
    }
    taken.reserve(count);
    for (int64_t i = 0; i < count; ++i) taken.push_back(TakeOneLocked());
    cv_.SignalAll();
  }
  Tuple out;
  for (size_t c = 0; c < options_.dtypes.size(); ++c) {
    std::vector<Tensor> column;
    column.reserve(taken.size());
    for (Tuple& t : taken) column.push_back(std::move(t[c]));
    if (options_.kind == Kind::kPaddingFifo && !column.empty()) {
      out.push_back(batch_util::PadAndStack(column, options_.shapes[c], Describe()));
    } else {
      TensorShape element_shape;
      if (!options_.shapes.empty() && options_.shapes[c].IsFullyDefined()) {
        element_shape = options_.shapes[c].AsTensorShape();
      }
      out.push_back(batch_util::Stack(column, Describe(), options_.dtypes[c], element_shape));
    }
  }
  return out;
}

void Queue::Close(bool cancel_pending_enqueues) {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  if (cancel_pending_enqueues) enqueues_cancelled_ = true;
  cv_.SignalAll();
}

}  // namespace flowtrain
