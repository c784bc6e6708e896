#include "flowtrain/ops/summary_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/op_registry.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/gradients.h"

namespace flowtrain {
namespace {

// TF's `realnumbertypes`.
#define FT_REAL_NUMBER_TYPES \
  "{float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, uint64}"

// TF's shape functions for these ops only say "scalar output"; the checks below catch at
// build time, when shapes are known, what the kernels would reject at run time.
void ScalarSummaryShape(InferenceContext& c) {
  const PartialTensorShape& tags = c.input(0);
  const PartialTensorShape& values = c.input(1);
  if (tags.IsFullyDefined() && values.IsFullyDefined() && !tags.IsIdenticalTo(values) &&
      !(tags.num_elements() == 1 && values.num_elements() == 1)) {
    InvalidArgument("tags and values not the same shape: ", tags.DebugString(), " != ", values.DebugString());
  }
  c.set_output(0, PartialTensorShape({}));
}

void TagThenScalarShape(InferenceContext& c) {
  c.WithRank(c.input(0), 0);
  c.set_output(0, PartialTensorShape({}));
}

void ImageSummaryShape(InferenceContext& c) {
  c.WithRank(c.input(0), 0);
  const PartialTensorShape images = c.WithRank(c.input(1), 4);
  if (!images.unknown_rank()) {
    const int64_t depth = images.dim_size(3);
    if (depth != -1 && depth != 1 && depth != 3 && depth != 4) {
      InvalidArgument("Tensor must be 4-D with last dim 1, 3, or 4, not ", images.DebugString());
    }
  }
  c.set_output(0, PartialTensorShape({}));
}

void AudioSummaryShape(InferenceContext& c) {
  c.WithRank(c.input(0), 0);
  const PartialTensorShape audio = c.WithRankAtLeast(c.input(1), 2);
  c.WithRankAtMost(audio, 3);
  c.WithRank(c.input(2), 0);
  c.set_output(0, PartialTensorShape({}));
}

void TensorSummaryShape(InferenceContext& c) {
  c.WithRank(c.input(0), 0);
  c.WithRank(c.input(2), 0);
  c.set_output(0, PartialTensorShape({}));
}

}  // namespace

FT_REGISTER_OP("ScalarSummary")
    .Input("tags: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: " FT_REAL_NUMBER_TYPES)
    .SetShapeFn(ScalarSummaryShape);

FT_REGISTER_OP("HistogramSummary")
    .Input("tag: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: " FT_REAL_NUMBER_TYPES " = DT_FLOAT")
    .SetShapeFn(TagThenScalarShape);

// TF's default for bad_color ([255, 0, 0, 255] uint8) is filled in by the builder.
FT_REGISTER_OP("ImageSummary")
    .Input("tag: string")
    .Input("tensor: T")
    .Output("summary: string")
    .Attr("max_images: int >= 1 = 3")
    .Attr("T: {uint8, float, half, double} = DT_FLOAT")
    .Attr("bad_color: tensor")
    .SetShapeFn(ImageSummaryShape);

FT_REGISTER_OP("AudioSummaryV2")
    .Input("tag: string")
    .Input("tensor: float")
    .Input("sample_rate: float")
    .Output("summary: string")
    .Attr("max_outputs: int >= 1 = 3")
    .SetShapeFn(AudioSummaryShape);

FT_REGISTER_OP("TensorSummaryV2")
    .Input("tag: string")
    .Input("tensor: T")
    .Input("serialized_summary_metadata: string")
    .Output("summary: string")
    .Attr("T: type")
    .SetShapeFn(TensorSummaryShape);

FT_REGISTER_OP("MergeSummary")
    .Input("inputs: N * string")
    .Output("summary: string")
    .Attr("N: int >= 1")
    .SetShapeFn(shape_fns::ScalarShape);

#undef FT_REAL_NUMBER_TYPES

// Summaries are outputs for people, not part of the model: nothing flows back through them.
FT_REGISTER_NO_GRADIENT("ScalarSummary");
FT_REGISTER_NO_GRADIENT("HistogramSummary");
FT_REGISTER_NO_GRADIENT("ImageSummary");
FT_REGISTER_NO_GRADIENT("AudioSummaryV2");
FT_REGISTER_NO_GRADIENT("TensorSummaryV2");
FT_REGISTER_NO_GRADIENT("MergeSummary");

namespace ops {

Output ScalarSummary(Output tags, Output values, std::string_view name) {
  return NodeBuilder("ScalarSummary", name).Input(tags).Input(values).Finalize();
}

Output HistogramSummary(Output tag, Output values, std::string_view name) {
  return NodeBuilder("HistogramSummary", name).Input(tag).Input(values).Finalize();
}

Tensor DefaultImageSummaryBadColor() { return Tensor::FromVector<uint8_t>({255, 0, 0, 255}); }

Output ImageSummary(Output tag, Output tensor, int64_t max_images, const Tensor& bad_color,
                    std::string_view name) {
  if (max_images < 1) InvalidArgument("ImageSummary: max_images must be >= 1, got ", max_images);
  if (bad_color.dtype() != DT_UINT8 || bad_color.shape().dims() != 1) {
    InvalidArgument("ImageSummary: bad_color must be a uint8 vector, got ", bad_color.DebugString());
  }
  return NodeBuilder("ImageSummary", name)
      .Input(tag)
      .Input(tensor)
      .Attr("max_images", max_images)
      .Attr("bad_color", bad_color)
      .Finalize();
}

Output AudioSummaryV2(Output tag, Output tensor, Output sample_rate, int64_t max_outputs,
                      std::string_view name) {
  if (max_outputs < 1) {
    InvalidArgument("AudioSummaryV2: max_outputs must be >= 1, got ", max_outputs);
  }
  return NodeBuilder("AudioSummaryV2", name)
      .Input(tag)
      .Input(tensor)
      .Input(sample_rate)
      .Attr("max_outputs", max_outputs)
      .Finalize();
}

Output TensorSummaryV2(Output tag, Output tensor, Output serialized_summary_metadata, std::string_view name) {
  return NodeBuilder("TensorSummaryV2", name)
      .Input(tag)
      .Input(tensor)
      .Input(serialized_summary_metadata)
      .Finalize();
}

Output MergeSummary(const std::vector<Output>& inputs, std::string_view name) {
  if (inputs.empty()) InvalidArgument("MergeSummary needs at least one input");
  return NodeBuilder("MergeSummary", name).Input(inputs).Finalize();
}

}  // namespace ops
}  // namespace flowtrain
