// Feeds the input to io::ReadIdxFile as an IDX file (MNIST's format) and sums its bytes.
#include <cstdint>
#include <string>

#include "flowtrain/io/idx_file.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = flowtrain::fuzz::WriteScratchFile("input.idx", data, size);
  flowtrain::fuzz::AcceptErrors([&] {
    const flowtrain::Tensor tensor = flowtrain::io::ReadIdxFile(path);
    // Touches every byte the reader claims to hold, so that a wrong size shows under ASan.
    const auto* bytes = static_cast<const uint8_t*>(tensor.raw_data());
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < tensor.TotalBytes(); ++i) sum = static_cast<uint8_t>(sum + bytes[i]);
  });
  return 0;
}
