#include "flowtrain/summary/summary.h"

#include <cctype>
#include <optional>

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/summary_ops.h"

namespace flowtrain::summary {
namespace {

Graph& GraphOf(const Output& tensor, std::string_view what) {
  if (!tensor) InvalidArgument(what, ": the tensor to summarize is an empty Output");
  return *tensor.graph();
}

// A constant input of the summary op, built in `graph` under the current name scope.
Output ConstIn(Graph& graph, const Tensor& value, std::string_view name) {
  return NodeBuilder("Const", name)
      .Graph(&graph)
      .Attr("value", value)
      .Attr("dtype", value.dtype())
      .Finalize();
}

// TF's summary_scope: the cleaned name (prefixed by the family) becomes a unique name
// scope; the tag is that scope, the op takes its name.
class SummaryScope {
 public:
  SummaryScope(Graph& graph, std::string_view name, const std::string& family, std::string_view what) {
    const std::string clean_name = CleanTag(name);
    if (clean_name.empty()) InvalidArgument(what, ": the summary name is empty");
    const std::string clean_family = family.empty() ? std::string() : CleanTag(family);
    const std::string base = clean_family.empty() ? clean_name : StrCat(clean_family, "/", clean_name);
    scope_.emplace(graph, base);
    tag_ = clean_family.empty() ? scope_->op_name() : StrCat(clean_family, "/", scope_->op_name());
  }
  const std::string& tag() const { return tag_; }
  const std::string& op_name() const { return scope_->op_name(); }
  void Exit() { scope_->Exit(); }

 private:
  std::optional<OpNameScope> scope_;
  std::string tag_;
};

void Collect(const Output& summary, const std::optional<std::vector<std::string>>& collections,
             const std::vector<std::string>& defaults) {
  for (const std::string& key : collections ? *collections : defaults) {
    summary.graph()->AddToCollection(key, summary);
  }
}

const std::vector<std::string>& DefaultCollections() {
  static const std::vector<std::string> keys{GraphKeys::kSummaries};
  return keys;
}

// Builds `op_type` named after the scope, with the given inputs, and renames nothing else.
Output FinishSummary(SummaryScope& scope, NodeBuilder builder,
                     const std::optional<std::vector<std::string>>& collections) {
  scope.Exit();
  Output out = builder.Finalize();
  Collect(out, collections, DefaultCollections());
  return out;
}

}  // namespace

std::string CleanTag(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    // Bytes of multi-byte UTF-8 characters are kept: Python's \w matches Unicode letters.
    const bool ok = std::isalnum(c) || c == '_' || c == '-' || c == '/' || c == '.' || c >= 0x80;
    out.push_back(ok ? ch : '_');
  }
  const size_t start = out.find_first_not_of('/');
  out.erase(0, start == std::string::npos ? out.size() : start);
  if (out != name) {
    FT_LOG(INFO) << "Summary name " << std::string(name) << " is illegal; using " << out << " instead.";
  }
  return out;
}

Output Scalar(std::string_view name, Output tensor, const SummaryOptions& options) {
  Graph& g = GraphOf(tensor, "summary::Scalar");
  SummaryScope scope(g, name, options.family, "summary::Scalar");
  Output tags = ConstIn(g, Tensor::Scalar<std::string>(scope.tag()), "tags");
  return FinishSummary(
      scope, std::move(NodeBuilder("ScalarSummary", scope.op_name()).ExactName().Input(tags).Input(tensor)),
      options.collections);
}

Output Histogram(std::string_view name, Output values, const SummaryOptions& options) {
  Graph& g = GraphOf(values, "summary::Histogram");
  SummaryScope scope(g, name, options.family, "summary::Histogram");
  Output tag = ConstIn(g, Tensor::Scalar<std::string>(scope.tag()), "tag");
  return FinishSummary(
      scope, std::move(NodeBuilder("HistogramSummary", scope.op_name()).ExactName().Input(tag).Input(values)),
      options.collections);
}

Output Image(std::string_view name, Output tensor, const MediaOptions& options) {
  Graph& g = GraphOf(tensor, "summary::Image");
  if (options.max_outputs < 1) {
    InvalidArgument("summary::Image: max_outputs must be >= 1, got ", options.max_outputs);
  }
  SummaryScope scope(g, name, options.family, "summary::Image");
  Output tag = ConstIn(g, Tensor::Scalar<std::string>(scope.tag()), "tag");
  return FinishSummary(scope,
                       std::move(NodeBuilder("ImageSummary", scope.op_name())
                                     .ExactName()
                                     .Input(tag)
                                     .Input(tensor)
                                     .Attr("max_images", options.max_outputs)
                                     .Attr("bad_color", ops::DefaultImageSummaryBadColor())),
                       options.collections);
}

