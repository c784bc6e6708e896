#include "flowtrain/summary/file_writer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cstring>

#include "absl/time/time.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::summary {
namespace {

using ::google::protobuf::internal::WireFormatLite;
using ::google::protobuf::io::CodedInputStream;

// Field numbers of tensorflow.Event and tensorflow.Summary used on the fast path below.
constexpr int kEventWallTimeField = 1;
constexpr int kEventStepField = 2;
constexpr int kEventSummaryField = 5;
constexpr int kSummaryValueField = 1;
constexpr int kSummaryValueMetadataField = 9;

// Batches bigger than this give their memory back after being written, so that one burst
// does not pin its peak for the life of the writer.
constexpr size_t kKeptBatchCapacity = 1 << 16;

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// True when `summary` is well-formed wire data in which no Summary.Value has metadata: such
// bytes go into the event untouched. False means "parse it properly": for metadata that may
// need stripping, and for malformed bytes, which the parser then rejects.
bool IsWellFormedWithoutMetadata(std::string_view summary) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(summary.data()), static_cast<int>(summary.size()));
  const uint32_t value_tag =
      WireFormatLite::MakeTag(kSummaryValueField, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  while (in.BytesUntilLimit() > 0) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return false;
    if (tag != value_tag) {
      if (!WireFormatLite::SkipField(&in, tag)) return false;
      continue;
    }
    uint32_t length;
    if (!in.ReadVarint32(&length) || static_cast<int64_t>(length) > in.BytesUntilLimit()) {
      return false;
    }
    const CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
    while (in.BytesUntilLimit() > 0) {
      const uint32_t field_tag = in.ReadTag();
      if (field_tag == 0) return false;
      if (WireFormatLite::GetTagFieldNumber(field_tag) == kSummaryValueMetadataField) return false;
      if (!WireFormatLite::SkipField(&in, field_tag)) return false;
    }
    in.PopLimit(limit);
  }
  return true;
}

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Appends the serialization of Event{wall_time, step, summary} without building the proto:
// the same bytes protobuf would produce (fields in number order, proto3 zeros omitted).
void AppendSummaryEvent(double wall_time, int64_t step, std::string_view summary, std::string* out) {
  if (wall_time != 0) {
    out->push_back(
        static_cast<char>(WireFormatLite::MakeTag(kEventWallTimeField, WireFormatLite::WIRETYPE_FIXED64)));
    uint64_t bits;
    std::memcpy(&bits, &wall_time, sizeof(bits));
    for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(bits >> (8 * i)));
  }
  if (step != 0) {
    out->push_back(
        static_cast<char>(WireFormatLite::MakeTag(kEventStepField, WireFormatLite::WIRETYPE_VARINT)));
    AppendVarint(static_cast<uint64_t>(step), out);
  }
  out->push_back(static_cast<char>(
      WireFormatLite::MakeTag(kEventSummaryField, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)));
  AppendVarint(summary.size(), out);
  out->append(summary);
}

}  // namespace

FileWriter::FileWriter(std::string logdir, FileWriterOptions options)
    : logdir_(std::move(logdir)), options_(std::move(options)) {
  FT_REQUIRE(!logdir_.empty(), "FileWriter needs a logdir");
  FT_REQUIRE(options_.max_queue >= 1, "FileWriterOptions.max_queue must be at least 1, not ",
             options_.max_queue);
  FT_REQUIRE(options_.flush_secs.count() >= 0, "FileWriterOptions.flush_secs must not be negative");
  Start();
}

FileWriter::FileWriter(std::string logdir, const tensorflow::GraphDef& graph_def, FileWriterOptions options)
    : FileWriter(std::move(logdir), std::move(options)) {
  AddGraph(graph_def);
}

FileWriter::~FileWriter() { Close(); }

void FileWriter::Start() {
  {
    absl::MutexLock lock(&mu_);
    accepting_ = true;
    stopping_ = false;
  }
  thread_ = std::thread([this] { WriterLoop(); });
}

// ---- Callers' side --------------------------------------------------------------------------

