// How fast summaries reach an event file through summary::FileWriter, next to how fast the
// same disk takes a plain sequential write of the same bytes.
//
//   event_writer_bench [logdir] [events]
//
// Prints
//   RESULT event_writer flowtrain events_per_sec <n>      first AddSummary to Flush() returning
//   RESULT event_writer flowtrain caller_ns_per_add <n>   time the training thread spends per add
//   RESULT event_writer disk write_MBps <n>               write(2) of the event file's byte count
// Neither side fsyncs: FileWriter hands data to the OS, as TF's writer does, and so does the
// reference.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "flowtrain/core/file_util.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/record_reader.h"
#include "flowtrain/proto/summary.pb.h"
#include "flowtrain/summary/file_writer.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Sequential write(2) of `bytes` bytes in 1 MiB pieces; returns MB/s (10^6 bytes).
double PlainWriteMBps(const std::string& path, uint64_t bytes) {
  const std::string chunk(1 << 20, 'x');
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror("open");
    std::exit(1);
  }
  const Clock::time_point start = Clock::now();
  for (uint64_t left = bytes; left > 0;) {
    const size_t n = left < chunk.size() ? left : chunk.size();
    if (::write(fd, chunk.data(), n) != static_cast<ssize_t>(n)) {
      std::perror("write");
      std::exit(1);
    }
    left -= n;
  }
  ::close(fd);
  return static_cast<double>(bytes) / 1e6 / Seconds(Clock::now() - start);
}

}  // namespace

int main(int argc, char** argv) {
  std::string logdir;
  if (argc > 1) {
    logdir = argv[1];
  } else {
    char pattern[] = "/tmp/event_writer_bench_XXXXXX";
    if (::mkdtemp(pattern) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    logdir = pattern;
  }
  const int64_t events = argc > 2 ? std::atoll(argv[2]) : 1000000;

  // Serialized scalar summaries, as a summary op hands them to a hook: a few distinct values
  // cycled through, so the writer cannot benefit from seeing one buffer over and over.
  std::vector<std::string> summaries;
  for (int i = 0; i < 1024; ++i) {
    tensorflow::Summary summary;
    auto* value = summary.add_value();
    value->set_tag("loss");
    value->set_simple_value(1.0f / static_cast<float>(i + 1));
    summaries.push_back(summary.SerializeAsString());
  }

  flowtrain::summary::FileWriter writer(logdir);
  const Clock::time_point start = Clock::now();
  for (int64_t step = 0; step < events; ++step) {
    writer.AddSummary(summaries[step & 1023], step);
  }
  const Clock::time_point added = Clock::now();
  writer.Flush();
  const Clock::time_point flushed = Clock::now();
  writer.Close();

  if (writer.error_count() != 0 || writer.dropped_event_count() != 0 ||
      writer.written_event_count() != static_cast<uint64_t>(events)) {
    std::fprintf(stderr, "writer lost events: %llu errors, %llu dropped, %llu written\n",
                 static_cast<unsigned long long>(writer.error_count()),
                 static_cast<unsigned long long>(writer.dropped_event_count()),
                 static_cast<unsigned long long>(writer.written_event_count()));
    return 1;
  }
  const std::vector<std::string> files = flowtrain::io::ListEventFiles(logdir);
  if (files.size() != 1) {
    std::fprintf(stderr, "expected one event file in %s\n", logdir.c_str());
    return 1;
  }
  // Check that every event really is in the file before reporting anything.
  flowtrain::io::RecordReader reader(files[0]);
  std::string record;
  int64_t records = 0;
  while (reader.ReadRecord(&record)) ++records;
  if (records != events + 1) {
    std::fprintf(stderr, "file holds %lld records, expected %lld\n", static_cast<long long>(records),
                 static_cast<long long>(events + 1));
    return 1;
  }
  const uint64_t file_bytes = flowtrain::FileSize(files[0]);
  const double disk_mbps = PlainWriteMBps(flowtrain::JoinPath(logdir, "plain_write.bin"), file_bytes);

  std::printf("# %lld events, %llu bytes in %s\n", static_cast<long long>(events),
              static_cast<unsigned long long>(file_bytes), files[0].c_str());
  std::printf("RESULT event_writer flowtrain events_per_sec %.0f\n",
              static_cast<double>(events) / Seconds(flushed - start));
  std::printf("RESULT event_writer flowtrain caller_ns_per_add %.1f\n",
              Seconds(added - start) * 1e9 / static_cast<double>(events));
  std::printf("RESULT event_writer disk write_MBps %.1f\n", disk_mbps);
  std::printf("# event stream: %.1f MB/s of event file\n",
              static_cast<double>(file_bytes) / 1e6 / Seconds(flushed - start));

  if (argc <= 1) std::filesystem::remove_all(logdir);
  return 0;
}
