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
  const std::string& name() const { return node_->name(); }
  const std::string& type() const { return node_->type(); }
  Graph* graph() const { return node_->graph(); }
  int num_inputs() const { return node_->num_inputs(); }
  Output input(int i) const;
  int num_outputs() const { return node_->num_outputs(); }
  Output output(int i) const;
  std::vector<Operation> control_inputs() const;
  const std::string& device() const { return node_->requested_device(); }
  template <typename T>
  T GetAttr(std::string_view name) const {
    return node_->GetAttr<T>(name);
  }

  // Runs the operation in `session` (a shorthand for session.Run({}, {}, {*this})).
  template <typename SessionT>
  void Run(SessionT& session) const {
    session.Run({}, {}, {*this});
  }

  bool operator==(const Operation& other) const { return node_ == other.node_; }

 private:
  Node* node_ = nullptr;
};

class Output {
 public:
  Output() = default;
  Output(Node* node, int index) : node_(node), index_(index) {}
  // The first output of `op`, for ops with one output.
  Output(const Operation& op) : node_(op.node()), index_(0) {}  // NOLINT

  Node* node() const { return node_; }
  explicit operator bool() const { return node_ != nullptr; }
  Operation op() const { return Operation(node_); }
  int index() const { return index_; }
  Graph* graph() const { return node_->graph(); }
  // The value type (a TF1 reference output reports its base type).
  DataType dtype() const { return BaseType(node_->output_type(index_)); }
  bool is_ref() const { return IsRefType(node_->output_type(index_)); }
  const PartialTensorShape& shape() const { return node_->output_shape(index_); }
  // "node:index", as TF names tensors.
  std::string name() const;
  // Tensor("add:0", shape=(2, 3), dtype=float32) as TF's repr prints it.
  std::string DebugString() const;

  // Evaluates this tensor in `session` (a shorthand for session.Run(feeds, {*this})[0]).
  template <typename SessionT, typename FeedsT = std::vector<std::pair<Output, Tensor>>>
  Tensor Eval(SessionT& session, const FeedsT& feeds = {}) const {
    return session.Run(feeds, {*this}, {})[0];
  }

  bool operator==(const Output& other) const {
    return node_ == other.node_ && index_ == other.index_;
  }

 private:
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
  size_t operator()(const flowtrain::Operation& o) const {
    return std::hash<const void*>()(o.node());
  }
};

#endif  // FLOWTRAIN_GRAPH_OPERATION_H_
