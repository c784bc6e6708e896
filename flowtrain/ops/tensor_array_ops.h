// TensorArray: TF1's tf.TensorArray (the graph implementation, `_GraphTensorArray`) built
// on the TensorArrayV3 ops. The array itself lives in the session for the duration of one
// run; the graph passes around its handle and a float "flow" tensor whose chaining orders the
// reads after the writes. Every write returns a new TensorArray carrying the write's flow.
//
//   ops::TensorArray ta(DT_FLOAT, {.size = 3, .element_shape = PartialTensorShape({2})});
//   ta = ta.Unstack(x);                  // x: [3, 2]
//   Output first = ta.Read(0);           // x[0]
//   Output all = ta.Write(1, y).Stack(); // [3, 2]
//
// Node names follow TF's ("TensorArray", "TensorArrayStack/TensorArrayGatherV3",
// "TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3"), so GraphDefs match TF's.
// Build-time errors (a value of the wrong dtype, an element shape inconsistent with earlier
// writes) throw InvalidArgument; run-time ones (an index out of range, a second write, a
// read of a closed array) come from the kernels and name the array. Gradients flow through
// TF's gradient arrays (Grad), registered in tensor_array_grad.cc.
//
// Not thread-safe beyond what Graph guarantees; a TensorArray is a small value to copy.
#ifndef FLOWTRAIN_OPS_TENSOR_ARRAY_OPS_H_
#define FLOWTRAIN_OPS_TENSOR_ARRAY_OPS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

struct TensorArrayOptions {
  int64_t size = 0;
  // When set, the size is this int32 scalar instead of `size`.
  Output size_tensor;
  bool dynamic_size = false;
  bool clear_after_read = true;
  // All elements have one shape, refined by every write (TF's identical_element_shapes).
  bool infer_shape = true;
  PartialTensorShape element_shape = PartialTensorShape::Unknown();
  // The run-time array's name prefix; empty: the node's name.
  std::string tensor_array_name;
  std::string name = "TensorArray";
};

class TensorArray {
 public:
  TensorArray(DataType dtype, const TensorArrayOptions& options);
  // Wraps an existing array's handle and flow (as tf.TensorArray(handle=, flow=)).
  static TensorArray FromHandle(DataType dtype, Output handle, Output flow, bool infer_shape = true,
                                PartialTensorShape element_shape = PartialTensorShape::Unknown());

  DataType dtype() const { return dtype_; }
  Output handle() const { return handle_; }
  Output flow() const { return flow_; }
  // What is known of the elements' shape from the options and the writes so far.
  PartialTensorShape element_shape() const { return *element_shape_; }

  TensorArray Write(Output index, Output value, std::string_view name = "TensorArrayWrite") const;
  TensorArray Write(int32_t index, Output value, std::string_view name = "TensorArrayWrite") const;
  Output Read(Output index, std::string_view name = "TensorArrayReadV3") const;
  Output Read(int32_t index, std::string_view name = "TensorArrayReadV3") const;
  // The elements at `indices` (int32 vector), stacked along a new dimension 0.
  Output Gather(Output indices, std::string_view name = "TensorArrayGatherV3") const;
  // Writes value[i] at indices[i].
  TensorArray Scatter(Output indices, Output value, std::string_view name = "TensorArrayScatter") const;
  // All elements stacked / the rows of `value` as elements 0..n-1.
  Output Stack(std::string_view name = "TensorArrayStack") const;
  TensorArray Unstack(Output value, std::string_view name = "TensorArrayUnstack") const;
  // All elements concatenated along dimension 0 / `value` cut into pieces of `lengths` rows.
  Output Concat(std::string_view name = "TensorArrayConcatV3") const;
  TensorArray Split(Output value, Output lengths, std::string_view name = "TensorArraySplit") const;
  Output Size(std::string_view name = "TensorArraySizeV3") const;
  Operation Close(std::string_view name = "TensorArrayCloseV3") const;
  // The gradient array of this one for the gradient computation `source` (the name scope of
  // the gradient ops, e.g. "gradients"); created when `flow` (default: this array's) is ready.
  TensorArray Grad(std::string_view source, Output flow = Output(),
                   std::string_view name = "TensorArrayGrad") const;

 private:
  TensorArray(DataType dtype, Output handle, Output flow, bool infer_shape, bool dynamic_size,
              std::shared_ptr<PartialTensorShape> element_shape);
  TensorArray WithFlow(Output flow) const;
  // Refines the shared element shape with a written element's (when infer_shape).
  void MergeElementShape(const PartialTensorShape& shape) const;
  void CheckDtype(const Output& value) const;

  DataType dtype_;
  Output handle_;
  Output flow_;
  bool infer_shape_;
  bool dynamic_size_;
  // Shared by every TensorArray of one chain of writes, as TF's `_element_shape` list.
  std::shared_ptr<PartialTensorShape> element_shape_;
};

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_TENSOR_ARRAY_OPS_H_
