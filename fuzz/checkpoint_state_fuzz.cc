// Feeds the input to train::GetCheckpointState and train::LatestCheckpoint as a model
// directory's `checkpoint` state file (protobuf text format).
#include <cstdint>
#include <string>

#include "flowtrain/core/file_util.h"
#include "flowtrain/train/checkpoint_management.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string* const dir = [] {
    auto* d = new std::string(flowtrain::fuzz::ScratchDir() + "/model");
    flowtrain::CreateDirectories(*d);
    return d;
  }();
  flowtrain::fuzz::WriteScratchFile("model/checkpoint", data, size);
  flowtrain::fuzz::AcceptErrors([&] { flowtrain::train::GetCheckpointState(*dir); });
  flowtrain::fuzz::AcceptErrors([&] { flowtrain::train::LatestCheckpoint(*dir); });
  return 0;
}
