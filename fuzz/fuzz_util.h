// What the harnesses share: a scratch directory of this process for the readers that want a
// path, and the rule that decides what counts as a finding.
//
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     const std::string path = fuzz::WriteScratchFile("input.idx", data, size);
//     fuzz::AcceptErrors([&] { io::ReadIdxFile(path); });
//     return 0;
//   }
//
// A flowtrain::Error is a reader's right answer to a bad input; anything else (another
// exception, which AcceptErrors lets escape so that libFuzzer reports it, a crash, a sanitizer
// report, a timeout, too much memory) is a finding. Not thread-safe: harnesses run one input
// at a time.
#ifndef FLOWTRAIN_FUZZ_FUZZ_UTIL_H_
#define FLOWTRAIN_FUZZ_FUZZ_UTIL_H_

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "flowtrain/core/error.h"

namespace flowtrain::fuzz {

// A directory under $TMPDIR (or /tmp) that only this process uses, made on the first call and
// removed when the process exits normally (a crashing process leaves it for inspection).
inline const std::string& ScratchDir() {
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/flowtrain-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ScratchDir(), ignored);
    });
    return new std::string(pattern);
  }();
  return *dir;
}

// Writes `size` bytes to `name` in ScratchDir(), replacing what was there; returns its path.
// Plain writes, no fsync: the harness reads the file back at once.
inline std::string WriteScratchFile(std::string_view name, const uint8_t* data, size_t size) {
  std::string path = ScratchDir() + "/" + std::string(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) std::abort();  // the scratch disk failing is no finding about the reader
  return path;
}

// Runs `body`, swallowing flowtrain::Error only.
template <typename Body>
void AcceptErrors(Body&& body) {
  try {
    body();
  } catch (const Error&) {
  }
}

}  // namespace flowtrain::fuzz

#endif  // FLOWTRAIN_FUZZ_FUZZ_UTIL_H_
