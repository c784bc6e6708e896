#include "flowtrain/io/idx_file.h"

#include <unistd.h>
#include <zlib.h>

#include <fstream>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

TEST(IdxFile, RoundTripsATinyFile) {
  const std::string path = testing::MakeTempDir("idx") + "/tiny-images-idx3-ubyte";
  Tensor images(DT_UINT8, TensorShape({2, 2, 3}));
  for (int i = 0; i < 12; ++i) images.flat<uint8_t>()[i] = static_cast<uint8_t>(i * 20);
  WriteIdxFile(path, images);
  // The header is big-endian: magic 0x00000803, then the three dimensions.
  std::ifstream raw(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(raw)), {});
  ASSERT_EQ(bytes.size(), 4u + 12u + 12u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\0\0\x08\x03\0\0\0\x02", 8));
  Tensor back = ReadIdxFile(path);
  EXPECT_EQ(back.dtype(), DT_UINT8);
  EXPECT_EQ(back.shape(), TensorShape({2, 2, 3}));
  EXPECT_EQ(back.flat<uint8_t>()[11], 220);

  Tensor values = Tensor::FromVector<int32_t>({1, -2, 70000});
  WriteIdxFile(path + ".i32", values);
  EXPECT_EQ(ReadIdxFile(path + ".i32").flat<int32_t>()[2], 70000);
}

TEST(IdxFile, ErrorsNameTheFile) {
  const std::string dir = testing::MakeTempDir("idx");
  EXPECT_THROW(ReadIdxFile(dir + "/missing"), NotFoundError);
  Tensor images(DT_UINT8, TensorShape({4, 5}));
  WriteIdxFile(dir + "/short", images);
  ASSERT_EQ(::truncate((dir + "/short").c_str(), 4 + 8 + 10), 0);
  try {
    ReadIdxFile(dir + "/short");
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/short ends inside its data"), std::string::npos) << e.what();
  }
}

// A 12-byte header claiming [2^31, 2^31] bytes wrapped the tensor's size to 0 bytes, which were
// then read into; a 20-byte header claiming 1 GB made the reader allocate it.
TEST(IdxFile, HeaderSizesAreCheckedAgainstTheFile) {
  const std::string dir = testing::MakeTempDir("idx");
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
    return dir + "/" + name;
  };
  const std::string huge = write("huge", std::string("\0\0\x0d\x02\x80\0\0\0\x80\0\0\0", 12) + "data");
  testing::ExpectError<DataLossError>([&] { ReadIdxFile(huge); }, {huge, "[2147483648,2147483648]"});
  const std::string big = write("big", std::string("\0\0\x08\x01\x40\0\0\0", 8) + "12345678");
  testing::ExpectError<DataLossError>([&] { ReadIdxFile(big); }, {big, "needs 1073741824 bytes", "holds 8"});

  // Compressed, a few bytes can still claim a gigabyte that they cannot inflate to.
  const std::string gz = dir + "/big.gz";
  gzFile out = gzopen(gz.c_str(), "wb");
  gzwrite(out, "\0\0\x08\x01\x40\0\0\0abcd", 12);
  gzclose(out);
  testing::ExpectError<DataLossError>([&] { ReadIdxFile(gz); },
                                      {gz, "needs 1073741824 bytes, more than its"});
}

TEST(IdxFile, ReadsFashionMnistWhenInstalled) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (::access((dir + "t10k-images-idx3-ubyte.gz").c_str(), R_OK) != 0) {
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed";
  }
  Tensor images = ReadIdxFile(dir + "t10k-images-idx3-ubyte.gz");
  Tensor labels = ReadIdxFile(dir + "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(images.shape(), TensorShape({10000, 28, 28}));
  EXPECT_EQ(labels.shape(), TensorShape({10000}));
  int counts[10] = {};
  for (uint8_t l : labels.flat<uint8_t>()) {
    ASSERT_LT(l, 10);
    ++counts[l];
  }
  for (int c : counts) EXPECT_EQ(c, 1000);  // the test set is balanced
}

}  // namespace
}  // namespace flowtrain::io
