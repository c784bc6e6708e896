// Feeds the input to io::CsvDecoder as CSV records (DecodeCSV's parser): the first byte picks
// the options (delimiter, quoting, an na_value, selected columns), the rest split at '\n' are
// the records, decoded against a float, an int32, an int64 and a string column.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/io/csv_record.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using flowtrain::Tensor;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string> lines;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  flowtrain::io::CsvOptions options;
  options.field_delim = (mode & 1) != 0 ? ';' : ',';
  options.use_quote_delim = (mode & 2) == 0;
  if ((mode & 4) != 0) options.na_value = "NA";
  if ((mode & 8) != 0) options.select_cols = {0, 2, 3, 5};
  // A required int32 column when bit 4 is set.
  std::vector<Tensor> defaults = {Tensor::Scalar<float>(0),
                                  (mode & 16) != 0 ? Tensor(flowtrain::DT_INT32, flowtrain::TensorShape({0}))
                                                   : Tensor::Scalar<int32_t>(0),
                                  Tensor::Scalar<int64_t>(0), Tensor::Scalar<std::string>("")};
  flowtrain::fuzz::AcceptErrors([&] {
    const flowtrain::io::CsvDecoder decoder(options, defaults);
    const std::vector<Tensor> columns = decoder.Decode(Tensor::FromVector<std::string>(lines));
    volatile size_t sum = 0;
    for (const std::string& s : columns[3].flat<std::string>()) sum = sum + s.size();
  });
  return 0;
}
