// Feeds the input to io::RecordReader as a GZIP-compressed TFRecord file and reads every record, through a
// small buffer so that records and headers straddle its refills.
#include <cstdint>
#include <string>

#include "flowtrain/io/record_reader.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = flowtrain::fuzz::WriteScratchFile("input.tfrecord", data, size);
  flowtrain::fuzz::AcceptErrors([&] {
    flowtrain::io::RecordReader reader(path, {.compression_type = "GZIP", .buffer_bytes = 64});
    std::string record;
    while (reader.ReadRecord(&record)) {
    }
  });
  return 0;
}
