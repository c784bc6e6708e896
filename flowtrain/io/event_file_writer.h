// Writes one TensorBoard event file: a TFRecord file of serialized tensorflow::Event protos,
// the low-level synchronous writer (TF's C++ EventsWriter). summary::FileWriter runs one of these
// on a background thread; use this class directly only where blocking on the disk is fine.
//
//   EventFileWriter writer("runs/digits");       // creates the directory and the file
//   tensorflow::Event event;
//   event.set_wall_time(NowSeconds());
//   event.set_step(100);
//   auto* value = event.mutable_summary()->add_value();
//   value->set_tag("loss");
//   value->set_simple_value(0.25f);
//   writer.WriteEvent(event);
//   writer.Flush();                               // visible to TensorBoard from here on
//   writer.Close();
//
// File name: `events.out.tfevents.<10-digit unix seconds>.<hostname>.<pid>.<counter><suffix>`.
// TF1 names files without `.<pid>.<counter>`, so two writers opened in the same second by one
// process would collide; TF2's summary writer adds the pid and a process-wide counter, and we do
// the same (the fixture `...Jaakkos-Mac-mini.local.11684.5.v2` shows that form). The file is also
// created exclusively, so even a pid reused within one second cannot clobber another file: the
// counter moves on instead. A non-empty suffix gets a leading "." if it lacks one, as in TF2.
// TensorBoard reads every file whose name contains "tfevents", so it reads these.
//
// The first record is Event{wall_time = the whole seconds of the name, file_version =
// "brain.Event:2"}, flushed at once. Disk errors are thrown as flowtrain errors naming the file
// (ResourceExhausted for a full disk, PermissionDenied, NotFound, ...). Not thread-safe.
#ifndef FLOWTRAIN_IO_EVENT_FILE_WRITER_H_
#define FLOWTRAIN_IO_EVENT_FILE_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "flowtrain/io/record_writer.h"
#include "flowtrain/proto/event.pb.h"

namespace flowtrain::io {

// TensorBoard reads the number after "brain.Event:"; 2 enables its SessionLog-based purging.
inline constexpr std::string_view kEventFileVersion = "brain.Event:2";

class EventFileWriter {
 public:
  // Creates `logdir` (and its parents) if needed and a new event file in it.
  explicit EventFileWriter(std::string logdir, std::string filename_suffix = "");
  ~EventFileWriter();  // closes; errors are logged, never thrown
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void WriteEvent(const tensorflow::Event& event);
  // `event` is a serialized tensorflow::Event (written as is, not checked).
  void WriteSerializedEvent(std::string_view event);
  // Hands everything written to the OS so readers see it. If the file was deleted meanwhile
  // (someone cleared the logdir), the next event written goes to a fresh file (recreating
  // the logdir), as in TF, and no file is made until then: an idle writer leaves a deleted
  // run deleted. Events written since the last Flush went to the deleted file: DataLoss
  // saying how many.
  void Flush();
  // Flushes and closes. Writing afterwards is FailedPrecondition.
  void Close();

  // Path of the current event file (after a deletion, the deleted one until the next event).
  const std::string& path() const { return path_; }
  const std::string& logdir() const { return logdir_; }
  // Events written to the current file, the version record included.
  uint64_t num_events() const { return num_events_; }

 private:
  // Creates a fresh, uniquely named file and writes the version record to it.
  void OpenNewFile();

  std::string logdir_;
  std::string suffix_;
  std::string path_;
  std::unique_ptr<RecordWriter> writer_;  // null once the file was found deleted
  std::string scratch_;                   // reused serialization buffer
  uint64_t num_events_ = 0;
  uint64_t unflushed_events_ = 0;  // written since the last Flush
  bool closed_ = false;
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_EVENT_FILE_WRITER_H_
