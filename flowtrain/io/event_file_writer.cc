#include "flowtrain/io/event_file_writer.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::io {
namespace {

std::string Hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// Process-wide, so that every writer of this process gets its own number.
std::atomic<uint64_t> next_file_id{0};

// Event files may grow for days; they are not worth a large buffer each, and TensorBoard
// only sees what reached the OS anyway.
constexpr size_t kEventBufferBytes = 128 * 1024;

}  // namespace

EventFileWriter::EventFileWriter(std::string logdir, std::string filename_suffix)
    : logdir_(std::move(logdir)), suffix_(std::move(filename_suffix)) {
  if (!suffix_.empty() && suffix_[0] != '.') suffix_.insert(0, ".");
  OpenNewFile();
}

EventFileWriter::~EventFileWriter() {
  try {
    Close();
  } catch (const std::exception& e) {
    FT_LOG(ERROR) << "Closing event file " << path_ << " failed: " << e.what();
  }
}

void EventFileWriter::OpenNewFile() {
  CreateDirectories(logdir_);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const long long seconds = static_cast<long long>(now);
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%010lld", seconds);
  const std::string prefix =
      StrCat(JoinPath(logdir_, "events.out.tfevents."), stamp, ".", Hostname(), ".", ::getpid(), ".");
  // A name can only be taken by another process reusing our pid within the same second, so
  // a few attempts are plenty; bounded all the same.
  for (int attempt = 0;; ++attempt) {
    std::string path = StrCat(prefix, next_file_id.fetch_add(1), suffix_);
    try {
      writer_ = std::make_unique<RecordWriter>(
          path, RecordWriterOptions{.buffer_bytes = kEventBufferBytes, .fail_if_exists = true});
      path_ = std::move(path);
      break;
    } catch (const AlreadyExistsError&) {
      if (attempt == 100) throw;
    }
  }
  tensorflow::Event version;
  version.set_wall_time(static_cast<double>(seconds));
  version.set_file_version(std::string(kEventFileVersion));
  writer_->WriteRecord(version.SerializeAsString());
  writer_->Flush();
  num_events_ = 1;
  unflushed_events_ = 0;
}

void EventFileWriter::WriteEvent(const tensorflow::Event& event) {
  scratch_.clear();
  if (!event.AppendToString(&scratch_)) {
    InvalidArgument("Event for '", path_, "' could not be serialized");
  }
  WriteSerializedEvent(scratch_);
}

void EventFileWriter::WriteSerializedEvent(std::string_view event) {
  if (closed_) FailedPrecondition("Event file '", path_, "' is closed");
  if (writer_ == nullptr) OpenNewFile();  // the file was deleted: this event starts a new one
  writer_->WriteRecord(event);
  ++num_events_;
  ++unflushed_events_;
}

void EventFileWriter::Flush() {
  if (closed_) FailedPrecondition("Event file '", path_, "' is closed");
  if (writer_ == nullptr) return;  // deleted; nothing written since
  writer_->Flush();
  if (FileExists(path_)) {
    unflushed_events_ = 0;
    return;
  }
  // Deleted (someone cleared the logdir): as TF's EventsWriter, open a new file only for the
  // next event, so that an idle writer does not bring a deleted run back.
  const uint64_t lost = unflushed_events_;
  writer_->Close();
  writer_.reset();
  unflushed_events_ = 0;
  if (lost > 0) {
    DataLoss("Event file ", path_, " was deleted before ", lost,
             " events reached it; later events go to a new file");
  }
  FT_LOG(WARNING) << "Event file " << path_ << " was deleted; later events go to a new file";
}

void EventFileWriter::Close() {
  if (closed_) return;
  closed_ = true;
  if (writer_ != nullptr) writer_->Close();
}

}  // namespace flowtrain::io
