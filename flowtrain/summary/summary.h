// tf.summary.* for graphs: ops that turn tensors into serialized tensorflow.Summary protos,
// named as TF1 names them and collected in the graph's SUMMARIES collection, so MergeAll()
// gathers every summary of a model into one op whose output FileWriter::AddSummary takes.
//
//   summary::Scalar("loss", loss);                  // node "loss", tag "loss"
//   summary::Histogram("weights", w);               // TF's 1551 default buckets
//   summary::Image("inputs", images, {.max_outputs = 4});
//   Output merged = summary::MergeAll();            // empty Output if nothing was collected
//   ...
//   Tensor s = sess.Run({}, {merged})[0];
//   writer.AddSummary(s.scalar<std::string>(), step);
//
// Names follow tf.summary's summary_scope: the name is cleaned (characters other than
// [-/\w.] become '_', leading '/' dropped), a name scope is opened with it (made unique:
// "loss", "loss_1"...), the tag is that scope ("train/loss" inside name scope "train") and the
// summary node takes the scope's name, its constant inputs living under it ("loss/tags").
// With a family, the scope is "<family>/<name>" and the tag "<family>/<scope>".
#ifndef FLOWTRAIN_SUMMARY_SUMMARY_H_
#define FLOWTRAIN_SUMMARY_SUMMARY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/proto/summary.pb.h"

namespace flowtrain::summary {

struct SummaryOptions {
  // Graph collections the op is added to; nullopt means {GraphKeys::kSummaries}.
  std::optional<std::vector<std::string>> collections{};
  // Prefix of the tag and scope, which groups summaries into one TensorBoard tab.
  std::string family{};
};

struct MediaOptions {
  // Most batch elements turned into images/clips.
  int64_t max_outputs = 3;
  std::optional<std::vector<std::string>> collections{};
  std::string family{};
};

// tf.summary.scalar: a ScalarSummary of the real-number scalar `tensor`.
Output Scalar(std::string_view name, Output tensor, const SummaryOptions& options = {});

// tf.summary.histogram: a HistogramSummary of all values of `values`.
Output Histogram(std::string_view name, Output values, const SummaryOptions& options = {});

// tf.summary.image: PNG images of a [batch, height, width, 1|3|4] uint8 or float tensor.
Output Image(std::string_view name, Output tensor, const MediaOptions& options = {});

// tf.summary.audio: WAV clips of a float [batch, frames(, channels)] tensor in [-1, 1].
Output Audio(std::string_view name, Output tensor, float sample_rate, const MediaOptions& options = {});
Output Audio(std::string_view name, Output tensor, Output sample_rate, const MediaOptions& options = {});

// tf.summary.tensor_summary: `tensor` itself, with the given metadata (plugin, description).
Output TensorSummary(std::string_view name, Output tensor, const tensorflow::SummaryMetadata& metadata = {},
                     const SummaryOptions& options = {});

// tf.summary.text (TF 1.15): a TensorSummaryV2 of a string tensor for the "text" plugin.
Output Text(std::string_view name, Output tensor, const SummaryOptions& options = {});

// tf.summary.merge: one MergeSummary (node "Merge/MergeSummary" by default) of `inputs`.
// Added to `collections` (none by default).
Output Merge(const std::vector<Output>& inputs, const std::vector<std::string>& collections = {},
             std::string_view name = "");

// tf.summary.merge_all: merges every summary in collection `key` of `graph` (the default
// graph if null). An empty Output when the collection is empty (TF returns None).
Output MergeAll(std::string_view key = GraphKeys::kSummaries, Graph* graph = nullptr,
                std::string_view name = "");

// TF's clean_tag: characters outside [-/A-Za-z0-9_.] become '_', leading '/' are dropped.
std::string CleanTag(std::string_view name);

}  // namespace flowtrain::summary

#endif  // FLOWTRAIN_SUMMARY_SUMMARY_H_