namespace {

// tf.summary.audio converts a Python number rate into a constant "sample_rate" inside the
// summary's scope; a tensor rate is used as is.
Output AudioImpl(std::string_view name, Output tensor, std::optional<float> rate_value, Output rate,
                 const MediaOptions& options) {
  Graph& g = GraphOf(tensor, "summary::Audio");
  if (options.max_outputs < 1) {
    InvalidArgument("summary::Audio: max_outputs must be >= 1, got ", options.max_outputs);
  }
  SummaryScope scope(g, name, options.family, "summary::Audio");
  Output tag = ConstIn(g, Tensor::Scalar<std::string>(scope.tag()), "tag");
  if (rate_value) rate = ConstIn(g, Tensor::Scalar<float>(*rate_value), "sample_rate");
  if (!rate) InvalidArgument("summary::Audio: sample_rate is an empty Output");
  return FinishSummary(scope,
                       std::move(NodeBuilder("AudioSummaryV2", scope.op_name())
                                     .ExactName()
                                     .Input(tag)
                                     .Input(tensor)
                                     .Input(rate)
                                     .Attr("max_outputs", options.max_outputs)),
                       options.collections);
}

}  // namespace

Output Audio(std::string_view name, Output tensor, float sample_rate, const MediaOptions& options) {
  return AudioImpl(name, tensor, sample_rate, Output(), options);
}

Output Audio(std::string_view name, Output tensor, Output sample_rate, const MediaOptions& options) {
  return AudioImpl(name, tensor, std::nullopt, sample_rate, options);
}

Output TensorSummary(std::string_view name, Output tensor, const tensorflow::SummaryMetadata& metadata,
                     const SummaryOptions& options) {
  Graph& g = GraphOf(tensor, "summary::TensorSummary");
  SummaryScope scope(g, name, options.family, "summary::TensorSummary");
  Output tag = ConstIn(g, Tensor::Scalar<std::string>(scope.tag()), "tag");
  Output serialized =
      ConstIn(g, Tensor::Scalar<std::string>(metadata.SerializeAsString()), "serialized_summary_metadata");
  return FinishSummary(scope,
                       std::move(NodeBuilder("TensorSummaryV2", scope.op_name())
                                     .ExactName()
                                     .Input(tag)
                                     .Input(tensor)
                                     .Input(serialized)),
                       options.collections);
}

Output Text(std::string_view name, Output tensor, const SummaryOptions& options) {
  if (tensor && tensor.dtype() != DT_STRING) {
    InvalidArgument("Expected tensor ", tensor.name(), " to have dtype string, got ",
                    DataTypeString(tensor.dtype()));
  }
  tensorflow::SummaryMetadata metadata;
  metadata.mutable_plugin_data()->set_plugin_name("text");
  return TensorSummary(name, tensor, metadata, options);
}

Output Merge(const std::vector<Output>& inputs, const std::vector<std::string>& collections,
             std::string_view name) {
  if (inputs.empty()) InvalidArgument("summary::Merge needs at least one summary");
  for (const Output& input : inputs) {
    if (!input) InvalidArgument("summary::Merge: an input is an empty Output");
  }
  Graph& g = *inputs.front().graph();
  // TF: `with name_scope(name, "Merge", inputs): merge_summary(inputs, name=name)`.
  ScopeGuard scope = g.NameScope(name.empty() ? std::string_view("Merge") : name);
  Output merged = ops::MergeSummary(inputs, name.empty() ? std::string_view("MergeSummary") : name);
  scope.Exit();
  for (const std::string& key : collections) g.AddToCollection(key, merged);
  return merged;
}

Output MergeAll(std::string_view key, Graph* graph, std::string_view name) {
  Graph& g = graph != nullptr ? *graph : GetDefaultGraph();
  const std::vector<Output> summaries = g.GetCollection<Output>(key);
  if (summaries.empty()) return Output();
  return Merge(summaries, {}, name);
}

}  // namespace flowtrain::summary
