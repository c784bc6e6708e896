// Decodes CSV records into tensors as TF's DecodeCSV op does (RFC 4180 quoting): each record is
// one row, each selected column becomes one output tensor of the records' shape, an empty field
// (or one equal to `na_value`) takes its column's default, and a column without a default is
// required. The DecodeCSV kernel calls it; input pipelines that parse lines themselves may too.
//
//   io::CsvDecoder decoder({.field_delim = ','},
//                          {Tensor::Scalar<int32_t>(0), Tensor::Scalar<float>(0), Tensor(DT_STRING, {0})});
//   std::vector<Tensor> columns = decoder.Decode(lines);   // [n] int32, [n] float, [n] string
//
// Numbers may have spaces around them ("  7 "); floats accept "inf", "nan" and exponents (too
// large a float is inf, as in TF). A quoted field may hold the delimiter, newlines and doubled
// quotes (""), and then parses as a number too; with use_quote_delim false, quotes are
// ordinary characters. Thread safety: Decode may be called from several threads at once.
#ifndef FLOWTRAIN_IO_CSV_RECORD_H_
#define FLOWTRAIN_IO_CSV_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"

namespace flowtrain::io {

struct CsvOptions {
  char field_delim = ',';
  bool use_quote_delim = true;
  std::string na_value;  // a field equal to it counts as missing ("" means none)
  // Indices of the columns to decode, strictly increasing; empty decodes every column. The
  // rest of a record after the last selected column is not looked at.
  std::vector<int64_t> select_cols;
};

class CsvDecoder {
 public:
  // One default per output column: a scalar or a 1-element vector of float, double, int32,
  // int64 or string, or a 0-element vector for a required column. InvalidArgument, in TF's
  // words, for any other default, or select_cols not strictly increasing, negative, or of
  // another length than the defaults.
  CsvDecoder(CsvOptions options, std::vector<Tensor> defaults);

  // The columns of `records` (a string tensor of any shape), each of the records' shape.
  // InvalidArgument naming the record's index (and the field's) for a record with another
  // number of fields, a required field that is missing, a field that is not a number of its
  // column's type, or bad quoting; TF's texts ("Expect 3 fields but have 2 in record 0").
  std::vector<Tensor> Decode(const Tensor& records) const;

  // Splits `record` (record number `index`, for errors) into its fields as views, unquoting
  // into `unescaped` where needed; with select_cols, only as far as the last selected column.
  void SplitFields(std::string_view record, int64_t index, std::vector<std::string_view>* fields,
                   std::vector<std::string>* unescaped) const;

 private:
  CsvOptions options_;
  std::vector<Tensor> defaults_;
  std::vector<DataType> types_;
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_CSV_RECORD_H_
