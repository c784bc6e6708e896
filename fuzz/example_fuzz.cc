// Feeds the input to io::ExampleParser as one serialized tf.train.Example, parsed for dense
// features of every dtype (one with a default) and sparse ones of every dtype; the seeds use
// these keys.
#include <cstdint>
#include <string>

#include "flowtrain/core/tensor.h"
#include "flowtrain/io/example_parser.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using flowtrain::DT_FLOAT, flowtrain::DT_INT64, flowtrain::DT_STRING, flowtrain::Tensor,
      flowtrain::TensorShape;
  static const flowtrain::io::ExampleParser* const parser =
      new flowtrain::io::ExampleParser({{.key = "tags", .dtype = DT_STRING},
                                        {.key = "ids", .dtype = DT_INT64},
                                        {.key = "weights", .dtype = DT_FLOAT}},
                                       {{.key = "image", .dtype = DT_FLOAT, .shape = TensorShape({5})},
                                        {.key = "label", .dtype = DT_INT64, .shape = TensorShape({})},
                                        {.key = "name",
                                         .dtype = DT_STRING,
                                         .shape = TensorShape({}),
                                         .default_value = Tensor::Scalar<std::string>("none")}});
  const Tensor serialized =
      Tensor::FromVector<std::string>({std::string(reinterpret_cast<const char*>(data), size)});
  flowtrain::fuzz::AcceptErrors([&] { parser->Parse(serialized); });
  return 0;
}
