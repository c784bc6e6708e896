// The harnesses without libFuzzer, all in one program: runs the harness named by the first
// argument on every file named after it and every file in the directories named there, so
// that the inputs of fuzz/regressions/ (and the seeds) run in the ordinary test builds.
//
//   fuzz_replay record fuzz/regressions/record build/fuzz-seeds/record
//
// Prints how many inputs it ran. Exits 1 if the harness is unknown, an argument is neither a
// file nor a directory or a directory holds no file; an input that trips the harness crashes
// the process, as it would under libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/harness_table.h"

namespace {

using flowtrain::fuzz::TestOneInput;

void RunOne(TestOneInput harness, const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
  harness(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  TestOneInput harness = argc > 1 ? flowtrain::fuzz::FindHarness(argv[1]) : nullptr;
  if (harness == nullptr) {
    std::fprintf(stderr, "usage: fuzz_replay HARNESS INPUT...; HARNESS is one of:");
    flowtrain::fuzz::PrintHarnessNames(stderr);
    std::fprintf(stderr, "\n");
    return 1;
  }
  int runs = 0;
  for (int i = 2; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_regular_file(arg)) {
      RunOne(harness, arg);
      ++runs;
    } else if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      if (files.empty()) {
        std::fprintf(stderr, "replay: %s holds no input\n", argv[i]);
        return 1;
      }
      std::sort(files.begin(), files.end());  // the same order on every run
      for (const auto& file : files) RunOne(harness, file);
      runs += static_cast<int>(files.size());
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", argv[i]);
      return 1;
    }
  }
  std::printf("replay: %d inputs ran without a finding\n", runs);
  return 0;
}
