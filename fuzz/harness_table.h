// The table of every harness of fuzz/, for the programs that hold them all (fuzz_replay and the
// libFuzzer program flowtrain_fuzzer): each fuzz/<name>_fuzz.cc is compiled with its
// LLVMFuzzerTestOneInput renamed FuzzHarness_<name>, and fuzz/CMakeLists.txt writes the table
// of names, fuzz_harnesses.inc.
//
//   TestOneInput harness = fuzz::FindHarness("record_gzip");   // nullptr if unknown
//   if (harness == nullptr) fuzz::PrintHarnessNames(stderr);
#ifndef FLOWTRAIN_FUZZ_HARNESS_TABLE_H_
#define FLOWTRAIN_FUZZ_HARNESS_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace flowtrain::fuzz {

using TestOneInput = int (*)(const uint8_t* data, size_t size);

struct Harness {
  std::string_view name;
  TestOneInput test_one_input;
};

}  // namespace flowtrain::fuzz

// The FuzzHarness_<name> declarations and flowtrain::fuzz::kHarnesses.
#include "fuzz_harnesses.inc"

namespace flowtrain::fuzz {

// The harness named `name`, or nullptr.
inline TestOneInput FindHarness(std::string_view name) {
  for (const Harness& known : kHarnesses) {
    if (known.name == name) return known.test_one_input;
  }
  return nullptr;
}

// " checkpoint checkpoint_state ..." : every harness's name, each after a space.
inline void PrintHarnessNames(std::FILE* out) {
  for (const Harness& known : kHarnesses) {
    std::fprintf(out, " %.*s", static_cast<int>(known.name.size()), known.name.data());
  }
}

}  // namespace flowtrain::fuzz

#endif  // FLOWTRAIN_FUZZ_HARNESS_TABLE_H_
