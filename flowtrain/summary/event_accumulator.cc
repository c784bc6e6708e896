#include "flowtrain/summary/event_accumulator.h"

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain::summary {
namespace {

// "brain.Event:2" -> 2; -1 when the text after the last "brain.Event:" is not a number.
double ParseFileVersion(const std::string& file_version) {
  const std::string prefix = "brain.Event:";
  const size_t at = file_version.rfind(prefix);
  const std::string number = at == std::string::npos ? file_version : file_version.substr(at + prefix.size());
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size()) {
    FT_LOG(WARNING) << "Invalid event.proto file_version: " << file_version;
    return -1;
  }
  return v;
}

// TensorBoard's migration of a TF1 HistogramProto: drop the empty buckets at both ends and
// use min/max as the outer edges (instead of ±DBL_MAX or far-away limits).
std::vector<HistogramBucket> BucketsFromProto(const tensorflow::HistogramProto& histo) {
  const int n = std::min(histo.bucket_size(), histo.bucket_limit_size());
  int start = 0;
  while (start < n && histo.bucket(start) <= 0) ++start;
  int end = n - 1;
  while (end >= 0 && histo.bucket(end) <= 0) --end;
  std::vector<HistogramBucket> buckets;
  for (int i = start; i <= end; ++i) {
    const double left = i == start ? histo.min() : histo.bucket_limit(i - 1);
    const double right = i == end ? histo.max() : histo.bucket_limit(i);
    buckets.push_back({left, right, histo.bucket(i)});
  }
  return buckets;
}

// A histogram-plugin tensor with more rows than this stays a plain tensor event. TensorFlow's
// summaries write 30 buckets, a TF1 HistogramProto about 1,500; the bound keeps a tiny hostile
// event from filling gigabytes of buckets out of one repeated value.
constexpr int64_t kMaxHistogramBuckets = 1 << 16;

// The single number of a scalar tensor value, if it is one.
std::optional<double> ScalarFromTensor(const tensorflow::TensorProto& proto) {
  Tensor t;
  try {
    // The shape first: a few bytes of event can ask for a fill of gigabytes that is not a scalar.
    if (ShapeFromProto(proto.tensor_shape()).num_elements() != 1) return std::nullopt;
    t = TensorFromProto(proto);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (t.NumElements() != 1 || t.dtype() == DT_STRING) return std::nullopt;
  if (t.dtype() == DT_BOOL) return t.flat<bool>()[0] ? 1.0 : 0.0;
  std::optional<double> out;
  try {
    DispatchNumericType(t.dtype(), "scalar summary",
                        [&]<typename T>() { out = static_cast<double>(t.flat<T>()[0]); });
  } catch (const Error&) {
    return std::nullopt;
  }
  return out;
}

template <typename T>
std::vector<std::string> Keys(const std::map<std::string, std::vector<T>>& series) {
  std::vector<std::string> keys;
  for (const auto& [tag, values] : series) {
    if (!values.empty()) keys.push_back(tag);
  }
  return keys;
}

template <typename T>
const std::vector<T>& Find(const std::map<std::string, std::vector<T>>& series, const std::string& tag,
                           std::string_view kind) {
  auto it = series.find(tag);
  if (it == series.end()) NotFound("No ", kind, " with tag '", tag, "'");
  return it->second;
}

template <typename T>
int64_t FilterSeries(std::vector<T>& values, int64_t step) {
  const size_t before = values.size();
  std::erase_if(values, [step](const T& v) { return v.step >= step; });
  return static_cast<int64_t>(before - values.size());
}

}  // namespace

EventAccumulator::EventAccumulator(std::string path, bool purge_orphaned_data)
    : path_(std::move(path)), purge_orphaned_data_(purge_orphaned_data) {}
EventAccumulator::~EventAccumulator() = default;
EventAccumulator::EventAccumulator(EventAccumulator&&) noexcept = default;
EventAccumulator& EventAccumulator::operator=(EventAccumulator&&) noexcept = default;

std::vector<std::string> EventAccumulator::files() const {
  std::vector<std::string> out;
  for (const auto& [file, reader] : readers_) out.push_back(file);
  return out;
}

void EventAccumulator::Reload() {
  std::error_code ec;
  std::vector<std::string> files;
  if (std::filesystem::is_regular_file(path_, ec)) {
    files.push_back(path_);
  } else {
    files = io::ListEventFiles(path_);  // NotFound if missing
  }
  tensorflow::Event event;
  for (const std::string& file : files) {  // sorted by name = written order
    if (IsCorrupt(file)) continue;
    auto& reader = readers_[file];
    for (;;) {
      const uint64_t offset = reader == nullptr ? 0 : reader->offset();
      bool read = false;
      try {
        if (reader == nullptr) reader = std::make_unique<io::EventFileReader>(file, /*follow=*/true);
        read = reader->ReadEvent(&event);
      } catch (const Error& e) {  // a corrupt record, or a file that cannot be opened or read
        corrupt_records_.push_back({file, offset, e.what()});
        break;
      }
      if (!read) break;
      ProcessEvent(event);
    }
  }
}

bool EventAccumulator::IsCorrupt(const std::string& file) const {
  return std::any_of(corrupt_records_.begin(), corrupt_records_.end(),
                     [&](const CorruptRecord& r) { return r.file == file; });
}

std::vector<PartialRecord> EventAccumulator::partial_records() const {
  std::vector<PartialRecord> out;
  for (const auto& [file, reader] : readers_) {
    if (reader != nullptr && !IsCorrupt(file) && reader->partial_bytes() > 0) {
      out.push_back({file, reader->offset(), reader->partial_bytes()});
    }
  }
  return out;
}

void EventAccumulator::ProcessEvent(const tensorflow::Event& event) {
  if (!seen_event_) {
    seen_event_ = true;
    first_event_timestamp_ = event.wall_time();
  }
  if (event.what_case() == tensorflow::Event::kFileVersion) {
    const double version = ParseFileVersion(event.file_version());
    if (file_version_ != 0 && file_version_ != version) {
      FT_LOG(WARNING) << "Found new file_version for event.proto. This will affect purging logic "
                         "for TensorFlow restarts. Old: "
                      << file_version_ << " New: " << version;
    }
    file_version_ = version;
  }

  if (purge_orphaned_data_) {
    if (file_version_ >= 2) {
      // A restart: whatever the crashed run logged at or after the restart step is orphaned.
      if (event.has_session_log() && event.session_log().status() == tensorflow::SessionLog::START) {
        Purge(event.step(), nullptr);
      }
    } else if (event.step() < most_recent_step_ && event.has_summary()) {
      std::vector<std::string> tags;
      for (const auto& value : event.summary().value()) tags.push_back(value.tag());
      Purge(event.step(), &tags);
    } else {
      most_recent_step_ = event.step();
    }
  }

  switch (event.what_case()) {
    case tensorflow::Event::kGraphDef:
      if (!graph_def_.empty() && !graph_warning_logged_) {
        graph_warning_logged_ = true;
        FT_LOG(WARNING) << "Found more than one graph event per run, or there was a metagraph "
                           "containing a graph_def, as well as one or more graph events. "
                           "Overwriting the graph with the newest event.";
      }
      graph_def_ = event.graph_def();
      break;
    case tensorflow::Event::kMetaGraphDef:
      meta_graph_def_ = event.meta_graph_def();
      break;
    case tensorflow::Event::kTaggedRunMetadata:
      run_metadata_[event.tagged_run_metadata().tag()] = event.tagged_run_metadata().run_metadata();
      break;
    case tensorflow::Event::kSessionLog:
      session_logs_.push_back({event.step(), event.wall_time(), event.session_log()});
      break;
    case tensorflow::Event::kSummary:
      for (const auto& value : event.summary().value()) {
        ProcessValue(value, event.step(), event.wall_time());
      }
      break;
    default:
      break;
  }
}

void EventAccumulator::ProcessValue(const tensorflow::Summary::Value& value, int64_t step, double wall_time) {
  // Old-style tensor summaries have no tag, only the node name.
  std::string tag = value.tag();
  if (tag.empty() && value.value_case() == tensorflow::Summary::Value::kTensor) {
    tag = value.node_name();
  }
  if (value.has_metadata()) metadata_.try_emplace(tag, value.metadata());
  switch (value.value_case()) {
    case tensorflow::Summary::Value::kSimpleValue:
      scalars_[tag].push_back({step, wall_time, value.simple_value()});
      break;
    case tensorflow::Summary::Value::kHisto: {
      const auto& h = value.histo();
      histograms_[tag].push_back(
          {step, wall_time, h.min(), h.max(), h.num(), h.sum(), h.sum_squares(), BucketsFromProto(h)});
      break;
    }
    case tensorflow::Summary::Value::kImage: {
      const auto& image = value.image();
      images_[tag].push_back(
          {step, wall_time, image.width(), image.height(), image.colorspace(), image.encoded_image_string()});
      break;
    }
    case tensorflow::Summary::Value::kAudio: {
      const auto& audio = value.audio();
      audio_[tag].push_back({step, wall_time, audio.sample_rate(), audio.num_channels(),
                             audio.length_frames(), audio.content_type(), audio.encoded_audio_string()});
      break;
    }
    case tensorflow::Summary::Value::kTensor: {
      auto meta = metadata_.find(tag);
      const std::string plugin =
          meta == metadata_.end() ? std::string() : meta->second.plugin_data().plugin_name();
      if (plugin == "scalars") {
        if (std::optional<double> v = ScalarFromTensor(value.tensor())) {
          scalars_[tag].push_back({step, wall_time, *v});
          break;
        }
      } else if (plugin == "histograms") {
        Tensor t;
        try {
          // Dtype and shape first, as for scalars: a few bytes can ask for a [k, 3] fill of
          // gigabytes.
          const tensorflow::TensorProto& proto = value.tensor();
          const TensorShape shape = ShapeFromProto(proto.tensor_shape());
          if ((proto.dtype() == tensorflow::DT_FLOAT || proto.dtype() == tensorflow::DT_DOUBLE) &&
              shape.dims() == 2 && shape.dim_size(1) == 3 && shape.dim_size(0) <= kMaxHistogramBuckets) {
            t = TensorFromProto(proto);
          }
        } catch (const Error&) {
        }
        if (t.IsInitialized()) {
          HistogramEvent h{step, wall_time};
          for (int64_t i = 0; i < t.dim_size(0); ++i) {
            auto at = [&](int64_t j) {
              return t.dtype() == DT_FLOAT ? double{t.flat<float>()[i * 3 + j]} : t.flat<double>()[i * 3 + j];
            };
            h.buckets.push_back({at(0), at(1), at(2)});
            h.num += at(2);
          }
          if (!h.buckets.empty()) {
            h.min = h.buckets.front().left;
            h.max = h.buckets.back().right;
          }
          histograms_[tag].push_back(std::move(h));
          break;
        }
      }
      tensors_[tag].push_back({step, wall_time, value.tensor()});
      break;
    }
    default:
      break;
  }
}

void EventAccumulator::Purge(int64_t step, const std::vector<std::string>* only_tags) {
  int64_t expired = 0;
  auto purge_all = [&](auto& series) {
    for (auto& [tag, values] : series) {
      if (only_tags == nullptr || std::find(only_tags->begin(), only_tags->end(), tag) != only_tags->end()) {
        expired += FilterSeries(values, step);
      }
    }
  };
  purge_all(scalars_);
  purge_all(histograms_);
  purge_all(images_);
  purge_all(audio_);
  purge_all(tensors_);
  if (expired > 0) {
    FT_LOG(WARNING) << "Detected out of order event.step likely caused by a TensorFlow restart. "
                       "Purging "
                    << expired << " expired values with step >= " << step << " in " << path_;
  }
  purged_ += expired;
}

RunTags EventAccumulator::GetTags() const {
  RunTags tags;
  tags.scalars = Keys(scalars_);
  tags.histograms = Keys(histograms_);
  tags.images = Keys(images_);
  tags.audio = Keys(audio_);
  tags.tensors = Keys(tensors_);
  for (const auto& [tag, bytes] : run_metadata_) tags.run_metadata.push_back(tag);
  tags.graph = !graph_def_.empty();
  tags.meta_graph = !meta_graph_def_.empty();
  return tags;
}

const std::vector<ScalarEvent>& EventAccumulator::Scalars(const std::string& tag) const {
  return Find(scalars_, tag, "scalars");
}
const std::vector<HistogramEvent>& EventAccumulator::Histograms(const std::string& tag) const {
  return Find(histograms_, tag, "histograms");
}
const std::vector<ImageEvent>& EventAccumulator::Images(const std::string& tag) const {
  return Find(images_, tag, "images");
}
const std::vector<AudioEvent>& EventAccumulator::Audio(const std::string& tag) const {
  return Find(audio_, tag, "audio");
}
const std::vector<TensorEvent>& EventAccumulator::Tensors(const std::string& tag) const {
  return Find(tensors_, tag, "tensors");
}

const tensorflow::SummaryMetadata* EventAccumulator::SummaryMetadata(const std::string& tag) const {
  auto it = metadata_.find(tag);
  return it == metadata_.end() ? nullptr : &it->second;
}

std::optional<tensorflow::GraphDef> EventAccumulator::Graph() const {
  tensorflow::GraphDef graph;
  if (!graph_def_.empty()) {
    if (!graph.ParseFromString(graph_def_)) DataLoss("The graph_def event of ", path_, " is corrupt");
    return graph;
  }
  if (!meta_graph_def_.empty()) {
    tensorflow::MetaGraphDef meta;
    if (!meta.ParseFromString(meta_graph_def_)) {
      DataLoss("The meta_graph_def event of ", path_, " is corrupt");
    }
    return meta.graph_def();
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, EventAccumulator>> LoadRuns(const std::string& logdir) {
  std::error_code ec;
  if (!std::filesystem::exists(logdir, ec)) NotFound("Logdir ", logdir, " does not exist");
  std::vector<std::pair<std::string, EventAccumulator>> runs;
  if (std::filesystem::is_regular_file(logdir, ec)) {
    runs.emplace_back(std::filesystem::path(logdir).filename().string(), EventAccumulator(logdir));
  } else {
    for (const io::EventRun& run : io::ListEventRuns(logdir)) {
      runs.emplace_back(run.name, EventAccumulator(run.dir));
    }
  }
  for (auto& [name, accumulator] : runs) accumulator.Reload();
  return runs;
}

}  // namespace flowtrain::summary
