#include "flowtrain/io/npy_file.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

// A .npy file of version `major`.0 with `header` (padded by nothing) and `data`.
std::string Npy(const std::string& header, const std::string& data, int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t n = header.size();
  out += static_cast<char>(n & 0xFF);
  out += static_cast<char>((n >> 8) & 0xFF);
  if (major > 1) {
    out += static_cast<char>((n >> 16) & 0xFF);
    out += static_cast<char>((n >> 24) & 0xFF);
  }
  return out + header + data;
}

template <typename T>
std::string Bytes(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return out;
}

TEST(NpyFile, WritesWhatNumpySaveWrites) {
  // np.save(f, np.zeros((2, 3), np.float32)) begins with these 128 bytes.
  const std::string bytes = SerializeNpy(Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, TensorShape({2, 3})));
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(bytes.substr(0, 10), std::string("\x93NUMPY\x01\x00v\x00", 10));
  EXPECT_EQ(bytes.substr(10, dict.size()), dict);
  EXPECT_EQ(bytes.substr(10 + dict.size(), 127 - 10 - dict.size()), std::string(127 - 10 - dict.size(), ' '));
  EXPECT_EQ(bytes[127], '\n');
  // A scalar has no growth room; a vector's shape is "(n,)"; strings are S<longest>, at least S1.
  EXPECT_NE(SerializeNpy(Tensor::Scalar<double>(3)).find("'shape': (), }"), std::string::npos);
  EXPECT_NE(SerializeNpy(Tensor::FromVector<std::string>({"ab", ""})).find("'descr': '|S2'"),
            std::string::npos);
  EXPECT_NE(SerializeNpy(Tensor::FromVector<std::string>({""})).find("'descr': '|S1'"), std::string::npos);
  EXPECT_NE(SerializeNpy(Tensor::FromVector<int64_t>({1, 2, 3})).find("'shape': (3,), }"), std::string::npos);
  for (const std::string& written :
       {SerializeNpy(Tensor::Scalar<bool>(true)), SerializeNpy(Tensor::FromVector<std::string>({"abc"}))}) {
    EXPECT_EQ(written.find('\n') + 1, 128u) << written;
  }
}

TEST(NpyFile, EveryDtypeRoundTrips) {
  const std::string dir = testing::MakeTempDir("npy");
  std::vector<Tensor> tensors = {
      Tensor::FromVector<bool>({true, false, true}),
      Tensor::FromVector<int8_t>({-1, 2}),
      Tensor::FromVector<uint8_t>({255, 0}),
      Tensor::FromVector<int16_t>({-300, 7}),
      Tensor::FromVector<uint16_t>({65535}),
      Tensor::FromVector<int32_t>({-70000, 1, 2, 3}, TensorShape({2, 2})),
      Tensor::FromVector<uint32_t>({4000000000u}),
      Tensor::FromVector<int64_t>({-(int64_t{1} << 40)}),
      Tensor::FromVector<uint64_t>({~uint64_t{0}}),
      Tensor::FromVector<half>({half(1.5f), half(-2.0f)}),
      Tensor::FromVector<float>({0.5f, -1}, TensorShape({1, 2, 1})),
      Tensor::Scalar<double>(2.25),
      Tensor::FromVector<std::string>({"a", "", std::string("b\0c", 3)}),
      Tensor(DT_FLOAT, TensorShape({0, 3})),
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string path = JoinPath(dir, StrCat(i, ".npy"));
    WriteNpyFile(path, tensors[i]);
    const Tensor back = ReadNpyFile(path);
    EXPECT_EQ(back.dtype(), tensors[i].dtype()) << i;
    EXPECT_EQ(back.shape(), tensors[i].shape()) << i;
    EXPECT_EQ(back.DebugString(100), tensors[i].DebugString(100)) << i;
  }
}

