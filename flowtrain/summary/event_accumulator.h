// Loads a run's event files and keeps what TensorBoard would show for it: scalar series,
// histograms, images, audio, other tensor summaries, the graph and the session logs. The
// reader behind `flowtrain events` and tests that check what a training run logged.
//
//   EventAccumulator run("runs/digits");            // a run directory or one event file
//   run.Reload();                                   // reads what was written since last time
//   for (const std::string& tag : run.GetTags().scalars) {
//     const std::vector<ScalarEvent>& series = run.Scalars(tag);
//     std::printf("%s: %g at step %lld\n", tag.c_str(), series.back().value,
//                 static_cast<long long>(series.back().step));
//   }
//
// Interpretation follows TensorBoard's EventAccumulator:
//  * scalars come from TF1 `simple_value`s and from tensor values whose tag's first metadata
//    names the "scalars" plugin (TF2's tf.summary.scalar); histograms from `histo` values
//    (converted to TensorBoard's [left, right, count] buckets: empty edge buckets dropped,
//    ±DBL_MAX edges replaced by min/max) and from "histograms" plugin tensors of shape [k, 3]
//    with k <= 65536; other tensor values are kept as tensors (e.g. "text");
//  * only the first metadata seen per tag counts;
//  * restarts: with file_version >= 2 ("brain.Event:2"), a SessionLog START at step S drops
//    every loaded value with step >= S (what a crashed run logged past its last checkpoint);
//    without a file version, a summary whose step is below the latest step seen drops the
//    values of its tags with step >= its step.
// Every value is kept (TensorBoard samples long series down; this reader does not).
#ifndef FLOWTRAIN_SUMMARY_EVENT_ACCUMULATOR_H_
#define FLOWTRAIN_SUMMARY_EVENT_ACCUMULATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/proto/event.pb.h"
#include "flowtrain/proto/graph.pb.h"
#include "flowtrain/proto/summary.pb.h"

namespace flowtrain::summary {

struct ScalarEvent {
  int64_t step = 0;
  double wall_time = 0;
  double value = 0;
};

struct HistogramBucket {
  double left = 0;
  double right = 0;
  double count = 0;
};

struct HistogramEvent {
  int64_t step = 0;
  double wall_time = 0;
  // From a TF1 HistogramProto; for plugin tensors only num (and min/max from the edges).
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<HistogramBucket> buckets;  // TensorBoard's [left, right, count] form
};

struct ImageEvent {
  int64_t step = 0;
  double wall_time = 0;
  int width = 0, height = 0, colorspace = 0;
  std::string encoded_image;  // PNG from TF's ImageSummary
};

struct AudioEvent {
  int64_t step = 0;
  double wall_time = 0;
  float sample_rate = 0;
  int64_t num_channels = 0, length_frames = 0;
  std::string content_type;
  std::string encoded_audio;
};

struct TensorEvent {
  int64_t step = 0;
  double wall_time = 0;
  tensorflow::TensorProto tensor;
};

struct SessionLogEvent {
  int64_t step = 0;
  double wall_time = 0;
  tensorflow::SessionLog log;
};

// A record of an event file that could not be read (a checksum mismatch, a record that is not
// an Event, a file that cannot be read at all). Reading stops there for that file only.
struct CorruptRecord {
  std::string file;
  uint64_t offset = 0;  // byte offset where the unreadable record starts
  std::string message;  // the reader's error, which names the file and offset too
};

// An event file whose last record is unfinished: its writer is still running or was killed
// while writing it. Not an error; a later Reload picks the record up once it is complete.
struct PartialRecord {
  std::string file;
  uint64_t offset = 0;  // byte offset where the unfinished record starts
  uint64_t bytes = 0;   // how much of it is in the file so far
};

// Tag lists per kind, each sorted.
struct RunTags {
  std::vector<std::string> scalars, histograms, images, audio, tensors, run_metadata;
  bool graph = false;       // a graph_def event was seen
  bool meta_graph = false;  // a meta_graph_def event was seen
};

class EventAccumulator {
 public:
  // `path` is a run directory (its event files, by name) or a single event file.
  explicit EventAccumulator(std::string path, bool purge_orphaned_data = true);
  ~EventAccumulator();
  EventAccumulator(EventAccumulator&&) noexcept;
  EventAccumulator& operator=(EventAccumulator&&) noexcept;

