// The kernel of DecodeCSV: io::CsvDecoder over the records, the defaults taken from the inputs
// of each run (as TF's op takes them).
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/io/csv_record.h"

namespace flowtrain {
namespace {

class DecodeCSVOp : public OpKernel {
 public:
  explicit DecodeCSVOp(OpKernelConstruction& c) : OpKernel(c) {
    const std::string delim = c.GetAttr<std::string>("field_delim");
    if (delim.size() != 1) InvalidArgument("field_delim should be only 1 char");
    options_.field_delim = delim[0];
    options_.use_quote_delim = c.GetAttr<bool>("use_quote_delim");
    options_.na_value = c.GetAttr<std::string>("na_value");
    options_.select_cols = c.GetAttr<std::vector<int64_t>>("select_cols");
  }
  void Compute(OpKernelContext* ctx) override {
    std::vector<Tensor> defaults;
    for (int i = 1; i < ctx->num_inputs(); ++i) defaults.push_back(ctx->input(i));
    const io::CsvDecoder decoder(options_, std::move(defaults));
    std::vector<Tensor> columns = decoder.Decode(ctx->input(0));
    for (int i = 0; i < ctx->num_outputs(); ++i) ctx->set_output(i, std::move(columns[i]));
  }

 private:
  io::CsvOptions options_;
};
FT_REGISTER_KERNEL("DecodeCSV", DecodeCSVOp);

}  // namespace
}  // namespace flowtrain
