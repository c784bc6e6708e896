// Every harness in one libFuzzer program, chosen by the name it is run under: the build links
// it once as flowtrain_fuzzer and makes a link <name>_fuzzer to it per fuzz/<name>_fuzz.cc, so
// that `build-fuzz/fuzz/record_gzip_fuzzer CORPUS` fuzzes the record_gzip harness (one link of
// the instrumented library instead of one per harness).
//
//   $ ln -s flowtrain_fuzzer event_fuzzer && ./event_fuzzer -max_total_time=30 corpus/
//
// FLOWTRAIN_FUZZ_HARNESS=<name> picks the harness whatever the program's name. An unknown name
// prints the known ones and exits 1 before libFuzzer starts.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz/harness_table.h"

namespace {

flowtrain::fuzz::TestOneInput chosen_harness = nullptr;

// "record_gzip" for ".../record_gzip_fuzzer".
std::string_view HarnessNameOf(std::string_view program) {
  const size_t slash = program.find_last_of('/');
  if (slash != std::string_view::npos) program.remove_prefix(slash + 1);
  constexpr std::string_view kSuffix = "_fuzzer";
  if (program.size() > kSuffix.size() && program.substr(program.size() - kSuffix.size()) == kSuffix) {
    program.remove_suffix(kSuffix.size());
  }
  return program;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const char* from_environment = std::getenv("FLOWTRAIN_FUZZ_HARNESS");
  const std::string_view name = from_environment != nullptr && *from_environment != '\0'
                                    ? std::string_view(from_environment)
                                : *argc > 0 ? HarnessNameOf((*argv)[0])
                                            : std::string_view();
  chosen_harness = flowtrain::fuzz::FindHarness(name);
  if (chosen_harness == nullptr) {
    std::fprintf(stderr,
                 "flowtrain_fuzzer: no harness named '%.*s' (run it as <name>_fuzzer or set "
                 "FLOWTRAIN_FUZZ_HARNESS); the harnesses:",
                 static_cast<int>(name.size()), name.data());
    flowtrain::fuzz::PrintHarnessNames(stderr);
    std::fprintf(stderr, "\n");
    std::exit(1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return chosen_harness(data, size); }
