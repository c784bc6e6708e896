// Reader ops, as TF1's tf.TFRecordReader: a reader takes file names from a queue of strings
// (usually train::StringInputProducer's) and returns one record per run, with its key
// "<file>:<record index>".
//
//   ops::FIFOQueue filenames = train::StringInputProducer({"a.tfrecord", "b.tfrecord"});
//   ops::TFRecordReader reader;
//   auto [key, value] = reader.Read(filenames);
//
// When the file-name queue is closed and empty, Read raises OutOfRangeError; a corrupt record
// is DataLossError naming the file and the record's index.
#ifndef FLOWTRAIN_OPS_READER_OPS_H_
#define FLOWTRAIN_OPS_READER_OPS_H_

#include <string>
#include <string_view>
#include <utility>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/data_flow_ops.h"

namespace flowtrain::ops {

struct TFRecordReaderOptions {
  std::string name = "TFRecordReaderV2";
  std::string compression_type;  // "", "ZLIB" or "GZIP"
  std::string container;
  std::string shared_name;
};

class TFRecordReader {
 public:
  explicit TFRecordReader(const TFRecordReaderOptions& options = {});
  Output handle() const { return handle_; }
  // (key, value) scalar strings: ReaderReadV2.
  std::pair<Output, Output> Read(const QueueBase& filename_queue,
                                 std::string_view name = "ReaderReadV2") const;

 private:
  Output handle_;
};

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_READER_OPS_H_
