// One shared FileWriter per logdir for the whole process (TF's FileWriterCache /
// SummaryWriterCache), so hooks and user code that log to the same directory append to one
// event file instead of racing each with its own.
//
//   std::shared_ptr<FileWriter> writer = FileWriterCache::Get("runs/digits");
//   writer->AddSummary(bytes, step);
//   writer->Flush();                  // users of a cached writer flush; they never close it
//   ...
//   FileWriterCache::Clear();         // closes every cached writer and forgets them
//
// Cached writers are closed (so flushed) at normal process exit.
// Logdirs are compared as given ("runs/x" and "./runs/x" are two entries), as in TF.
#ifndef FLOWTRAIN_SUMMARY_FILE_WRITER_CACHE_H_
#define FLOWTRAIN_SUMMARY_FILE_WRITER_CACHE_H_

#include <memory>
#include <string>

#include "flowtrain/summary/file_writer.h"

namespace flowtrain::summary {

class FileWriterCache {
 public:
  // The writer for `logdir`, created with default options on first use.
  static std::shared_ptr<FileWriter> Get(const std::string& logdir);
  // Closes all cached writers and empties the cache. Holders of a writer keep a valid object;
  // whatever they add after this is dropped (counted), as with any closed writer.
  static void Clear();
};

}  // namespace flowtrain::summary

#endif  // FLOWTRAIN_SUMMARY_FILE_WRITER_CACHE_H_
