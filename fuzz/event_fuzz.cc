// Feeds the input to summary::EventAccumulator as one event file (the reader behind
// `flowtrain events`) and decodes every tensor and the graph it keeps.
#include <cstdint>
#include <string>

#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/summary/event_accumulator.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = flowtrain::fuzz::WriteScratchFile("events.out.tfevents.1.fuzz", data, size);
  flowtrain::fuzz::AcceptErrors([&] {
    flowtrain::summary::EventAccumulator run(path);
    run.Reload();
    const flowtrain::summary::RunTags tags = run.GetTags();
    for (const std::string& tag : tags.scalars) run.Scalars(tag);
    for (const std::string& tag : tags.histograms) run.Histograms(tag);
    for (const std::string& tag : tags.images) run.Images(tag);
    for (const std::string& tag : tags.audio) run.Audio(tag);
    for (const std::string& tag : tags.tensors) {
      for (const flowtrain::summary::TensorEvent& event : run.Tensors(tag)) {
        flowtrain::fuzz::AcceptErrors([&] { flowtrain::TensorFromProto(event.tensor); });
      }
    }
    run.Graph();
  });
  return 0;
}
