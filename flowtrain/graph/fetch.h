// Fetch and FetchList: what Session::Run (and the monitored sessions' Run, and a hook's
// SessionRunArgs) is asked to return, as the elements of TF's `sess.run(fetches)`. A fetch is
// either a tensor (an Output, or anything that reads as one, such as a Variable) whose value
// Run returns, or an Operation, which Run runs as a target and for which it returns an empty
// Tensor — TF's `None` — in that slot:
//
//   std::vector<Tensor> out = sess.Run({}, {ops::GlobalVariablesInitializer(), loss});
//   out[0].IsInitialized();    // false: the initializer ran; an Operation fetch has no value
//   out[1].scalar<float>();    // the loss
//
// An Operation fetch never returns one of the op's outputs, whether it has outputs or not; to
// fetch the first output of an op, fetch `op.output(0)`.
#ifndef FLOWTRAIN_GRAPH_FETCH_H_
#define FLOWTRAIN_GRAPH_FETCH_H_

#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "flowtrain/graph/operation.h"

namespace flowtrain {

class Fetch {
 public:
  // An Operation: run as a target, its slot in the results an empty Tensor.
  Fetch(const Operation& op) : output_(op.node(), 0), is_operation_(true) {}  // NOLINT
  // A tensor: anything convertible to Output (an Output, a Variable's value) except an
  // Operation, which the constructor above takes so that its conversion to Output (the op's
  // first output) never decides what a fetch of an Operation means.
  template <typename T>
  requires(std::is_convertible_v<const T&, Output> && !std::is_base_of_v<Operation, std::remove_cvref_t<T>>)
      Fetch(const T& tensor)
      : output_(tensor) {}  // NOLINT

  bool is_operation() const { return is_operation_; }
  // The fetched tensor; for an Operation fetch, an Output naming the op (op() is what runs).
  const Output& output() const { return output_; }
  Operation op() const { return output_.op(); }

  bool operator==(const Fetch& other) const {
    return is_operation_ == other.is_operation_ && output_ == other.output_;
  }

 private:
  Output output_;
  bool is_operation_ = false;
};

// The fetches of one run, in order. Built from a braced list of tensors and operations
// (`{loss, train_op}`), from a std::vector<Output> or a std::vector<Fetch>, so existing code
// that passes a vector of Outputs compiles unchanged.
class FetchList {
 public:
  FetchList() = default;
  FetchList(std::initializer_list<Fetch> fetches) : fetches_(fetches) {}
  FetchList(std::vector<Fetch> fetches) : fetches_(std::move(fetches)) {}  // NOLINT
  FetchList(const std::vector<Output>& tensors)                            // NOLINT
      : fetches_(tensors.begin(), tensors.end()) {}

  size_t size() const { return fetches_.size(); }
  bool empty() const { return fetches_.empty(); }
  // Index past size() throws InvalidArgument (std::vector::at's check, with the list's size).
  const Fetch& at(size_t i) const;
  const Fetch& operator[](size_t i) const { return at(i); }
  auto begin() const { return fetches_.begin(); }
  auto end() const { return fetches_.end(); }

  void push_back(const Fetch& fetch) { fetches_.push_back(fetch); }
  void Append(const FetchList& more) { fetches_.insert(fetches_.end(), more.begin(), more.end()); }
  void reserve(size_t n) { fetches_.reserve(n); }
  void clear() { fetches_.clear(); }
  const std::vector<Fetch>& fetches() const { return fetches_; }

 private:
  std::vector<Fetch> fetches_;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_FETCH_H_