TEST(NpyFile, ReadsByteOrdersAndVersions) {
  const Tensor big = ParseNpy(Npy("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n",
                                  std::string("\0\0\1\0\xff\xff\xff\xfe", 8)),
                              "big.npy");
  EXPECT_EQ(big.flat<int32_t>()[0], 256);
  EXPECT_EQ(big.flat<int32_t>()[1], -2);
  const Tensor big_double = ParseNpy(
      Npy("{'descr': '>f8', 'fortran_order': False, 'shape': (), }", std::string("\x40\x02\0\0\0\0\0\0", 8)),
      "f.npy");
  EXPECT_EQ(big_double.scalar<double>(), 2.25);
  // Version 2.0 and 3.0 have a 4-byte header length; double quotes and no trailing comma parse.
  for (int major : {2, 3}) {
    const Tensor t = ParseNpy(Npy("{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": \"<u2\"}",
                                  Bytes<uint16_t>({7, 9}), major),
                              "v.npy");
    EXPECT_EQ(t.shape(), TensorShape({1, 2})) << major;
    EXPECT_EQ(t.flat<uint16_t>()[1], 9) << major;
  }
  const Tensor flag = ParseNpy(
      Npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\0\1\2", 3)), "b.npy");
  EXPECT_EQ(flag.DebugString(), Tensor::FromVector<bool>({false, true, true}).DebugString());
  // Trailing bytes are ignored, as numpy.load ignores them.
  EXPECT_EQ(ParseNpy(Npy("{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }", "xyz"), "t.npy")
                .flat<uint8_t>()[0],
            'x');
}

TEST(NpyFile, FortranOrderIsTransposedIntoCOrder) {
  // np.asfortranarray([[1, 2, 3], [4, 5, 6]]) stores 1 4 2 5 3 6.
  const Tensor t = ParseNpy(
      Npy("{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }", Bytes<int64_t>({1, 4, 2, 5, 3, 6})),
      "f.npy");
  EXPECT_EQ(t.DebugString(6),
            Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})).DebugString(6));
  // Three axes [2,2,2]: element (i,j,k) is stored at i + 2j + 4k.
  std::string stored;
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 2; ++i) stored += static_cast<char>(100 * i + 10 * j + k);
  const Tensor cube =
      ParseNpy(Npy("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 2, 2), }", stored), "c.npy");
  const auto v = cube.flat<uint8_t>();
  EXPECT_EQ(v[1], 1);    // (0,0,1)
  EXPECT_EQ(v[2], 10);   // (0,1,0)
  EXPECT_EQ(v[4], 100);  // (1,0,0)
  EXPECT_EQ(v[7], 111);
  // Fortran strings too.
  const Tensor s =
      ParseNpy(Npy("{'descr': '|S1', 'fortran_order': True, 'shape': (2, 2), }", "acbd"), "s.npy");
  EXPECT_EQ(s.flat<std::string>()[1], "b");
  EXPECT_EQ(s.flat<std::string>()[2], "c");
}

TEST(NpyFile, ReadsBytesAndUnicodeStrings) {
  const Tensor bytes = ParseNpy(
      Npy("{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }", std::string("ab\0xyz", 6)), "s.npy");
  EXPECT_EQ(bytes.flat<std::string>()[0], "ab");
  EXPECT_EQ(bytes.flat<std::string>()[1], "xyz");
  // np.array(['hé', '€']) is '<U2': UCS-4 code points, NUL padded; read as UTF-8.
  const std::string ucs4 = Bytes<uint32_t>({'h', 0xE9, 0x20AC, 0});
  const Tensor text =
      ParseNpy(Npy("{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }", ucs4), "u.npy");
  EXPECT_EQ(text.flat<std::string>()[0], "h\xc3\xa9");
  EXPECT_EQ(text.flat<std::string>()[1], "\xe2\x82\xac");
  const Tensor big = ParseNpy(
      Npy("{'descr': '>U1', 'fortran_order': False, 'shape': (), }", std::string("\0\x01\xF6\x00", 4)),
      "u.npy");
  EXPECT_EQ(big.scalar<std::string>(), "\xf0\x9f\x98\x80");
}

