#include "flowtrain/ops/tensor_array_ops.h"

#include <algorithm>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain {
namespace {

// TF gives TensorArrayV3's DT_RESOURCE handle the static shape of its old string handle, [2]
// (the tensor a kernel outputs is a scalar).
void CheckHandle(InferenceContext& c, int i) {
  const PartialTensorShape handle = c.WithRank(c.input(i), 1);
  c.MergeDims(handle.dim_size(0), 2);
}

// The element shape the TensorArrayV3 behind a handle was built with, looking through the
// ops that pass a handle on unchanged; unknown if the handle comes from elsewhere.
PartialTensorShape HandleElementShape(const Node* node) {
  for (int depth = 0; node != nullptr && depth < 64; ++depth) {
    const std::string& type = node->type();
    if (type == "TensorArrayV3") return node->GetAttr<PartialTensorShape>("element_shape");
    if (node->num_inputs() == 0) break;
    if (type != "TensorArrayGradV3" && type != "Identity" && type != "Enter" && type != "Switch") break;
    node = node->input(0).node;
  }
  return PartialTensorShape::Unknown();
}

void FlowOutShape(InferenceContext& c) {
  CheckHandle(c, 0);
  c.WithRank(c.input(c.num_inputs() - 1), 0);
  c.set_output(0, PartialTensorShape({}));
}

}  // namespace

FT_REGISTER_OP("TensorArrayV3")
    .Input("size: int32")
    .Output("handle: resource")
    .Output("flow: float")
    .Attr("dtype: type")
    .Attr("element_shape: shape = <unknown>")
    .Attr("dynamic_size: bool = false")
    .Attr("clear_after_read: bool = true")
    .Attr("identical_element_shapes: bool = false")
    .Attr("tensor_array_name: string = ''")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      c.WithRank(c.input(0), 0);
      c.set_output(0, PartialTensorShape({2}));
      c.set_output(1, PartialTensorShape({}));
    });

FT_REGISTER_OP("TensorArrayGradV3")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Output("grad_handle: resource")
    .Output("flow_out: float")
    .Attr("source: string")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      CheckHandle(c, 0);
      c.set_output(0, PartialTensorShape({2}));
      c.set_output(1, PartialTensorShape({}));
    });

FT_REGISTER_OP("TensorArrayWriteV3")
    .Input("handle: resource")
    .Input("index: int32")
    .Input("value: T")
    .Input("flow_in: float")
    .Output("flow_out: float")
    .Attr("T: type")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      c.WithRank(c.input(1), 0);
      FlowOutShape(c);
    });

FT_REGISTER_OP("TensorArrayReadV3")
    .Input("handle: resource")
    .Input("index: int32")
    .Input("flow_in: float")
    .Output("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      CheckHandle(c, 0);
      c.WithRank(c.input(1), 0);
      c.WithRank(c.input(2), 0);
      c.set_output(0, HandleElementShape(c.node().input(0).node));
    });

FT_REGISTER_OP("TensorArrayGatherV3")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("flow_in: float")
    .Output("value: dtype")
    .Attr("dtype: type")
    .Attr("element_shape: shape = <unknown>")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      CheckHandle(c, 0);
      const PartialTensorShape indices = c.WithRank(c.input(1), 1);
      c.WithRank(c.input(2), 0);
      const PartialTensorShape element =
          c.Merge(c.GetAttr<PartialTensorShape>("element_shape"), HandleElementShape(c.node().input(0).node));
      if (element.unknown_rank()) {
        c.set_output(0, PartialTensorShape::Unknown());
        return;
      }
      PartialTensorShape out({indices.dim_size(0)});
      for (int64_t d : element.dim_sizes()) out.AddDim(d);
      c.set_output(0, out);
    });

FT_REGISTER_OP("TensorArrayScatterV3")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("value: T")
    .Input("flow_in: float")
    .Output("flow_out: float")
    .Attr("T: type")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      c.WithRank(c.input(1), 1);
      c.WithRankAtLeast(c.input(2), 1);
      FlowOutShape(c);
    });

FT_REGISTER_OP("TensorArrayConcatV3")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Output("value: dtype")
    .Output("lengths: int64")
    .Attr("dtype: type")
    .Attr("element_shape_except0: shape = <unknown>")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      CheckHandle(c, 0);
      c.WithRank(c.input(1), 0);
      const auto except0 = c.GetAttr<PartialTensorShape>("element_shape_except0");
      if (except0.unknown_rank()) {
        c.set_output(0, PartialTensorShape::Unknown());
      } else {
        PartialTensorShape out({-1});
        for (int64_t d : except0.dim_sizes()) out.AddDim(d);
        c.set_output(0, out);
      }
      c.set_output(1, PartialTensorShape({-1}));
    });

FT_REGISTER_OP("TensorArraySplitV3")
    .Input("handle: resource")
    .Input("value: T")
    .Input("lengths: int64")
    .Input("flow_in: float")
    .Output("flow_out: float")
    .Attr("T: type")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) {
      c.WithRankAtLeast(c.input(1), 1);
      c.WithRank(c.input(2), 1);
      FlowOutShape(c);
    });

