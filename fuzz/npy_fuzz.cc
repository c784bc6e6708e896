// Feeds the input to io::ParseNpy as a .npy file (NumPy's format, read by `flowtrain
// saved-model run --inputs`) and touches every value it returns.
#include <cstdint>
#include <string>
#include <string_view>

#include "flowtrain/io/npy_file.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  flowtrain::fuzz::AcceptErrors([&] {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const flowtrain::Tensor tensor = flowtrain::io::ParseNpy(bytes, "input.npy");
    volatile size_t sum = 0;
    if (tensor.dtype() == flowtrain::DT_STRING) {
      for (const std::string& s : tensor.flat<std::string>()) sum = sum + s.size();
    } else {
      // So that a wrong size shows under ASan.
      const auto* raw = static_cast<const uint8_t*>(tensor.raw_data());
      for (size_t i = 0; i < tensor.TotalBytes(); ++i) sum = sum + raw[i];
    }
    // What the reader returns, the writer takes.
    sum = sum + flowtrain::io::SerializeNpy(tensor).size();
  });
  return 0;
}
