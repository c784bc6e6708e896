// Feeds the input to io::CheckpointReader as a checkpoint prefix of one shard: a 4-byte
// little-endian length n, then n bytes of `.index` (a LevelDB table of BundleEntryProtos),
// then the `.data-00000-of-00001` file. Lists, looks up and verifies every tensor, as
// `flowtrain inspect-checkpoint --all` does.
#include <cstdint>
#include <cstring>
#include <string>

#include "flowtrain/io/checkpoint_reader.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint32_t index_size = 0;
  if (size >= 4) std::memcpy(&index_size, data, 4);
  const size_t header = size >= 4 ? 4 : size;
  const size_t index_bytes = std::min<size_t>(index_size, size - header);
  flowtrain::fuzz::WriteScratchFile("ckpt.index", data + header, index_bytes);
  flowtrain::fuzz::WriteScratchFile("ckpt.data-00000-of-00001", data + header + index_bytes,
                                    size - header - index_bytes);
  flowtrain::fuzz::AcceptErrors([&] {
    flowtrain::io::CheckpointReader reader(flowtrain::fuzz::ScratchDir() + "/ckpt");
    for (const std::string& key : reader.bundle().ListKeys()) {
      flowtrain::fuzz::AcceptErrors([&] {
        reader.bundle().LookupDtypeAndShape(key);
        reader.GetTensor(key);
      });
    }
    reader.GetVariableToShapeMap();
    reader.DebugString();
    reader.bundle().VerifyAll();
  });
  return 0;
}