FT_REGISTER_OP("TensorArraySizeV3")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Output("size: int32")
    .SetIsStateful()
    .SetShapeFn(FlowOutShape);

FT_REGISTER_OP("TensorArrayCloseV3")
    .Input("handle: resource")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) { CheckHandle(c, 0); });

namespace ops {

TensorArray::TensorArray(DataType dtype, Output handle, Output flow, bool infer_shape, bool dynamic_size,
                         std::shared_ptr<PartialTensorShape> element_shape)
    : dtype_(dtype),
      handle_(handle),
      flow_(flow),
      infer_shape_(infer_shape),
      dynamic_size_(dynamic_size),
      element_shape_(std::move(element_shape)) {}

TensorArray::TensorArray(DataType dtype, const TensorArrayOptions& options)
    : dtype_(dtype),
      infer_shape_(options.infer_shape),
      dynamic_size_(options.dynamic_size),
      element_shape_(std::make_shared<PartialTensorShape>(options.element_shape)) {
  OpNameScope scope(GetDefaultGraph(), options.name);
  Output size = options.size_tensor ? options.size_tensor : Const(static_cast<int32_t>(options.size), "size");
  scope.Exit();
  Operation op = NodeBuilder("TensorArrayV3", scope.op_name())
                     .ExactName()
                     .Input(size)
                     .Attr("dtype", dtype)
                     .Attr("element_shape", options.element_shape)
                     .Attr("dynamic_size", options.dynamic_size)
                     .Attr("clear_after_read", options.clear_after_read)
                     .Attr("identical_element_shapes", options.infer_shape)
                     .Attr("tensor_array_name", options.tensor_array_name)
                     .Finalize();
  handle_ = op.output(0);
  flow_ = op.output(1);
}

TensorArray TensorArray::FromHandle(DataType dtype, Output handle, Output flow, bool infer_shape,
                                    PartialTensorShape element_shape) {
  if (!handle || handle.dtype() != DT_RESOURCE) {
    InvalidArgument("TensorArray::FromHandle needs a DT_RESOURCE handle, got ",
                    handle ? handle.DebugString() : std::string("an empty Output"));
  }
  if (!flow || flow.dtype() != DT_FLOAT) {
    InvalidArgument("TensorArray::FromHandle needs a float flow, got ",
                    flow ? flow.DebugString() : std::string("an empty Output"));
  }
  return TensorArray(dtype, handle, flow, infer_shape, /*dynamic_size=*/false,
                     std::make_shared<PartialTensorShape>(std::move(element_shape)));
}

TensorArray TensorArray::WithFlow(Output flow) const {
  return TensorArray(dtype_, handle_, flow, infer_shape_, dynamic_size_, element_shape_);
}

void TensorArray::MergeElementShape(const PartialTensorShape& shape) const {
  if (!infer_shape_) return;
  if (!shape.IsCompatibleWith(*element_shape_)) {
    InvalidArgument("Inconsistent shapes: saw ", shape.DebugString(), " but expected ",
                    element_shape_->DebugString(), " (and infer_shape=True) for the TensorArray ",
                    handle_.op().name());
  }
  *element_shape_ = element_shape_->MergeWith(shape);
}

void TensorArray::CheckDtype(const Output& value) const {
  if (value.dtype() != dtype_) {
    InvalidArgument("TensorArray dtype is ", DataTypeString(dtype_), " but Op is trying to write dtype ",
                    DataTypeString(value.dtype()), " (TensorArray ", handle_.op().name(), ")");
  }
}

TensorArray TensorArray::Write(Output index, Output value, std::string_view name) const {
  CheckDtype(value);
  MergeElementShape(value.shape());
  auto scope = handle_.graph()->NameScope(name);
  return WithFlow(NodeBuilder("TensorArrayWriteV3")
                      .Input(handle_)
                      .Input(index)
                      .Input(value)
                      .Input(flow_)
                      .Finalize()
                      .output(0));
}

TensorArray TensorArray::Write(int32_t index, Output value, std::string_view name) const {
  CheckDtype(value);
  MergeElementShape(value.shape());
  auto scope = handle_.graph()->NameScope(name);
  OpNameScope op_scope(*handle_.graph(), "TensorArrayWriteV3");
  Output index_tensor = Const(index, "index");
  op_scope.Exit();
  return WithFlow(NodeBuilder("TensorArrayWriteV3", op_scope.op_name())
                      .ExactName()
                      .Input(handle_)
                      .Input(index_tensor)
                      .Input(value)
                      .Input(flow_)
                      .Finalize()
                      .output(0));
}

Output TensorArray::Read(Output index, std::string_view name) const {
  return NodeBuilder("TensorArrayReadV3", name)
      .Input(handle_)
      .Input(index)
      .Input(flow_)
      .Attr("dtype", dtype_)
      .Finalize()
      .output(0);
}

Output TensorArray::Read(int32_t index, std::string_view name) const {
  OpNameScope scope(*handle_.graph(), name);
  Output index_tensor = Const(index, "index");
  scope.Exit();
  return NodeBuilder("TensorArrayReadV3", scope.op_name())
      .ExactName()
      .Input(handle_)
      .Input(index_tensor)
      .Input(flow_)
      .Attr("dtype", dtype_)
      .Finalize()
      .output(0);
}

Output TensorArray::Gather(Output indices, std::string_view name) const {
  return NodeBuilder("TensorArrayGatherV3", name)
      .Input(handle_)
      .Input(indices)
      .Input(flow_)
      .Attr("dtype", dtype_)
      .Attr("element_shape", *element_shape_)
      .Finalize()
      .output(0);
}

TensorArray TensorArray::Scatter(Output indices, Output value, std::string_view name) const {
  CheckDtype(value);
  const PartialTensorShape& shape = value.shape();
  if (!shape.unknown_rank() && shape.dims() > 0) {
    PartialTensorShape element(std::span<const int64_t>(shape.dim_sizes().data() + 1, shape.dims() - 1));
    MergeElementShape(element);
  }
  auto scope = handle_.graph()->NameScope(name);
  return WithFlow(NodeBuilder("TensorArrayScatterV3")
                      .Input(handle_)
                      .Input(indices)
                      .Input(value)
                      .Input(flow_)
                      .Finalize()
                      .output(0));
}

Output TensorArray::Stack(std::string_view name) const {
  auto scope = handle_.graph()->NameScope(name);
  Output range = Range(Const(0, "range/start"), Size(), Const(1, "range/delta"), "range");
  return Gather(range);
}

TensorArray TensorArray::Unstack(Output value, std::string_view name) const {
  auto scope = handle_.graph()->NameScope(name);
  Output num_elements = StridedSlice(Shape(value), {0}, {1}, {1}, {.shrink_axis_mask = 1});
  Output range = Range(Const(0, "range/start"), num_elements, Const(1, "range/delta"), "range");
  return Scatter(range, value);
}

Output TensorArray::Concat(std::string_view name) const {
  PartialTensorShape except0 = PartialTensorShape::Unknown();
  if (!element_shape_->unknown_rank() && element_shape_->dims() > 0) {
    except0 = PartialTensorShape(
        std::span<const int64_t>(element_shape_->dim_sizes().data() + 1, element_shape_->dims() - 1));
  }
  return NodeBuilder("TensorArrayConcatV3", name)
      .Input(handle_)
      .Input(flow_)
      .Attr("dtype", dtype_)
      .Attr("element_shape_except0", except0)
      .Finalize()
      .output(0);
}

TensorArray TensorArray::Split(Output value, Output lengths, std::string_view name) const {
  CheckDtype(value);
  auto scope = handle_.graph()->NameScope(name);
  Output lengths64 = lengths.dtype() == DT_INT64 ? lengths : Cast(lengths, DT_INT64);
  // With equal constant lengths every element's shape is known, as TF infers it.
  const PartialTensorShape& shape = value.shape();
  if (lengths.op().type() == "Const" && !shape.unknown_rank() && shape.dims() > 0) {
    const Tensor known = lengths.op().GetAttr<Tensor>("value");
    std::vector<int64_t> sizes;
    for (int64_t i = 0; i < known.NumElements(); ++i) {
      sizes.push_back(known.dtype() == DT_INT64 ? known.data<int64_t>()[i] : known.data<int32_t>()[i]);
    }
    if (!sizes.empty() && std::all_of(sizes.begin(), sizes.end(), [&](int64_t s) { return s == sizes[0]; })) {
      PartialTensorShape element({sizes[0]});
      for (int d = 1; d < shape.dims(); ++d) element.AddDim(shape.dim_size(d));
      MergeElementShape(element);
    }
  }
  return WithFlow(NodeBuilder("TensorArraySplitV3")
                      .Input(handle_)
                      .Input(value)
                      .Input(lengths64)
                      .Input(flow_)
                      .Finalize()
                      .output(0));
}

Output TensorArray::Size(std::string_view name) const {
  return NodeBuilder("TensorArraySizeV3", name).Input(handle_).Input(flow_).Finalize().output(0);
}

Operation TensorArray::Close(std::string_view name) const {
  return NodeBuilder("TensorArrayCloseV3", name).Input(handle_).Finalize();
}

TensorArray TensorArray::Grad(std::string_view source, Output flow, std::string_view name) const {
  if (!flow) flow = flow_;
  Graph& graph = *handle_.graph();
  auto scope = graph.NameScope(name);
  Operation grad = NodeBuilder("TensorArrayGradV3")
                       .Input(handle_)
                       .Input(flow)
                       .Attr("source", std::string(source))
                       .Finalize();
  Output gradient_flow;
  {
    auto deps = graph.ControlDependencies({grad});
    gradient_flow = Identity(flow, "gradient_flow");
  }
  return TensorArray(dtype_, grad.output(0), gradient_flow, infer_shape_, /*dynamic_size=*/false,
                     element_shape_);
}

}  // namespace ops
}  // namespace flowtrain
