// Operation and Output: the handles users hold on a graph, as TF's `tf.Operation` and
// `tf.Tensor`. Both are small values (a node pointer, plus an index for Output).
//
//   Output sum = ops::Add(a, b);
//   sum.name();                    // "Add:0"
//   sum.shape().DebugString();     // "[2,3]"
//   Operation op = sum.op();       // op.type() == "Add"
//   Tensor value = sum.Eval(sess);
#ifndef FLOWTRAIN_GRAPH_OPERATION_H_
#define FLOWTRAIN_GRAPH_OPERATION_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/graph/node.h"

namespace flowtrain {

class Output;

class Operation {
 public:
  Operation() = default;
  explicit Operation(Node* node) : node_(node) {}

  Node* node() const { return node_; }
  explicit operator bool() const { return node_ != nullptr; }
  // The accessors below throw InvalidArgument on a default-constructed (null) Operation rather
  // than dereference it; input(i)/output(i) also for an index out of range.
  const std::string& name() const { return checked_node().name(); }
  const std::string& type() const { return checked_node().type(); }
  Graph* graph() const { return checked_node().graph(); }
  int num_inputs() const { return checked_node().num_inputs(); }
  Output input(int i) const;
  int num_outputs() const { return checked_node().num_outputs(); }
  Output output(int i) const;
  std::vector<Operation> control_inputs() const;
  const std::string& device() const { return checked_node().requested_device(); }
  template <typename T>
  T GetAttr(std::string_view name) const {
    return checked_node().GetAttr<T>(name);
  }

  // Runs the operation in `session` (a shorthand for session.Run({}, {}, {*this})).
  template <typename SessionT>
  void Run(SessionT& session) const {
    session.Run({}, {}, {*this});
  }

  bool operator==(const Operation& other) const { return node_ == other.node_; }

 private:
  const Node& checked_node() const {
    if (node_ == nullptr) ThrowNullOperation();
    return *node_;
  }
  [[noreturn]] static void ThrowNullOperation();

  Node* node_ = nullptr;
};

class Output {
 public:
  Output() = default;
  Output(Node* node, int index) : node_(node), index_(index) {}
  // The first output of `op`, for ops with one output, so an op builder's result passes where
  // a tensor is expected (`ops::Identity(op)`). Session::Run's fetches do not go through it: a
  // fetched Operation is a Fetch (fetch.h) that runs the op and returns no value, as TF's
  // `sess.run(op)`. For an op with no outputs the converted Output is not valid(), and using
  // it (as a feed, or fetched as an explicit Output) throws InvalidArgument naming the op.
  Output(const Operation& op) : node_(op.node()), index_(0) {}  // NOLINT

  Node* node() const { return node_; }
  explicit operator bool() const { return node_ != nullptr; }
  // Non-null and index() names one of its op's outputs.
  bool valid() const { return node_ != nullptr && index_ >= 0 && index_ < node_->num_outputs(); }
  Operation op() const { return Operation(node_); }
  int index() const { return index_; }
  // graph() throws InvalidArgument on a null Output; the accessors below (and name(),
  // DebugString()) also when index() is out of range for the op.
  Graph* graph() const { return checked_node().graph(); }
  // The value type (a TF1 reference output reports its base type).
  DataType dtype() const { return BaseType(checked_node(true).output_type(index_)); }
  bool is_ref() const { return IsRefType(checked_node(true).output_type(index_)); }
  const PartialTensorShape& shape() const { return checked_node(true).output_shape(index_); }
  // "node:index", as TF names tensors.
  std::string name() const;
  // Tensor("add:0", shape=(2, 3), dtype=float32) as TF's repr prints it.
  std::string DebugString() const;

  // Evaluates this tensor in `session` (a shorthand for session.Run(feeds, {*this})[0]).
  template <typename SessionT, typename FeedsT = std::vector<std::pair<Output, Tensor>>>
  Tensor Eval(SessionT& session, const FeedsT& feeds = {}) const {
    return session.Run(feeds, {*this}, {})[0];
  }

  bool operator==(const Output& other) const { return node_ == other.node_ && index_ == other.index_; }

  // InvalidArgument unless valid(), naming the op and, for `role` ("Fetch", "Feed", ...), what
  // was asked of it.
  void CheckValid(std::string_view role = "Output") const;

 private:
  const Node& checked_node(bool check_index = false) const {
    if (node_ == nullptr || (check_index && (index_ < 0 || index_ >= node_->num_outputs()))) {
      CheckValid();
    }
    return *node_;
  }

  Node* node_ = nullptr;
  int index_ = 0;
};

using OutputList = std::vector<Output>;

// Parses "name" or "name:3" into (name, index).
std::pair<std::string, int> ParseTensorName(std::string_view name);

}  // namespace flowtrain

template <>
struct std::hash<flowtrain::Output> {
  size_t operator()(const flowtrain::Output& o) const {
    return std::hash<const void*>()(o.node()) * 31 + static_cast<size_t>(o.index());
  }
};

template <>
struct std::hash<flowtrain::Operation> {
  size_t operator()(const flowtrain::Operation& o) const { return std::hash<const void*>()(o.node()); }
};

#endif  // FLOWTRAIN_GRAPH_OPERATION_H_