void FileWriter::Enqueue(double wall_time, int64_t step, std::string_view summary,
                         std::unique_ptr<tensorflow::Event> event) {
  const size_t bytes = sizeof(PendingEvent) + (event ? event->ByteSizeLong() : summary.size());
  absl::ReleasableMutexLock lock(&mu_);
  if (!accepting_) {
    dropped_events_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (pending_bytes_ + bytes > options_.max_pending_bytes && !pending_.empty()) {
    dropped_events_.fetch_add(1, std::memory_order_relaxed);
    if (!overflow_logged_) {
      overflow_logged_ = true;
      FT_LOG(ERROR) << "Summary writer for " << logdir_ << " has more than " << options_.max_pending_bytes
                    << " bytes of events waiting for the disk; "
                    << "dropping new events until it catches up (counted in dropped_event_count)";
    }
    return;
  }
  pending_.push_back({wall_time, step, pending_summaries_.size(), summary.size(), std::move(event)});
  pending_summaries_.append(summary);
  pending_bytes_ += bytes;
  ++enqueued_;
  // Wake the writer only when it has a batch to write or has no deadline to wake it by itself.
  const bool wake =
      writer_waiting_ && (writer_idle_ || pending_.size() >= static_cast<size_t>(options_.max_queue));
  if (wake) writer_waiting_ = false;
  lock.Release();
  if (wake) writer_cv_.Signal();
}

void FileWriter::AddSummary(std::string_view serialized_summary, int64_t global_step) {
  Enqueue(NowSeconds(), global_step, serialized_summary, nullptr);
}

void FileWriter::AddSummary(const tensorflow::Summary& summary, int64_t global_step) {
  // Serializing here is cheaper than copying the proto, and joins the fast path for bytes.
  thread_local std::string bytes;
  bytes.clear();
  summary.AppendToString(&bytes);
  Enqueue(NowSeconds(), global_step, bytes, nullptr);
}

void FileWriter::AddEvent(tensorflow::Event event) {
  Enqueue(0, 0, {}, std::make_unique<tensorflow::Event>(std::move(event)));
}

void FileWriter::AddEventWithTime(std::unique_ptr<tensorflow::Event> event, int64_t global_step) {
  event->set_wall_time(NowSeconds());
  if (global_step != 0) event->set_step(global_step);
  Enqueue(0, 0, {}, std::move(event));
}

void FileWriter::AddGraph(const tensorflow::GraphDef& graph_def, int64_t global_step) {
  auto event = std::make_unique<tensorflow::Event>();
  graph_def.SerializeToString(event->mutable_graph_def());
  AddEventWithTime(std::move(event), global_step);
}

void FileWriter::AddMetaGraph(const tensorflow::MetaGraphDef& meta_graph_def, int64_t global_step) {
  auto event = std::make_unique<tensorflow::Event>();
  meta_graph_def.SerializeToString(event->mutable_meta_graph_def());
  AddEventWithTime(std::move(event), global_step);
}

void FileWriter::AddSessionLog(const tensorflow::SessionLog& session_log, int64_t global_step) {
  auto event = std::make_unique<tensorflow::Event>();
  *event->mutable_session_log() = session_log;
  AddEventWithTime(std::move(event), global_step);
}

void FileWriter::AddRunMetadata(const tensorflow::RunMetadata& run_metadata, const std::string& tag,
                                int64_t global_step) {
  {
    absl::MutexLock lock(&mu_);
    if (!run_metadata_tags_.insert(tag).second) {
      InvalidArgument("Run metadata tag '", tag, "' was already used by the summary writer for ", logdir_);
    }
  }
  auto event = std::make_unique<tensorflow::Event>();
  auto* tagged = event->mutable_tagged_run_metadata();
  tagged->set_tag(tag);
  run_metadata.SerializeToString(tagged->mutable_run_metadata());
  AddEventWithTime(std::move(event), global_step);
}

void FileWriter::Flush() {
  absl::MutexLock lock(&mu_);
  if (!accepting_ || stopping_) return;
  const uint64_t target = enqueued_;
  if (flushed_ >= target) return;
  if (flush_requested_ < target) flush_requested_ = target;
  writer_waiting_ = false;
  writer_cv_.Signal();
  // The writer thread always ends by marking everything flushed, so this cannot hang on Close.
  while (flushed_ < target) flushed_cv_.Wait(&mu_);
}

void FileWriter::Close() {
  absl::MutexLock lifecycle(&lifecycle_mu_);
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    accepting_ = false;
    stopping_ = true;
    writer_waiting_ = false;
  }
  writer_cv_.Signal();
  flushed_cv_.SignalAll();
  thread_.join();
}

void FileWriter::Reopen() {
  absl::MutexLock lifecycle(&lifecycle_mu_);
  if (thread_.joinable()) return;
  Start();
}

// ---- Writer thread --------------------------------------------------------------------------

void FileWriter::ReportError(std::string_view action, std::string_view what, uint64_t events_lost) {
  error_count_.fetch_add(1, std::memory_order_relaxed);
  dropped_events_.fetch_add(events_lost, std::memory_order_relaxed);
  if (error_logged_) return;
  error_logged_ = true;
  FT_LOG(ERROR) << "Summary writer for " << logdir_ << " failed " << action << ": " << what
                << ". Training goes on; later errors of this writer are counted in "
                << "error_count() and not logged again.";
}

bool FileWriter::EnsureFile() {
  if (file_) return true;
  try {
    file_ = std::make_unique<io::EventFileWriter>(logdir_, options_.filename_suffix);
    return true;
  } catch (const std::exception& e) {
    ReportError("creating an event file", e.what(), 0);
  }
  return false;
}

void FileWriter::FlushFile() {
  last_flush_ = std::chrono::steady_clock::now();
  dirty_ = false;
  if (!file_) return;
  try {
    file_->Flush();
  } catch (const std::exception& e) {
    ReportError("flushing", e.what(), 0);
    CloseFile();
  }
}

void FileWriter::CloseFile() {
  if (!file_) return;
  try {
    file_->Close();
  } catch (const std::exception& e) {
    ReportError("closing", e.what(), 0);
  }
  file_.reset();
}

