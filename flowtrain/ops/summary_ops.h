// TF1's summary ops (logging_ops in TF): each outputs a serialized tensorflow.Summary proto as
// a DT_STRING scalar, ready for FileWriter::AddSummary. These are the raw ops with their TF
// names and attrs; most code uses the summary::Scalar/Histogram/Image/... helpers of
// flowtrain/summary/summary.h, which name the nodes and tags as tf.summary.* does and add the
// ops to the SUMMARIES collection.
//
//   Output s = ops::ScalarSummary(ops::Const("loss"), loss);             // one simple_value
//   Output h = ops::HistogramSummary(ops::Const("w"), w);                 // TF's 1551 buckets
//   Output all = ops::MergeSummary({s, h});                               // one Summary
//   writer.AddSummary(sess.Run({}, {all})[0].scalar<std::string>(), step);
#ifndef FLOWTRAIN_OPS_SUMMARY_OPS_H_
#define FLOWTRAIN_OPS_SUMMARY_OPS_H_

#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

// One Summary.Value{tag, simple_value} per element; `tags` and `values` have the same shape.
Output ScalarSummary(Output tags, Output values, std::string_view name = "ScalarSummary");

// A histogram of every element of `values` under the scalar `tag`, with TF's default bucket
// limits and encoding. Non-finite values are InvalidArgument at run time.
Output HistogramSummary(Output tag, Output values, std::string_view name = "HistogramSummary");

// TF's default ImageSummary bad_color: opaque red, used for pixels with non-finite values.
Tensor DefaultImageSummaryBadColor();

// PNG images from a [batch, height, width, channels] tensor (channels 1, 3 or 4; uint8 kept
// as is, float/half/double rescaled per image as TF does). Tags are "<tag>/image/<i>" when
// max_images > 1, else "<tag>/image"; at most max_images images are written.
Output ImageSummary(Output tag, Output tensor, int64_t max_images = 3,
                    const Tensor& bad_color = DefaultImageSummaryBadColor(),
                    std::string_view name = "ImageSummary");

// 16-bit PCM WAV clips from a float [batch, frames] or [batch, frames, channels] tensor of
// samples in [-1, 1], at the scalar float `sample_rate` (Hz). Tags as ImageSummary's with
// "/audio".
Output AudioSummaryV2(Output tag, Output tensor, Output sample_rate, int64_t max_outputs = 3,
                      std::string_view name = "AudioSummaryV2");

// A Summary.Value holding `tensor` itself, with the given serialized SummaryMetadata (which
// names the TensorBoard plugin that shows it, e.g. "text").
Output TensorSummaryV2(Output tag, Output tensor, Output serialized_summary_metadata,
                       std::string_view name = "TensorSummaryV2");

// The values of all `inputs` (serialized Summary protos, any shape) in one Summary.
// Two values with the same non-empty tag are InvalidArgument at run time, as in TF.
Output MergeSummary(const std::vector<Output>& inputs, std::string_view name = "MergeSummary");

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_SUMMARY_OPS_H_
