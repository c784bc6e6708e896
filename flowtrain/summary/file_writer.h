// Writes summaries, graphs and session logs to an event file in a logdir for TensorBoard, with
// the semantics of TF1's tf.summary.FileWriter, without ever making the caller wait for the
// disk: Add* calls only append to an in-memory queue; a background thread turns the queue into
// Event records and writes them.
//
//   summary::FileWriter writer("runs/digits", {.flush_secs = std::chrono::seconds(30)});
//   writer.AddGraph(graph_def);
//   writer.AddSessionLog(StartLog(), step);
//   for (...) {
//     writer.AddSummary(summary_bytes, step);      // serialized tensorflow.Summary, e.g. an op's output
//   }
//   writer.Flush();                                 // everything added so far is on disk
//   writer.Close();                                 // or let the destructor do it
//
// Events carry `wall_time` = the time of the Add* call and `step` = the given global step. As in
// TF, a summary value's metadata is kept only the first time its tag is seen, and the first
// event after a quiet spell longer than flush_secs is flushed at once. Unlike TF, max_queue does
// not make callers block: it is how many events gather before the writer thread is woken.
//
// Disk errors never reach the caller and never stop training: the first one is logged with
// FT_LOG(ERROR), every one is counted (error_count()), and the writer starts a new file at the
// next batch. Events it could not write, summaries whose bytes are not a tensorflow.Summary,
// and events added when more than max_pending_bytes are waiting (a stalled disk) or after
// Close() are dropped and counted (dropped_event_count()).
//
// Thread-safe: any number of threads may add events.
#ifndef FLOWTRAIN_SUMMARY_FILE_WRITER_H_
#define FLOWTRAIN_SUMMARY_FILE_WRITER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/io/event_file_writer.h"
#include "flowtrain/proto/event.pb.h"
#include "flowtrain/proto/graph.pb.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/proto/step_stats.pb.h"
#include "flowtrain/proto/summary.pb.h"

namespace flowtrain::summary {

struct FileWriterOptions {
  // Events gathered before the writer thread is woken to write them (TF's max_queue).
  int max_queue = 10;
  // Longest time written events stay in memory buffers before they are flushed to the file.
  std::chrono::duration<double> flush_secs = std::chrono::seconds(120);
  // Appended to the event file name (".v2" style; a leading "." is added if missing).
  std::string filename_suffix{};
  // Bound on memory held by events waiting for the disk; beyond it new events are dropped.
  size_t max_pending_bytes = size_t{512} << 20;
};

class FileWriter {
 public:
  // Starts the writer thread, which creates `logdir` and the event file.
  explicit FileWriter(std::string logdir, FileWriterOptions options = {});
  // The same, then adds `graph_def` as the first event after the file version.
  FileWriter(std::string logdir, const tensorflow::GraphDef& graph_def, FileWriterOptions options = {});
  ~FileWriter();  // Close()
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  // Adds a summary, given as serialized bytes (the output of a summary op) or as a proto.
  void AddSummary(std::string_view serialized_summary, int64_t global_step = 0);
  void AddSummary(const tensorflow::Summary& summary, int64_t global_step = 0);
  // Adds `event` exactly as given (its wall_time and step are not touched).
  void AddEvent(tensorflow::Event event);
  void AddGraph(const tensorflow::GraphDef& graph_def, int64_t global_step = 0);
  void AddMetaGraph(const tensorflow::MetaGraphDef& meta_graph_def, int64_t global_step = 0);
  // START, STOP or CHECKPOINT (with checkpoint_path) markers; see tensorflow.SessionLog.
  void AddSessionLog(const tensorflow::SessionLog& session_log, int64_t global_step = 0);
  // Stored as TaggedRunMetadata; each tag may be used once per writer (InvalidArgument if not).
  void AddRunMetadata(const tensorflow::RunMetadata& run_metadata, const std::string& tag,
                      int64_t global_step = 0);