void FileWriter::WriteSummary(const PendingEvent& pending, std::string_view summary) {
  scratch_event_.clear();
  if (IsWellFormedWithoutMetadata(summary)) {
    AppendSummaryEvent(pending.wall_time, pending.step, summary, &scratch_event_);
  } else {
    if (!scratch_summary_.ParseFromArray(summary.data(), static_cast<int>(summary.size()))) {
      dropped_events_.fetch_add(1, std::memory_order_relaxed);
      if (!bad_summary_logged_) {
        bad_summary_logged_ = true;
        FT_LOG(ERROR) << "Summary writer for " << logdir_ << " dropped a summary at step " << pending.step
                      << ": its " << summary.size()
                      << " bytes are not a tensorflow.Summary (later ones are only counted)";
      }
      return;
    }
    // TensorBoard keeps the first metadata it sees per tag; later copies only cost space.
    for (auto& value : *scratch_summary_.mutable_value()) {
      if (!value.has_metadata()) continue;
      if (!tags_with_metadata_.insert(value.tag()).second) value.clear_metadata();
    }
    scratch_bytes_.clear();
    scratch_summary_.AppendToString(&scratch_bytes_);
    AppendSummaryEvent(pending.wall_time, pending.step, scratch_bytes_, &scratch_event_);
  }
  file_->WriteSerializedEvent(scratch_event_);
}

void FileWriter::WriteBatch(std::vector<PendingEvent>& batch, const std::string& summaries) {
  size_t next = 0;
  if (!EnsureFile()) {
    dropped_events_.fetch_add(batch.size(), std::memory_order_relaxed);
    return;
  }
  try {
    for (; next < batch.size(); ++next) {
      const PendingEvent& pending = batch[next];
      if (pending.event) {
        file_->WriteEvent(*pending.event);
      } else {
        WriteSummary(pending,
                     std::string_view(summaries).substr(pending.summary_offset, pending.summary_size));
      }
    }
    written_events_.fetch_add(batch.size(), std::memory_order_relaxed);
    dirty_ = true;
  } catch (const std::exception& e) {
    // The file may now end inside a record; leave it and start a fresh one next time.
    written_events_.fetch_add(next, std::memory_order_relaxed);
    ReportError("writing events", e.what(), batch.size() - next);
    CloseFile();
  }
}

void FileWriter::WriterLoop() {
  std::vector<PendingEvent> batch;
  std::string summaries;
  // Clamped so that adding it to a time point cannot overflow.
  const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::min(options_.flush_secs, std::chrono::duration<double>(std::chrono::hours(24 * 365 * 100))));
  // Create the file at once, so the logdir shows the run before the first event.
  try {
    EnsureFile();
  } catch (...) {
    // EnsureFile reports errors itself; nothing else can throw here.
  }
  mu_.Lock();
  for (;;) {
    // Sleep until there is a batch worth writing, a flush is due or wanted, or Close().
    for (;;) {
      const bool has_data = dirty_ || !pending_.empty();
      const bool due = has_data && std::chrono::steady_clock::now() >= last_flush_ + interval;
      if (stopping_ || flush_requested_ > flushed_ || due ||
          pending_.size() >= static_cast<size_t>(options_.max_queue)) {
        break;
      }
      writer_waiting_ = true;
      writer_idle_ = !has_data;
      if (has_data) {
        // Not due, so the deadline is ahead and the timeout positive.
        writer_cv_.WaitWithTimeout(
            &mu_, absl::FromChrono(last_flush_ + interval - std::chrono::steady_clock::now()));
      } else {
        writer_cv_.Wait(&mu_);
      }
      writer_waiting_ = false;
      writer_idle_ = false;
    }
    batch.swap(pending_);
    summaries.swap(pending_summaries_);
    pending_bytes_ = 0;
    const uint64_t batch_end = enqueued_;
    const bool stop = stopping_;
    const bool flush_wanted = flush_requested_ > flushed_;
    mu_.Unlock();

    try {
      if (!batch.empty()) WriteBatch(batch, summaries);
      const bool due = std::chrono::steady_clock::now() >= last_flush_ + interval;
      if (flush_wanted || stop || (dirty_ && due)) FlushFile();
      if (stop) CloseFile();
    } catch (const std::exception& e) {
      ReportError("writing", e.what(), 0);  // not expected: the steps above catch their own
    } catch (...) {
      ReportError("writing", "unknown exception", 0);
    }
    batch.clear();
    summaries.clear();
    if (batch.capacity() > kKeptBatchCapacity) batch.shrink_to_fit();
    if (summaries.capacity() > kKeptBatchCapacity * 64) summaries.shrink_to_fit();

    mu_.Lock();
    if (flush_wanted || stop) {
      if (flushed_ < batch_end) flushed_ = batch_end;
      flushed_cv_.SignalAll();
    }
    if (stop && pending_.empty()) break;
  }
  flushed_ = enqueued_;
  mu_.Unlock();
  flushed_cv_.SignalAll();
}

}  // namespace flowtrain::summary
