// CsvDecoder against the behaviour of TF 2.21's DecodeCSV (each case below was run there).
#include "flowtrain/io/csv_record.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

Tensor Records(std::vector<std::string> lines) { return Tensor::FromVector<std::string>(lines); }
Tensor Required(DataType t) { return Tensor(t, TensorShape({0})); }

TEST(CsvDecoder, DecodesEachColumnWithDefaultsForEmptyFields) {
  CsvDecoder d(
      {}, {Tensor::Scalar<int32_t>(0), Tensor::FromVector<float>({7.0f}), Tensor::Scalar<std::string>("")});
  std::vector<Tensor> out = d.Decode(Records({"1,2.5,a", "2,,b", " 3 , 4.5 ,c d "}));
  EXPECT_EQ(testing::Values<int32_t>(out[0]), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(testing::Values<float>(out[1]), (std::vector<float>{2.5f, 7.0f, 4.5f}));
  EXPECT_EQ(testing::Values<std::string>(out[2]), (std::vector<std::string>{"a", "b", "c d "}));
  // The records' shape carries over; a trailing delimiter is one more, empty, field.
  CsvDecoder three({}, {Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(9)});
  std::vector<Tensor> grid =
      three.Decode(Tensor::FromVector<std::string>({"1,2,", "+3,-0,4"}, TensorShape({2, 1})));
  EXPECT_EQ(grid[0].shape(), TensorShape({2, 1}));
  EXPECT_EQ(testing::Values<int64_t>(grid[2]), (std::vector<int64_t>{9, 4}));
}

TEST(CsvDecoder, QuotesDelimitersAndMissingValuesAsTfDoes) {
  CsvDecoder d(
      {}, {Tensor::Scalar<std::string>(""), Tensor::Scalar<int32_t>(0), Tensor::Scalar<std::string>("")});
  std::vector<Tensor> out = d.Decode(Records({"\"q,1\",\"2\",\"x\"\"y\""}));
  EXPECT_EQ(out[0].flat<std::string>()[0], "q,1");
  EXPECT_EQ(out[1].flat<int32_t>()[0], 2);
  EXPECT_EQ(out[2].flat<std::string>()[0], "x\"y");
  CsvDecoder plain({.use_quote_delim = false}, {Tensor::Scalar<std::string>(""), Tensor::Scalar<int32_t>(0),
                                                Tensor::Scalar<std::string>("")});
  EXPECT_EQ(plain.Decode(Records({"a\"b,2,c"}))[0].flat<std::string>()[0], "a\"b");
  CsvDecoder semi({.field_delim = ';', .na_value = "NA"},
                  {Tensor::Scalar<int32_t>(0), Tensor::Scalar<int32_t>(5), Tensor::Scalar<int32_t>(0)});
  EXPECT_EQ(testing::Values<int32_t>(semi.Decode(Records({"1;NA;3"}))[1]), (std::vector<int32_t>{5}));
  CsvDecoder selected({.select_cols = {1, 3}}, {Tensor::Scalar<int32_t>(0), Tensor::Scalar<int32_t>(0)});
  std::vector<Tensor> cols = selected.Decode(Records({"1,2,3,4", "5,6,7,8,\"never looked at"}));
  EXPECT_EQ(testing::Values<int32_t>(cols[0]), (std::vector<int32_t>{2, 6}));
  EXPECT_EQ(testing::Values<int32_t>(cols[1]), (std::vector<int32_t>{4, 8}));
  testing::ExpectInvalidArgument([&] { selected.Decode(Records({"1,2"})); },
                                 "Expect 2 fields but have 1 in record 0");
}

TEST(CsvDecoder, FloatsTakeInfNanAndSaturate) {
  CsvDecoder d({}, {Tensor::Scalar<float>(0), Tensor::Scalar<float>(0), Tensor::Scalar<float>(0),
                    Tensor::Scalar<double>(0)});
  std::vector<Tensor> out = d.Decode(Records({"inf,nan,1e400,-1e-400"}));
  EXPECT_TRUE(std::isinf(out[0].flat<float>()[0]));
  EXPECT_TRUE(std::isnan(out[1].flat<float>()[0]));
  EXPECT_EQ(out[2].flat<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[3].flat<double>()[0], 0.0);
}

TEST(CsvDecoder, BadRecordsAreTfsErrors) {
  const std::vector<Tensor> defaults = {Tensor::Scalar<int32_t>(0), Tensor::Scalar<float>(0),
                                        Tensor::Scalar<std::string>("")};
  CsvDecoder d({}, defaults);
  auto expect = [&](const std::string& record, std::string_view message) {
    testing::ExpectInvalidArgument([&] { d.Decode(Records({"1,2,ok", record})); }, message);
  };
  expect("1,2.5", "Expect 3 fields but have 2 in record 1");
  expect("1,2.5,a,b", "Expect 3 fields but have 4 in record 1");
  expect("", "Expect 3 fields but have 0 in record 1");
  expect("1,x,a", "Field 1 in record 1 is not a valid float: x");
  expect("x,1.0,a", "Field 0 in record 1 is not a valid int32: x");
  expect("99999999999,1.0,a", "Field 0 in record 1 is not a valid int32: 99999999999");
  expect("1.5,1,a", "Field 0 in record 1 is not a valid int32: 1.5");
  expect("0x10,1,a", "Field 0 in record 1 is not a valid int32: 0x10");
  expect("1,1.0f,a", "Field 1 in record 1 is not a valid float: 1.0f");
  expect("1,2,a\"b", "Unquoted fields cannot have quotes/CRLFs inside");
  expect("1,2,a\r", "Unquoted fields cannot have quotes/CRLFs inside");
  expect("1,2,\"ab\"c", "Quote inside a string has to be escaped by another quote");
  expect("1,2,\"ab", "Quoted field has to end with quote followed by delim or end");
  CsvDecoder required({.na_value = "NA"}, {Required(DT_INT32), Tensor::Scalar<float>(0)});
  testing::ExpectInvalidArgument([&] { required.Decode(Records({",1.0"})); },
                                 "Field 0 is required but missing in record 0!");
  testing::ExpectInvalidArgument([&] { required.Decode(Records({"NA,1.0"})); },
                                 "Field 0 is required but missing in record 0!");
  EXPECT_EQ(
      CsvDecoder({}, {Tensor::Scalar<int64_t>(0)}).Decode(Records({"99999999999"}))[0].flat<int64_t>()[0],
      99999999999);
}

TEST(CsvDecoder, BadDefaultsAndOptionsAreTfsErrors) {
  testing::ExpectInvalidArgument(
      [] {
        CsvDecoder({}, {Tensor::FromVector<int32_t>({0, 1})});
      },
      "There should only be 1 default per field but field 0 has 2");
  testing::ExpectInvalidArgument(
      [] {
        CsvDecoder({}, {Tensor(DT_INT32, TensorShape({1, 1}))});
      },
      "Shape of a default must be a length-0 or length-1 vector, or a scalar.");
  testing::ExpectInvalidArgument([] { CsvDecoder({}, {Tensor::Scalar<bool>(true)}); },
                                 "field 0 has a default of bool");
  testing::ExpectInvalidArgument(
      [] {
        CsvDecoder({.select_cols = {3, 1}}, {Tensor::Scalar<int32_t>(0), Tensor::Scalar<int32_t>(0)});
      },
      "select_cols is not strictly increasing.");
  testing::ExpectInvalidArgument(
      [] {
        CsvDecoder({.select_cols = {0}}, {Tensor::Scalar<int32_t>(0), Tensor::Scalar<int32_t>(0)});
      },
      "Length of select_cols and record_defaults do not match.");
}

}  // namespace
}  // namespace flowtrain::io
