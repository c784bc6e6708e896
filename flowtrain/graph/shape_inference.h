// InferenceContext: what an op's shape function sees while a node is being built — the shapes
// and dtypes of its inputs, the constant values of inputs that are known when building (Const
// nodes, Shape of a fully known shape), and its attrs — and where it records output shapes.
// Errors thrown here reach the user with the node's name and input shapes appended, as TF's
// "Dimensions must be equal, but are 3 and 4 for 'MatMul' (op: 'MatMul') with input shapes:
// [2,3], [4,5]."
//
//   void MatMulShape(InferenceContext& c) {
//     const PartialTensorShape& a = c.WithRank(c.input(0), 2);
//     ...
//     c.set_output(0, PartialTensorShape({m, n}));
//   }
#ifndef FLOWTRAIN_GRAPH_SHAPE_INFERENCE_H_
#define FLOWTRAIN_GRAPH_SHAPE_INFERENCE_H_

#include <optional>
#include <vector>

#include "flowtrain/graph/node.h"

namespace flowtrain {

class InferenceContext {
 public:
  explicit InferenceContext(const Node& node);

  const Node& node() const { return node_; }
  int num_inputs() const { return node_.num_inputs(); }
  const PartialTensorShape& input(int i) const;
  DataType input_type(int i) const { return BaseType(node_.input_type(i)); }
  // The input's value when it is known while building, else nullptr.
  const Tensor* input_tensor(int i);
  // The input (a 1-D int32/int64 tensor holding a shape) as a partial shape: known entries
  // from a constant, unknown ones as -1; unknown rank if nothing is known.
  PartialTensorShape InputAsShape(int i);

  int num_outputs() const { return node_.num_outputs(); }
  void set_output(int i, PartialTensorShape shape);
  const PartialTensorShape& output(int i) const { return outputs_[i]; }
  std::vector<PartialTensorShape> TakeOutputs() { return std::move(outputs_); }

  template <typename T>
  T GetAttr(std::string_view name) const {
    return node_.GetAttr<T>(name);
  }

  // Shape checks; each returns the (possibly refined) shape or throws InvalidArgument.
  PartialTensorShape WithRank(const PartialTensorShape& shape, int rank) const;
  PartialTensorShape WithRankAtLeast(const PartialTensorShape& shape, int rank) const;
  PartialTensorShape WithRankAtMost(const PartialTensorShape& shape, int rank) const;
  // Merges two dimensions (-1 unknown); throws "Dimensions must be equal, but are a and b".
  int64_t MergeDims(int64_t a, int64_t b) const;
  PartialTensorShape Merge(const PartialTensorShape& a, const PartialTensorShape& b) const;

 private:
  const Node& node_;
  std::vector<PartialTensorShape> outputs_;
  std::vector<std::optional<Tensor>> folded_;
};

// Shape functions shared by many ops.
namespace shape_fns {
// Output 0 has the shape of input 0.
void UnchangedShape(InferenceContext& c);
// Every output is a scalar.
void ScalarShape(InferenceContext& c);
// Outputs have unknown shapes.
void UnknownShape(InferenceContext& c);
// Output 0 has numpy-broadcast shape of inputs 0 and 1.
void BroadcastBinaryOpShape(InferenceContext& c);
// Output 0 has the shape given by the "shape" attr.
void ShapeFromShapeAttr(InferenceContext& c);
// The numpy broadcast of two partial shapes; throws on incompatible dimensions.
PartialTensorShape BroadcastShapes(const PartialTensorShape& a, const PartialTensorShape& b);
}  // namespace shape_fns

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_SHAPE_INFERENCE_H_
