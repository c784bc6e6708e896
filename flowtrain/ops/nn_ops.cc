#include "flowtrain/ops/nn_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/internal/nn_window.h"

namespace flowtrain {

// ---- Window geometry (nn_window.h) ----

Padding ParsePadding(std::string_view padding) {
  if (padding == "SAME") return Padding::kSame;
  if (padding == "VALID") return Padding::kValid;
  InvalidArgument("Value for attr 'padding' of \"", padding,
                  "\" is not in the list of allowed values: \"SAME\", \"VALID\"");
}

void CheckNhwc(std::string_view data_format) {
  if (data_format != "NHWC") {
    InvalidArgument("data_format \"", data_format, "\" is not supported on CPU; use \"NHWC\"");
  }
}

void CheckWindowAttr(const std::vector<int64_t>& values, std::string_view attr_name) {
  if (values.size() != 4) {
    InvalidArgument(attr_name, " field must specify 4 dimensions, got ", values.size());
  }
  for (int64_t v : values) {
    if (v < 1) InvalidArgument(attr_name, " entries must be at least 1, got ", v);
  }
  if (values[0] != 1 || values[3] != 1) {
    InvalidArgument("Current implementation does not yet support ", attr_name,
                    " in the batch and depth dimensions.");
  }
}

WindowDim ComputeWindowDim(int64_t input, int64_t window, int64_t stride, Padding padding) {
  if (input < 0) return {-1, 0};
  if (padding == Padding::kValid) {
    // TF's arithmetic: a window one larger than the input gives an empty output, not an error.
    const int64_t output = (input - window + stride) / stride;
    if (output < 0) {
      InvalidArgument("Computed output size would be negative: ", output, " [input_size: ", input,
                      ", effective_filter_size: ", window, ", stride: ", stride, "]");
    }
    return {output, 0};
  }
  const int64_t output = (input + stride - 1) / stride;
  const int64_t pad_total = std::max<int64_t>((output - 1) * stride + window - input, 0);
  return {output, pad_total / 2};
}

namespace {

// ---- Shape functions ----

void MergeInputsShape(InferenceContext& c) { c.set_output(0, c.Merge(c.input(0), c.input(1))); }

void SoftmaxShape(InferenceContext& c) { c.set_output(0, c.WithRankAtLeast(c.input(0), 1)); }

void SoftmaxCrossEntropyShape(InferenceContext& c) {
  const PartialTensorShape logits = c.WithRank(c.input(0), 2);
  const PartialTensorShape labels = c.WithRank(c.input(1), 2);
  const PartialTensorShape merged = c.Merge(logits, labels);
  c.set_output(0, PartialTensorShape({merged.dim_size(0)}));
  c.set_output(1, merged);
}

void SparseSoftmaxCrossEntropyShape(InferenceContext& c) {
  const PartialTensorShape logits = c.WithRank(c.input(0), 2);
  const PartialTensorShape labels = c.WithRank(c.input(1), 1);
  const int64_t batch = c.MergeDims(logits.dim_size(0), labels.dim_size(0));
  c.set_output(0, PartialTensorShape({batch}));
  c.set_output(1, PartialTensorShape({batch, logits.dim_size(1)}));
}

void BiasAddShape(InferenceContext& c) {
  CheckNhwc(c.GetAttr<std::string>("data_format"));
  PartialTensorShape value = c.WithRankAtLeast(c.input(0), 2);
  const PartialTensorShape bias = c.WithRank(c.input(1), 1);
  if (value.unknown_rank()) {
    c.set_output(0, value);
    return;
  }
  DimVector dims = value.dim_sizes();
  dims.back() = c.MergeDims(dims.back(), bias.dim_size(0));
  c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
}

void BiasAddGradShape(InferenceContext& c) {
  CheckNhwc(c.GetAttr<std::string>("data_format"));
  const PartialTensorShape grad = c.WithRankAtLeast(c.input(0), 2);
  c.set_output(0, PartialTensorShape({grad.unknown_rank() ? -1 : grad.dim_size(grad.dims() - 1)}));
}

// The attrs every convolution and pooling op checks.
Padding CheckWindowedOpAttrs(InferenceContext& c, bool has_ksize) {
  CheckNhwc(c.GetAttr<std::string>("data_format"));
  CheckWindowAttr(c.GetAttr<std::vector<int64_t>>("strides"), "strides");
  if (has_ksize) CheckWindowAttr(c.GetAttr<std::vector<int64_t>>("ksize"), "ksize");
  if (c.node().FindAttr("dilations") != nullptr) {
    for (int64_t d : c.GetAttr<std::vector<int64_t>>("dilations")) {
      if (d != 1) InvalidArgument("Dilations other than 1 are not supported");
    }
  }
  return ParsePadding(c.GetAttr<std::string>("padding"));
}

PartialTensorShape WindowedOutputShape(InferenceContext& c, const PartialTensorShape& input,
                                       int64_t window_rows, int64_t window_cols, int64_t depth,
                                       Padding padding) {
  const std::vector<int64_t> strides = c.GetAttr<std::vector<int64_t>>("strides");
  const WindowDim rows = window_rows < 0
                             ? WindowDim{-1, 0}
                             : ComputeWindowDim(input.dim_size(1), window_rows, strides[1], padding);
  const WindowDim cols = window_cols < 0
                             ? WindowDim{-1, 0}
                             : ComputeWindowDim(input.dim_size(2), window_cols, strides[2], padding);
  return PartialTensorShape({input.dim_size(0), rows.output, cols.output, depth});
}

void Conv2DShape(InferenceContext& c) {
  const Padding padding = CheckWindowedOpAttrs(c, /*has_ksize=*/false);
  const PartialTensorShape input = c.WithRank(c.input(0), 4);
  const PartialTensorShape filter = c.WithRank(c.input(1), 4);
  if (input.dim_size(3) >= 0 && filter.dim_size(2) >= 0 && input.dim_size(3) != filter.dim_size(2)) {
    InvalidArgument("Depth of input (", input.dim_size(3), ") does not match the input depth of filter (",
                    filter.dim_size(2), ")");
  }
  c.set_output(
      0, WindowedOutputShape(c, input, filter.dim_size(0), filter.dim_size(1), filter.dim_size(3), padding));
}

void Conv2DBackpropInputShape(InferenceContext& c) {
  CheckWindowedOpAttrs(c, /*has_ksize=*/false);
  const PartialTensorShape filter = c.WithRank(c.input(1), 4);
  const PartialTensorShape grad = c.WithRank(c.input(2), 4);
  const PartialTensorShape input = c.WithRank(c.InputAsShape(0), 4);
  c.MergeDims(input.dim_size(3), filter.dim_size(2));
  c.MergeDims(grad.dim_size(3), filter.dim_size(3));
  c.set_output(0, input);
}

void Conv2DBackpropFilterShape(InferenceContext& c) {
  CheckWindowedOpAttrs(c, /*has_ksize=*/false);
  const PartialTensorShape input = c.WithRank(c.input(0), 4);
  const PartialTensorShape grad = c.WithRank(c.input(2), 4);
  const PartialTensorShape filter = c.WithRank(c.InputAsShape(1), 4);
  c.MergeDims(input.dim_size(3), filter.dim_size(2));
  c.MergeDims(grad.dim_size(3), filter.dim_size(3));
  c.set_output(0, filter);
}

void PoolShape(InferenceContext& c) {
  const Padding padding = CheckWindowedOpAttrs(c, /*has_ksize=*/true);
  const PartialTensorShape input = c.WithRank(c.input(0), 4);
  const std::vector<int64_t> ksize = c.GetAttr<std::vector<int64_t>>("ksize");
  c.set_output(0, WindowedOutputShape(c, input, ksize[1], ksize[2], input.dim_size(3), padding));
}

void MaxPoolGradShape(InferenceContext& c) {
  CheckWindowedOpAttrs(c, /*has_ksize=*/true);
  const PartialTensorShape input = c.WithRank(c.input(0), 4);
  c.WithRank(c.input(1), 4);
  c.Merge(c.input(1), c.WithRank(c.input(2), 4));
  c.set_output(0, input);
}

void AvgPoolGradShape(InferenceContext& c) {
  CheckWindowedOpAttrs(c, /*has_ksize=*/true);
  c.WithRank(c.input(1), 4);
  c.set_output(0, c.WithRank(c.InputAsShape(0), 4));
}

void FusedBatchNormShape(InferenceContext& c) {
  CheckNhwc(c.GetAttr<std::string>("data_format"));
  const PartialTensorShape x = c.WithRank(c.input(0), 4);
  int64_t channels = x.dim_size(3);
  const bool is_training = c.GetAttr<bool>("is_training");
  // In training the mean and variance inputs are unused and may be empty.
  const int checked = is_training ? 3 : 5;
  for (int i = 1; i < checked; ++i) {
    channels = c.MergeDims(channels, c.WithRank(c.input(i), 1).dim_size(0));
  }
  for (int i = checked; i < 5; ++i) c.WithRank(c.input(i), 1);
  c.set_output(0, PartialTensorShape({x.dim_size(0), x.dim_size(1), x.dim_size(2), channels}));
  for (int i = 1; i < 5; ++i) c.set_output(i, PartialTensorShape({channels}));
  c.set_output(5, PartialTensorShape({0}));
}

void FusedBatchNormGradShape(InferenceContext& c) {
  CheckNhwc(c.GetAttr<std::string>("data_format"));
  const PartialTensorShape x = c.Merge(c.WithRank(c.input(0), 4), c.WithRank(c.input(1), 4));
  int64_t channels = x.dim_size(3);
  for (int i = 2; i < 5; ++i) channels = c.MergeDims(channels, c.WithRank(c.input(i), 1).dim_size(0));
  c.set_output(0, PartialTensorShape({x.dim_size(0), x.dim_size(1), x.dim_size(2), channels}));
  c.set_output(1, PartialTensorShape({channels}));
  c.set_output(2, PartialTensorShape({channels}));
  c.set_output(3, PartialTensorShape({0}));
  c.set_output(4, PartialTensorShape({0}));
}

}  // namespace

// ---- Op registrations (TF 1.15 signatures; float64 is added where TF lacks it so gradients
// can be checked in double precision) ----

#define FT_ACTIVATION_OP(Name, Types) \
  FT_REGISTER_OP(Name)                \
      .Input("features: T")           \
      .Output("activations: T")       \
      .Attr("T: " Types)              \
      .SetShapeFn(shape_fns::UnchangedShape)
#define FT_ACTIVATION_GRAD_OP(Name, Second, Types) \
  FT_REGISTER_OP(Name)                             \
      .Input("gradients: T")                       \
      .Input(Second ": T")                         \
      .Output("backprops: T")                      \
      .Attr("T: " Types)                           \
      .SetShapeFn(MergeInputsShape)
#define FT_REAL_TYPES "{bfloat16, half, float, double, uint8, int8, int16, int32, int64}"
#define FT_FLOAT_TYPES "{bfloat16, half, float, double}"

FT_ACTIVATION_OP("Relu", FT_REAL_TYPES);
FT_ACTIVATION_GRAD_OP("ReluGrad", "features", FT_REAL_TYPES);
FT_ACTIVATION_OP("Relu6", FT_REAL_TYPES);
FT_ACTIVATION_GRAD_OP("Relu6Grad", "features", FT_REAL_TYPES);
FT_ACTIVATION_OP("Elu", FT_FLOAT_TYPES);
FT_ACTIVATION_GRAD_OP("EluGrad", "outputs", FT_FLOAT_TYPES);
FT_ACTIVATION_OP("LeakyRelu", FT_FLOAT_TYPES " = DT_FLOAT").Attr("alpha: float = 0.2");
FT_ACTIVATION_GRAD_OP("LeakyReluGrad", "features", FT_FLOAT_TYPES " = DT_FLOAT").Attr("alpha: float = 0.2");
#undef FT_ACTIVATION_OP
#undef FT_ACTIVATION_GRAD_OP

FT_REGISTER_OP("Softmax")
    .Input("logits: T")
    .Output("softmax: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .SetShapeFn(SoftmaxShape);

FT_REGISTER_OP("LogSoftmax")
    .Input("logits: T")
    .Output("logsoftmax: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .SetShapeFn(SoftmaxShape);

FT_REGISTER_OP("SoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: T")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .SetShapeFn(SoftmaxCrossEntropyShape);

FT_REGISTER_OP("SparseSoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: Tlabels")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .Attr("Tlabels: {int32, int64} = DT_INT64")
    .SetShapeFn(SparseSoftmaxCrossEntropyShape);

FT_REGISTER_OP("L2Loss")
    .Input("t: T")
    .Output("output: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("BiasAdd")
    .Input("value: T")
    .Input("bias: T")
    .Output("output: T")
    .Attr("T: " FT_REAL_TYPES)
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(BiasAddShape);

FT_REGISTER_OP("BiasAddGrad")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: " FT_REAL_TYPES)
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(BiasAddGradShape);

#define FT_CONV_ATTRS                               \
  Attr("T: {half, bfloat16, float, double, int32}") \
      .Attr("strides: list(int)")                   \
      .Attr("use_cudnn_on_gpu: bool = true")        \
      .Attr("padding: string")                      \
      .Attr("explicit_paddings: list(int) = []")    \
      .Attr("data_format: string = 'NHWC'")         \
      .Attr("dilations: list(int) = [1, 1, 1, 1]")

FT_REGISTER_OP("Conv2D")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .FT_CONV_ATTRS.SetShapeFn(Conv2DShape);

FT_REGISTER_OP("Conv2DBackpropInput")
    .Input("input_sizes: int32")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .FT_CONV_ATTRS.SetShapeFn(Conv2DBackpropInputShape);

FT_REGISTER_OP("Conv2DBackpropFilter")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .FT_CONV_ATTRS.SetShapeFn(Conv2DBackpropFilterShape);
#undef FT_CONV_ATTRS

#define FT_POOL_ATTRS                  \
  Attr("ksize: list(int) >= 4")        \
      .Attr("strides: list(int) >= 4") \
      .Attr("padding: string")         \
      .Attr("data_format: string = 'NHWC'")

// TF's MaxPool and MaxPoolGrad (not AvgPool) have taken explicit_paddings since 2.x.
FT_REGISTER_OP("MaxPool")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: {half, bfloat16, float, double, int32, int64, uint8, int16, int8} = DT_FLOAT")
    .Attr("explicit_paddings: list(int) = []")
    .FT_POOL_ATTRS.SetShapeFn(PoolShape);

FT_REGISTER_OP("MaxPoolGrad")
    .Input("orig_input: T")
    .Input("orig_output: T")
    .Input("grad: T")
    .Output("output: T")
    .Attr("T: " FT_REAL_TYPES " = DT_FLOAT")
    .Attr("explicit_paddings: list(int) = []")
    .FT_POOL_ATTRS.SetShapeFn(MaxPoolGradShape);

FT_REGISTER_OP("AvgPool")
    .Input("value: T")
    .Output("output: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .FT_POOL_ATTRS.SetShapeFn(PoolShape);

FT_REGISTER_OP("AvgPoolGrad")
    .Input("orig_input_shape: int32")
    .Input("grad: T")
    .Output("output: T")
    .Attr("T: " FT_FLOAT_TYPES)
    .FT_POOL_ATTRS.SetShapeFn(AvgPoolGradShape);
#undef FT_POOL_ATTRS

FT_REGISTER_OP("FusedBatchNormV3")
    .Input("x: T")
    .Input("scale: U")
    .Input("offset: U")
    .Input("mean: U")
    .Input("variance: U")
    .Output("y: T")
    .Output("batch_mean: U")
    .Output("batch_variance: U")
    .Output("reserve_space_1: U")
    .Output("reserve_space_2: U")
    .Output("reserve_space_3: U")
    .Attr("T: {half, bfloat16, float, double}")
    .Attr("U: {float, double}")
    .Attr("epsilon: float = 0.0001")
    .Attr("exponential_avg_factor: float = 1.0")
    .Attr("data_format: string = 'NHWC'")
    .Attr("is_training: bool = true")
    .SetShapeFn(FusedBatchNormShape);

FT_REGISTER_OP("FusedBatchNormGradV3")
    .Input("y_backprop: T")
    .Input("x: T")
    .Input("scale: U")
    .Input("reserve_space_1: U")
    .Input("reserve_space_2: U")
    .Input("reserve_space_3: U")
    .Output("x_backprop: T")
    .Output("scale_backprop: U")
    .Output("offset_backprop: U")
    .Output("reserve_space_4: U")
    .Output("reserve_space_5: U")
    .Attr("T: {half, bfloat16, float, double}")
    .Attr("U: {float, double}")
    .Attr("epsilon: float = 0.0001")
    .Attr("data_format: string = 'NHWC'")
    .Attr("is_training: bool = true")
    .SetShapeFn(FusedBatchNormGradShape);
#undef FT_REAL_TYPES
#undef FT_FLOAT_TYPES

namespace ops {
namespace {

Output Unary(std::string_view op, Output x, std::string_view name) {
  return NodeBuilder(op, name).Input(x).Finalize();
}
Output Binary(std::string_view op, Output x, Output y, std::string_view name) {
  return NodeBuilder(op, name).Input(x).Input(y).Finalize();
}

}  // namespace

Output Relu(Output features, std::string_view name) { return Unary("Relu", features, name); }
Output ReluGrad(Output gradients, Output features, std::string_view name) {
  return Binary("ReluGrad", gradients, features, name);
}
Output Relu6(Output features, std::string_view name) { return Unary("Relu6", features, name); }
Output Relu6Grad(Output gradients, Output features, std::string_view name) {
  return Binary("Relu6Grad", gradients, features, name);
}
Output Elu(Output features, std::string_view name) { return Unary("Elu", features, name); }
Output EluGrad(Output gradients, Output outputs, std::string_view name) {
  return Binary("EluGrad", gradients, outputs, name);
}
Output LeakyRelu(Output features, float alpha, std::string_view name) {
  return NodeBuilder("LeakyRelu", name).Input(features).Attr("alpha", alpha).Finalize();
}
Output LeakyReluGrad(Output gradients, Output features, float alpha, std::string_view name) {
  return NodeBuilder("LeakyReluGrad", name).Input(gradients).Input(features).Attr("alpha", alpha).Finalize();
}

Output Softmax(Output logits, std::string_view name) { return Unary("Softmax", logits, name); }
Output LogSoftmax(Output logits, std::string_view name) { return Unary("LogSoftmax", logits, name); }

SoftmaxCrossEntropyOutputs SoftmaxCrossEntropyWithLogits(Output labels, Output logits,
                                                         std::string_view name) {
  Operation op = NodeBuilder("SoftmaxCrossEntropyWithLogits", name).Input(logits).Input(labels).Finalize();
  return {op.output(0), op.output(1)};
}

Output SparseSoftmaxCrossEntropyWithLogits(Output labels, Output logits, std::string_view name) {
  const PartialTensorShape& logits_shape = logits.shape();
  const PartialTensorShape& labels_shape = labels.shape();
  if (!logits_shape.unknown_rank() && logits_shape.dims() == 0) {
    InvalidArgument("Logits cannot be scalars - received shape ", logits_shape.DebugString(), " in ", name);
  }
  if (!logits_shape.unknown_rank() && !labels_shape.unknown_rank() &&
      labels_shape.dims() != logits_shape.dims() - 1) {
    InvalidArgument("Rank mismatch: Rank of labels (received ", labels_shape.dims(),
                    ") should equal rank of logits minus 1 (received ", logits_shape.dims(), ") in ", name);
  }
  const bool is_matrix = !logits_shape.unknown_rank() && logits_shape.dims() == 2;
  if (!is_matrix && (logits_shape.unknown_rank() || logits_shape.dim_size(logits_shape.dims() - 1) < 0)) {
    InvalidArgument("SparseSoftmaxCrossEntropyWithLogits '", name,
                    "' of logits with rank other than 2 needs a known number of classes, got ",
                    logits_shape.DebugString());
  }
  OpNameScope scope(*logits.graph(), name);
  if (is_matrix) {
    Operation op = NodeBuilder("SparseSoftmaxCrossEntropyWithLogits").Input(logits).Input(labels).Finalize();
    return op.output(0);
  }
  // Any other rank: flatten to [batch, classes] and [batch], then restore labels' shape.
  Output labels_shape_tensor = Shape(labels);
  Output flat_logits =
      Reshape(logits, std::vector<int64_t>{-1, logits_shape.dim_size(logits_shape.dims() - 1)});
  Output flat_labels = Reshape(labels, std::vector<int64_t>{-1});
  Operation op =
      NodeBuilder("SparseSoftmaxCrossEntropyWithLogits").Input(flat_logits).Input(flat_labels).Finalize();
  return Reshape(op.output(0), labels_shape_tensor);
}

Output L2Loss(Output t, std::string_view name) { return Unary("L2Loss", t, name); }

Output BiasAdd(Output value, Output bias, std::string_view name) {
  return Binary("BiasAdd", value, bias, name);
}
Output BiasAddGrad(Output out_backprop, std::string_view name) {
  return Unary("BiasAddGrad", out_backprop, name);
}

Output Conv2D(Output input, Output filter, const std::vector<int64_t>& strides, std::string_view padding,
              std::string_view name) {
  return NodeBuilder("Conv2D", name)
      .Input(input)
      .Input(filter)
      .Attr("strides", strides)
      .Attr("padding", padding)
      .Finalize();
}

Output Conv2DBackpropInput(Output input_sizes, Output filter, Output out_backprop,
                           const std::vector<int64_t>& strides, std::string_view padding,
                           std::string_view name) {
  return NodeBuilder("Conv2DBackpropInput", name)
      .Input(input_sizes)
      .Input(filter)
      .Input(out_backprop)
      .Attr("strides", strides)
      .Attr("padding", padding)
      .Finalize();
}

Output Conv2DBackpropFilter(Output input, Output filter_sizes, Output out_backprop,
                            const std::vector<int64_t>& strides, std::string_view padding,
                            std::string_view name) {
  return NodeBuilder("Conv2DBackpropFilter", name)
      .Input(input)
      .Input(filter_sizes)
      .Input(out_backprop)
      .Attr("strides", strides)
      .Attr("padding", padding)
      .Finalize();
}

namespace {
Output Pool(std::string_view op, const std::vector<Output>& inputs, const std::vector<int64_t>& ksize,
            const std::vector<int64_t>& strides, std::string_view padding, std::string_view name) {
  NodeBuilder builder(op, name);
  for (const Output& input : inputs) builder.Input(input);
  return builder.Attr("ksize", ksize).Attr("strides", strides).Attr("padding", padding).Finalize();
}
}  // namespace

Output MaxPool(Output value, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               std::string_view padding, std::string_view name) {
  return Pool("MaxPool", {value}, ksize, strides, padding, name);
}
Output MaxPoolGrad(Output orig_input, Output orig_output, Output grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, std::string_view padding, std::string_view name) {
  return Pool("MaxPoolGrad", {orig_input, orig_output, grad}, ksize, strides, padding, name);
}
Output AvgPool(Output value, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               std::string_view padding, std::string_view name) {
  return Pool("AvgPool", {value}, ksize, strides, padding, name);
}
Output AvgPoolGrad(Output orig_input_shape, Output grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, std::string_view padding, std::string_view name) {
  return Pool("AvgPoolGrad", {orig_input_shape, grad}, ksize, strides, padding, name);
}

FusedBatchNormOutputs FusedBatchNorm(Output x, Output scale, Output offset, Output mean, Output variance,
                                     const FusedBatchNormOptions& options, std::string_view name) {
  if (!options.is_training && (!mean || !variance)) {
    InvalidArgument("FusedBatchNorm '", name, "' for inference needs a mean and a variance");
  }
  // TF raises epsilon to cuDNN's minimum; do the same so results match.
  const float epsilon = std::max(options.epsilon, 1.001e-5f);
  // As tf.nn.fused_batch_norm: training without statistics feeds empty constants.
  if (!mean) mean = Const(Tensor(scale.dtype(), TensorShape({0})), "Const");
  if (!variance) variance = Const(Tensor(scale.dtype(), TensorShape({0})), "Const");
  Operation op = NodeBuilder("FusedBatchNormV3", name)
                     .Input(x)
                     .Input(scale)
                     .Input(offset)
                     .Input(mean)
                     .Input(variance)
                     .Attr("epsilon", epsilon)
                     .Attr("is_training", options.is_training)
                     .Finalize();
  return {op.output(0), op.output(1), op.output(2), op};
}

}  // namespace ops
}  // namespace flowtrain