  // Reads the events added since the last call (new files, and growth of old ones; a partial
  // last record waits for the next call). A corrupt record does not throw: the events before
  // it stay loaded, the file is not read past it (now or later) and the record is listed in
  // corrupt_records(); the other files are read as usual.
  void Reload();
  // Interprets one event as if read from a file (tests, other sources).
  void ProcessEvent(const tensorflow::Event& event);

  RunTags GetTags() const;
  // Each throws NotFound for a tag of another kind or none.
  const std::vector<ScalarEvent>& Scalars(const std::string& tag) const;
  const std::vector<HistogramEvent>& Histograms(const std::string& tag) const;
  const std::vector<ImageEvent>& Images(const std::string& tag) const;
  const std::vector<AudioEvent>& Audio(const std::string& tag) const;
  const std::vector<TensorEvent>& Tensors(const std::string& tag) const;
  // The first metadata seen for `tag`, or null.
  const tensorflow::SummaryMetadata* SummaryMetadata(const std::string& tag) const;

  // The graph: the newest graph_def, else the graph of the newest meta_graph_def.
  std::optional<tensorflow::GraphDef> Graph() const;
  const std::vector<SessionLogEvent>& SessionLogs() const { return session_logs_; }
  // Number after "brain.Event:" of the last file version seen (-1 if unparseable, 0 if none).
  double file_version() const { return file_version_; }
  // Wall time of the first event read, 0 if none.
  double first_event_timestamp() const { return first_event_timestamp_; }
  // Files read so far, in order.
  std::vector<std::string> files() const;
  // Values dropped by restart handling so far.
  int64_t purged_count() const { return purged_; }
  // The unreadable records met so far, at most one per file, in the order found.
  const std::vector<CorruptRecord>& corrupt_records() const { return corrupt_records_; }
  // The files whose last record was unfinished at the latest Reload, by file name.
  std::vector<PartialRecord> partial_records() const;

  const std::string& path() const { return path_; }

 private:
  template <typename T>
  using Series = std::map<std::string, std::vector<T>>;

  void ProcessValue(const tensorflow::Summary::Value& value, int64_t step, double wall_time);
  void Purge(int64_t step, const std::vector<std::string>* only_tags);
  bool IsCorrupt(const std::string& file) const;

  std::string path_;
  bool purge_orphaned_data_;
  std::map<std::string, std::unique_ptr<io::EventFileReader>> readers_;
  std::vector<CorruptRecord> corrupt_records_;

  double file_version_ = 0;
  double first_event_timestamp_ = 0;
  bool seen_event_ = false;
  bool graph_warning_logged_ = false;
  int64_t most_recent_step_ = -1;
  int64_t purged_ = 0;

  Series<ScalarEvent> scalars_;
  Series<HistogramEvent> histograms_;
  Series<ImageEvent> images_;
  Series<AudioEvent> audio_;
  Series<TensorEvent> tensors_;
  std::map<std::string, tensorflow::SummaryMetadata> metadata_;
  std::map<std::string, std::string> run_metadata_;  // tag -> serialized RunMetadata
  std::string graph_def_;                            // serialized, newest
  std::string meta_graph_def_;                       // serialized, newest
  std::vector<SessionLogEvent> session_logs_;
};

// One accumulator per run under `logdir` (io::ListEventRuns), loaded. NotFound if `logdir`
// does not exist; corrupt records are left in each run's corrupt_records().
std::vector<std::pair<std::string, EventAccumulator>> LoadRuns(const std::string& logdir);

}  // namespace flowtrain::summary

#endif  // FLOWTRAIN_SUMMARY_EVENT_ACCUMULATOR_H_
