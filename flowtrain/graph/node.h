// Node: one operation in a Graph — its name, op type, inputs, attrs, device and the dtypes and
// shapes of its outputs. Nodes are created by NodeBuilder, owned by their Graph, and never
// change after creation (apart from the device a placer may assign), so a session can read
// them without locks while the graph keeps growing.
#ifndef FLOWTRAIN_GRAPH_NODE_H_
#define FLOWTRAIN_GRAPH_NODE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/core/types.h"
#include "flowtrain/graph/attr_value_util.h"
#include "flowtrain/graph/op_registry.h"

namespace flowtrain {

class Graph;
class Node;

// One output of a node, as a (node, index) pair. TF's `tf.Tensor`.
struct Endpoint {
  Node* node = nullptr;
  int index = 0;
  bool operator==(const Endpoint&) const = default;
};

using AttrMap = std::map<std::string, AttrValue>;

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& type() const { return op_def().name(); }
  const tensorflow::OpDef& op_def() const { return registration_->def; }
  const OpRegistration& registration() const { return *registration_; }
  Graph* graph() const { return graph_; }
  bool is_stateful() const { return op_def().is_stateful(); }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Endpoint& input(int i) const { return inputs_[i]; }
  const std::vector<Endpoint>& inputs() const { return inputs_; }
  // The dtype the op expects at input i (a ref type for TF1 reference inputs).
  DataType input_type(int i) const { return input_types_[i]; }
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }

  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType output_type(int i) const { return output_types_[i]; }
  const PartialTensorShape& output_shape(int i) const { return output_shapes_[i]; }

  const AttrMap& attrs() const { return attrs_; }
  const AttrValue* FindAttr(std::string_view name) const;
  // Throws NotFound naming the node if the attr is missing, InvalidArgument if mistyped.
  template <typename T>
  T GetAttr(std::string_view name) const {
    return AttrValueAs<T>(GetAttrValue(name), name);
  }
  const AttrValue& GetAttrValue(std::string_view name) const;

  // Requested device ("/job:ps/task:0"), as given when the node was built.
  const std::string& requested_device() const { return requested_device_; }
  // Device chosen by placement, empty until placed.
  std::string assigned_device() const;
  void set_assigned_device(std::string device) const;

  // The value of a Const node (parsed once), for shape inference and constant folding.
  const Tensor* constant_value() const;

  // "name (op: Type)" for error messages.
  std::string DebugName() const;

 private:
  friend class Graph;
  friend class NodeBuilder;
  Node() = default;

  int id_ = -1;
  std::string name_;
  const OpRegistration* registration_ = nullptr;
  Graph* graph_ = nullptr;
  std::vector<Endpoint> inputs_;
  std::vector<DataType> input_types_;
  std::vector<Node*> control_inputs_;
  std::vector<DataType> output_types_;
  std::vector<PartialTensorShape> output_shapes_;
  AttrMap attrs_;
  std::string requested_device_;
  mutable absl::Mutex device_mu_;
  mutable std::string assigned_device_ ABSL_GUARDED_BY(device_mu_);
  std::optional<Tensor> constant_value_;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_NODE_H_