TEST(NpyFile, HostileHeadersAreNamedErrors) {
  auto expect_data_loss = [](const std::string& bytes, std::initializer_list<std::string_view> parts) {
    testing::ExpectError<DataLossError>([&] { ParseNpy(bytes, "bad.npy"); }, parts);
  };
  auto expect_invalid = [](const std::string& bytes, std::initializer_list<std::string_view> parts) {
    testing::ExpectError<InvalidArgumentError>([&] { ParseNpy(bytes, "bad.npy"); }, parts);
  };
  const std::string f4 = Bytes<float>({1, 2});
  expect_data_loss("PK\3\4 a zip file", {"bad.npy", "magic"});
  expect_data_loss("", {"bad.npy", "magic"});
  expect_data_loss(std::string("\x93NUMPY\x01\x00\xff\x00{}", 12),
                   {"bad.npy", "header length 255", "runs past"});
  expect_data_loss(std::string("\x93NUMPY\x02\x00\x01\x00", 10), {"bad.npy", "header length"});
  expect_invalid(Npy("{}", "", 4), {"bad.npy", "version 4.0"});
  expect_data_loss(Npy("[1, 2]", f4), {"bad.npy", "not a dict"});
  expect_data_loss(Npy("'descr'", f4), {"bad.npy", "not a dict"});
  expect_data_loss(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", f4), {"bad.npy", "header"});
  expect_data_loss(Npy("{'descr': '<f4', 'fortran_order': False}", f4), {"bad.npy", "lacks the key 'shape'"});
  expect_data_loss(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f4),
                   {"unknown key 'x'"});
  expect_data_loss(Npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", f4), {"'fortran_order'"});
  expect_data_loss(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", f4), {"'shape'"});
  expect_data_loss(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': 2}", f4),
                   {"'shape' is not a tuple"});
  expect_data_loss(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", f4),
                   {"beyond 64 bits"});
  expect_data_loss(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(40, '(') + "}", f4),
                   {"nests deeper"});
  // Shapes whose product overflows, or needs more bytes than the file has.
  expect_data_loss(Npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", f4),
                   {"bad.npy", "(4294967296, 4294967296)", "overflows"});
  expect_data_loss(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000)}", f4),
                   {"bad.npy", "ends inside its .npy data", "needs 4000000000 bytes", "holds 8"});
  expect_data_loss(
      Npy("{'descr': '<U1', 'fortran_order': False, 'shape': (1,)}", Bytes<uint32_t>({0x110000})),
      {"beyond Unicode"});
  // Dtypes flowtrain does not read.
  expect_invalid(Npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,)}", "xxxxxxxx"),
                 {"bad.npy", "object"});
  expect_invalid(Npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,)}", f4),
                 {"bad.npy", "complex64"});
  expect_invalid(Npy("{'descr': '<c16', 'fortran_order': False, 'shape': (1,)}", f4), {"complex128"});
  expect_invalid(Npy("{'descr': '<f16', 'fortran_order': False, 'shape': (1,)}", f4), {"bad.npy", "'<f16'"});
  expect_invalid(Npy("{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (1,)}", f4), {"'<M8[ns]'"});
  expect_invalid(Npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", f4), {"structured"});
  expect_invalid(Npy("{'descr': '|S', 'fortran_order': False, 'shape': (1,)}", f4), {"no length"});
}

TEST(NpyFile, FilesAreNamed) {
  const std::string dir = testing::MakeTempDir("npy");
  testing::ExpectError<NotFoundError>([&] { ReadNpyFile(dir + "/missing.npy"); }, {dir + "/missing.npy"});
  WriteFileAtomically(dir + "/short.npy", SerializeNpy(Tensor::FromVector<float>({1, 2, 3})).substr(0, 130));
  testing::ExpectError<DataLossError>([&] { ReadNpyFile(dir + "/short.npy"); },
                                      {dir + "/short.npy", "needs 12 bytes", "holds 2"});
  testing::ExpectError<InvalidArgumentError>(
      [&] { WriteNpyFile(dir + "/b.npy", Tensor(DT_BFLOAT16, TensorShape({1}))); }, {"bfloat16"});
  EXPECT_FALSE(FileExists(dir + "/b.npy"));
}

TEST(NpyFile, HeadersBeyond65535BytesUseVersionTwo) {
  // 30000 axes of size 1: "1, " each, a header of about 90000 bytes.
  const TensorShape shape(std::vector<int64_t>(30000, 1));
  const std::string bytes = SerializeNpy(Tensor::FromVector<float>({4.5f}, shape));
  EXPECT_EQ(bytes.substr(6, 2), std::string("\x02\x00", 2));
  EXPECT_EQ((bytes.find('\n') + 1) % 64, 0u);
  const Tensor back = ParseNpy(bytes, "v2.npy");
  EXPECT_EQ(back.shape(), shape);
  EXPECT_EQ(back.flat<float>()[0], 4.5f);
  EXPECT_EQ(SerializeNpy(Tensor::FromVector<float>({1}))[6], '\x01');
}

}  // namespace
}  // namespace flowtrain::io
