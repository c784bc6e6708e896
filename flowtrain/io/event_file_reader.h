// Reads the tensorflow::Event protos of one event file, in order, checking every record's
// CRCs: the loader behind tools and tests that look at what TensorBoard would see.
//
//   EventFileReader reader("runs/digits/events.out.tfevents.1567052931.host");
//   tensorflow::Event event;
//   while (reader.ReadEvent(&event)) {
//     if (event.has_summary()) ...
//   }
//
// With `follow`, a partial last record means "not written yet" (as TensorBoard treats live
// files): ReadEvent returns false and can be called again later. A corrupt or truncated record,
// or a record that is not an Event, is DataLossError naming the file and offset.
#ifndef FLOWTRAIN_IO_EVENT_FILE_READER_H_
#define FLOWTRAIN_IO_EVENT_FILE_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "flowtrain/io/record_reader.h"
#include "flowtrain/proto/event.pb.h"

namespace flowtrain::io {

class EventFileReader {
 public:
  explicit EventFileReader(std::string path, bool follow = false);

  // Reads the next event; false at the end of the file (or of what was written so far).
  bool ReadEvent(tensorflow::Event* event);
  // Offset of the next record in the file.
  uint64_t offset() const { return reader_.offset(); }
  // Bytes of an unfinished last record (follow mode), see RecordReader::partial_bytes.
  uint64_t partial_bytes() const { return reader_.partial_bytes(); }
  const std::string& path() const { return reader_.path(); }

 private:
  RecordReader reader_;
  std::string record_;
};

// Every event of the file at `path`.
std::vector<tensorflow::Event> ReadEventFile(const std::string& path);

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_EVENT_FILE_READER_H_