  // Blocks until every event added before the call is written and handed to the OS.
  void Flush();
  // Writes what is queued, closes the file and stops the thread. Later events are dropped.
  void Close();
  // After Close(): starts again with a new event file. Does nothing on an open writer.
  void Reopen();

  const std::string& GetLogdir() const { return logdir_; }
  // Failed disk operations (creating, writing, flushing or closing the event file).
  uint64_t error_count() const { return error_count_.load(std::memory_order_relaxed); }
  // Events that were added but will never reach a file (see the class comment).
  uint64_t dropped_event_count() const { return dropped_events_.load(std::memory_order_relaxed); }
  // Events written to event files so far (the file version records not counted).
  uint64_t written_event_count() const { return written_events_.load(std::memory_order_relaxed); }

 private:
  // One queued event. Summaries stay serialized in one shared byte buffer (no allocation
  // per event); everything else is a full Event.
  struct PendingEvent {
    double wall_time;
    int64_t step;
    uint64_t summary_offset;
    uint64_t summary_size;
    std::unique_ptr<tensorflow::Event> event;  // null for a serialized summary
  };

  // Starts the writer thread (the constructor, and Reopen with lifecycle_mu_ held).
  void Start() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  void Enqueue(double wall_time, int64_t step, std::string_view summary,
               std::unique_ptr<tensorflow::Event> event) ABSL_LOCKS_EXCLUDED(mu_);
  void AddEventWithTime(std::unique_ptr<tensorflow::Event> event, int64_t global_step);

  // Writer thread.
  void WriterLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void WriteBatch(std::vector<PendingEvent>& batch, const std::string& summaries);
  void WriteSummary(const PendingEvent& pending, std::string_view summary);
  bool EnsureFile();
  void FlushFile();
  void CloseFile();
  void ReportError(std::string_view action, std::string_view what, uint64_t events_lost);

  const std::string logdir_;
  const FileWriterOptions options_;

  absl::Mutex lifecycle_mu_;  // serializes Close and Reopen
  std::thread thread_ ABSL_GUARDED_BY(lifecycle_mu_);

  // Shared between callers and the writer thread.
  absl::Mutex mu_;
  absl::CondVar writer_cv_;   // wakes the writer thread
  absl::CondVar flushed_cv_;  // wakes Flush() callers
  std::vector<PendingEvent> pending_ ABSL_GUARDED_BY(mu_);
  std::string pending_summaries_ ABSL_GUARDED_BY(mu_);
  size_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;         // events accepted so far
  uint64_t flush_requested_ ABSL_GUARDED_BY(mu_) = 0;  // Flush() wants events up to this on disk
  uint64_t flushed_ ABSL_GUARDED_BY(mu_) = 0;          // events up to this number are on disk
  bool accepting_ ABSL_GUARDED_BY(mu_) = false;        // false before Start() and after Close()
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Waiting with no deadline: the next event must wake it.
  bool writer_idle_ ABSL_GUARDED_BY(mu_) = false;
  bool writer_waiting_ ABSL_GUARDED_BY(mu_) = false;  // waiting at all
  bool overflow_logged_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> run_metadata_tags_ ABSL_GUARDED_BY(mu_);

  std::atomic<uint64_t> error_count_{0};
  std::atomic<uint64_t> dropped_events_{0};
  std::atomic<uint64_t> written_events_{0};

  // Owned by the writer thread.
  std::unique_ptr<io::EventFileWriter> file_;
  std::unordered_set<std::string> tags_with_metadata_;
  tensorflow::Summary scratch_summary_;
  std::string scratch_bytes_;
  std::string scratch_event_;
  // The first event flushes at once, as in TF.
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::time_point::min();
  bool dirty_ = false;  // written since the last flush
  bool error_logged_ = false;
  bool bad_summary_logged_ = false;
};

}  // namespace flowtrain::summary

#endif  // FLOWTRAIN_SUMMARY_FILE_WRITER_H_
