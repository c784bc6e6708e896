#include "flowtrain/io/event_file_reader.h"

#include "flowtrain/core/error.h"

namespace flowtrain::io {

EventFileReader::EventFileReader(std::string path, bool follow)
    : reader_(std::move(path), RecordReaderOptions{.follow = follow}) {}

bool EventFileReader::ReadEvent(tensorflow::Event* event) {
  const uint64_t offset = reader_.offset();
  if (!reader_.ReadRecord(&record_)) return false;
  if (!event->ParseFromString(record_)) {
    DataLoss("Record at offset ", offset, " of '", reader_.path(), "' (", record_.size(),
             " bytes) is not a tensorflow.Event");
  }
  return true;
}

std::vector<tensorflow::Event> ReadEventFile(const std::string& path) {
  EventFileReader reader(path);
  std::vector<tensorflow::Event> events;
  tensorflow::Event event;
  while (reader.ReadEvent(&event)) events.push_back(std::move(event));
  return events;
}

}  // namespace flowtrain::io
