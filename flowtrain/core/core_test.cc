#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"

#include "flowtrain/core/allocator.h"
#include "flowtrain/core/internal/crc32c.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/core/thread_pool.h"
#include "flowtrain/core/types.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

TEST(Error, ThrowErrorThrowsTheMatchingSubclass) {
  EXPECT_THROW(ThrowError(Code::kOutOfRange, "end"), OutOfRangeError);
  EXPECT_THROW(ThrowError(Code::kAborted, "x"), AbortedError);
  EXPECT_THROW(ThrowError(Code::kUnavailable, "x"), UnavailableError);
  try {
    InvalidArgument("bad shape ", 3, " for op 'add'");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument);
    EXPECT_STREQ(e.what(), "bad shape 3 for op 'add'");
    EXPECT_EQ(e.ToString(), "InvalidArgument: bad shape 3 for op 'add'");
  }
}

TEST(Error, CodesHaveTensorFlowNumbers) {
  EXPECT_EQ(static_cast<int>(Code::kCancelled), 1);
  EXPECT_EQ(static_cast<int>(Code::kInvalidArgument), 3);
  EXPECT_EQ(static_cast<int>(Code::kAborted), 10);
  EXPECT_EQ(static_cast<int>(Code::kOutOfRange), 11);
  EXPECT_EQ(static_cast<int>(Code::kUnavailable), 14);
  EXPECT_EQ(static_cast<int>(Code::kDataLoss), 15);
  EXPECT_EQ(CodeName(Code::kFailedPrecondition), "FailedPrecondition");
}

TEST(Error, RethrowWithContextKeepsClass) {
  try {
    try {
      NotFound("file x");
    } catch (const Error& e) {
      RethrowWithContext(e, "While restoring: ");
    }
  } catch (const NotFoundError& e) {
    EXPECT_STREQ(e.what(), "While restoring: file x");
    return;
  }
  FAIL() << "not rethrown as NotFoundError";
}

TEST(Error, ErrorFromExceptionKeepsCode) {
  std::exception_ptr p;
  try {
    DataLoss("corrupt");
  } catch (...) {
    p = std::current_exception();
  }
  EXPECT_EQ(ErrorFromException(p).code(), Code::kDataLoss);
  try {
    throw std::runtime_error("plain");
  } catch (...) {
    p = std::current_exception();
  }
  EXPECT_EQ(ErrorFromException(p).code(), Code::kUnknown);
}

TEST(DataType, NumbersAndNamesMatchTensorFlow) {
  EXPECT_EQ(DT_FLOAT, 1);
  EXPECT_EQ(DT_DOUBLE, 2);
  EXPECT_EQ(DT_INT32, 3);
  EXPECT_EQ(DT_UINT8, 4);
  EXPECT_EQ(DT_INT16, 5);
  EXPECT_EQ(DT_INT8, 6);
  EXPECT_EQ(DT_STRING, 7);
  EXPECT_EQ(DT_INT64, 9);
  EXPECT_EQ(DT_BOOL, 10);
  EXPECT_EQ(DT_BFLOAT16, 14);
  EXPECT_EQ(DT_HALF, 19);
  EXPECT_EQ(DataTypeString(DT_INT64), "int64");
  EXPECT_EQ(DataTypeString(MakeRefType(DT_FLOAT)), "float_ref");
  EXPECT_EQ(DataTypeEnumName(DT_FLOAT), "DT_FLOAT");
  EXPECT_EQ(DataTypeFromString("DT_HALF"), DT_HALF);
  EXPECT_EQ(DataTypeFromString("int32"), DT_INT32);
  EXPECT_EQ(DataTypeFromString("nonsense"), DT_INVALID);
  EXPECT_EQ(DataTypeSize(DT_HALF), 2u);
  EXPECT_EQ(DataTypeSize(DT_BFLOAT16), 2u);
  EXPECT_EQ(DataTypeSize(DT_INT64), 8u);
  EXPECT_EQ(BaseType(MakeRefType(DT_INT32)), DT_INT32);
  EXPECT_EQ(DataTypeToEnum<half>::value, DT_HALF);
  EXPECT_EQ(DataTypeToEnum<bfloat16>::value, DT_BFLOAT16);
}

TEST(TensorShape, Basics) {
  TensorShape s({2, 3, 4});
  EXPECT_EQ(s.dims(), 3);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.DebugString(), "[2,3,4]");
  s.RemoveDim(1);
  EXPECT_EQ(s.DebugString(), "[2,4]");
  s.InsertDim(0, 5);
  EXPECT_EQ(s.num_elements(), 40);
  EXPECT_EQ(TensorShape().num_elements(), 1);
  EXPECT_EQ(TensorShape().DebugString(), "[]");
  EXPECT_THROW(TensorShape({-1, 2}), InvalidArgumentError);
  EXPECT_THROW(TensorShape({int64_t{1} << 40, int64_t{1} << 40}), InvalidArgumentError);
}

// The element count is checked with __builtin_mul_overflow, including via AddDim/set_dim and
// PartialTensorShape; a shape whose bytes overflow is an OOM, not a wrapped allocation (a
// [2^62] string tensor constructed 2^62 strings in a tiny block).
TEST(TensorShape, OverflowingSizesAreInvalidArgument) {
  constexpr int64_t k62 = int64_t{1} << 62;
  EXPECT_EQ(TensorShape({int64_t{1} << 31, int64_t{1} << 31}).num_elements(), k62);
  EXPECT_EQ(TensorShape({k62, 1}).num_elements(), k62);
  testing::ExpectInvalidArgument(
      [&] {
        TensorShape({k62, 4});
      },
      {"Shape [4611686018427387904,4] has too many elements"});
  testing::ExpectInvalidArgument([&] { TensorShape({k62, 2}); }, {"too many elements"});
  testing::ExpectInvalidArgument([&] { TensorShape({3, 3, k62}); }, {"too many elements"});
  TensorShape s({k62});
  testing::ExpectInvalidArgument([&] { s.AddDim(4); }, {"too many elements"});
  TensorShape t({k62, 1});
  testing::ExpectInvalidArgument([&] { t.set_dim(1, 2); }, {"too many elements"});
  testing::ExpectInvalidArgument(
      [&] {
        (void)PartialTensorShape({k62, 4}).num_elements();
      },
      {"too many elements"});
  EXPECT_EQ(PartialTensorShape({k62, -1, 4}).num_elements(), -1);
  testing::ExpectInvalidArgument([&] { CheckedMultiplySizes(k62, 4, "Op", "dim 0"); },
                                 {"Op: dim 0: 4611686018427387904 * 4 overflows int64"});
  testing::ExpectInvalidArgument(
      [&] { CheckedAddSizes(std::numeric_limits<int64_t>::max(), 1, "Op", "sum"); },
      {"Op: sum: ", "overflows int64"});
  testing::ExpectInvalidArgument(
      [&] {
        CheckedNumElements(std::vector<int64_t>{k62, 4}, "Tile");
      },
      {"Tile: shape [4611686018427387904,4] has too many elements"});
  EXPECT_EQ(CheckedMultiplySizes(k62, 1, "Op", ""), k62);
  // Valid shapes too large in bytes.
  EXPECT_THROW(Tensor(DT_STRING, TensorShape({k62})), ResourceExhaustedError);
  EXPECT_THROW(Tensor(DT_FLOAT, TensorShape({k62})), ResourceExhaustedError);
  EXPECT_THROW(Tensor(DT_DOUBLE, TensorShape({k62 / 4, 2})), ResourceExhaustedError);
}

// dim_size past the rank (or negative, or of an unknown rank) is an error naming the
// dimension and the shape, not a read past the dims.
TEST(TensorShape, DimSizeOutOfRangeIsInvalidArgument) {
  const TensorShape shape({2, 3});
  EXPECT_EQ(shape.dim_size(1), 3);
  testing::ExpectInvalidArgument([&] { (void)shape.dim_size(2); },
                                 {"TensorShape::dim_size: dimension 2 is out of range for shape [2,3]"});
  testing::ExpectInvalidArgument([&] { (void)shape.dim_size(-1); }, {"dimension -1"});
  testing::ExpectInvalidArgument([&] { (void)TensorShape().dim_size(0); }, {"shape []"});
  const PartialTensorShape partial({-1, 4});
  EXPECT_EQ(partial.dim_size(0), -1);
  testing::ExpectInvalidArgument([&] { (void)partial.dim_size(2); },
                                 {"PartialTensorShape::dim_size: dimension 2", "[?,4]"});
  testing::ExpectInvalidArgument([&] { (void)PartialTensorShape::Unknown().dim_size(0); }, {"<unknown>"});
  const Tensor t(DT_FLOAT, TensorShape({5}));
  testing::ExpectInvalidArgument([&] { (void)t.dim_size(1); }, {"dimension 1", "[5]"});
}

// An empty Tensor (default-constructed; a fetched Operation's result) read as values.
TEST(Tensor, EmptyTensorAccessIsInvalidArgument) {
  const Tensor empty;
  EXPECT_FALSE(empty.IsInitialized());
  testing::ExpectInvalidArgument([&] { (void)empty.scalar<float>(); }, {"Tensor is empty", "float"});
  testing::ExpectInvalidArgument([&] { (void)empty.flat<int64_t>(); }, {"Tensor is empty", "int64"});
  testing::ExpectInvalidArgument([&] { (void)empty.data<double>(); }, {"Tensor is empty"});
}

TEST(PartialTensorShape, CompatibilityAndMerge) {
  PartialTensorShape p({-1, 64});
  EXPECT_EQ(p.DebugString(), "[?,64]");
  EXPECT_FALSE(p.IsFullyDefined());
  EXPECT_TRUE(p.IsCompatibleWith(TensorShape({8, 64})));
  EXPECT_FALSE(p.IsCompatibleWith(TensorShape({8, 63})));
  EXPECT_FALSE(p.IsCompatibleWith(PartialTensorShape({8})));
  EXPECT_TRUE(PartialTensorShape::Unknown().IsCompatibleWith(p));
  EXPECT_EQ(PartialTensorShape::Unknown().DebugString(), "<unknown>");
  EXPECT_EQ(p.MergeWith(PartialTensorShape({3, -1})).DebugString(), "[3,64]");
  EXPECT_THROW(p.MergeWith(PartialTensorShape({3, 2})), InvalidArgumentError);
  EXPECT_EQ(PartialTensorShape::UnknownOfRank(2).DebugString(), "[?,?]");
  EXPECT_EQ(PartialTensorShape({2, 2}).AsTensorShape().num_elements(), 4);
  EXPECT_THROW(p.AsTensorShape(), InvalidArgumentError);
}

TEST(Tensor, AllocationIsAlignedAndShared) {
  Tensor t(DT_FLOAT, TensorShape({2, 3}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
  auto v = t.flat<float>();
  ASSERT_EQ(v.size(), 6u);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Tensor copy = t;
  EXPECT_TRUE(copy.SharesBufferWith(t));
  EXPECT_FALSE(t.RefCountIsOne());
  Tensor deep = t.DeepCopy();
  EXPECT_FALSE(deep.SharesBufferWith(t));
  deep.flat<float>()[0] = 42;
  EXPECT_EQ(t.flat<float>()[0], 0.0f);
  EXPECT_EQ(t.DebugString(), "Tensor<type: float shape: [2,3] values: 0 1 2...>");
  copy = Tensor();
  EXPECT_TRUE(t.RefCountIsOne());
}

TEST(Tensor, TypedAccessChecksType) {
  Tensor t = Tensor::Scalar<int64_t>(7);
  EXPECT_EQ(t.scalar<int64_t>(), 7);
  EXPECT_THROW(t.data<float>(), InvalidArgumentError);
  EXPECT_THROW(Tensor::FromVector<float>({1, 2}).scalar<float>(), InvalidArgumentError);
}

TEST(Tensor, StringsReshapeAndSlice) {
  Tensor s = Tensor::FromVector<std::string>({"a", "bb", "ccc", "dddd"}, TensorShape({2, 2}));
  EXPECT_EQ(s.flat<std::string>()[2], "ccc");
  EXPECT_EQ(s.TotalBytes(), 10u);
  Tensor row = s.Slice(1, 2);
  EXPECT_EQ(row.shape(), TensorShape({1, 2}));
  EXPECT_EQ(row.flat<std::string>()[0], "ccc");
  Tensor r = s.Reshaped(TensorShape({4}));
  EXPECT_TRUE(r.SharesBufferWith(s));
  EXPECT_THROW(s.Reshaped(TensorShape({3})), InvalidArgumentError);
  Tensor copy = s.DeepCopy();
  copy.flat<std::string>()[0] = "changed";
  EXPECT_EQ(s.flat<std::string>()[0], "a");
  Tensor b = Tensor::FromVector<bool>({true, false});
  EXPECT_TRUE(b.flat<bool>()[0]);
  EXPECT_FALSE(b.flat<bool>()[1]);
}

TEST(Tensor, EmptyAndExternal) {
  Tensor empty(DT_FLOAT, TensorShape({0, 4}));
  EXPECT_TRUE(empty.IsInitialized());
  EXPECT_EQ(empty.NumElements(), 0);
  EXPECT_FALSE(Tensor().IsInitialized());
  bool released = false;
  {
    std::vector<float> storage = {1, 2, 3};
    Tensor ext = Tensor::WrapExternal(DT_FLOAT, TensorShape({3}), storage.data(), storage.size() * 4,
                                      [&] { released = true; });
    EXPECT_EQ(ext.flat<float>()[2], 3.0f);
  }
  EXPECT_TRUE(released);
  EXPECT_THROW(Tensor(DT_COMPLEX64, TensorShape()), InvalidArgumentError);
}

TEST(Allocator, ReusesFreedBlocks) {
  const AllocatorStats before = DefaultAllocatorStats();
  for (int i = 0; i < 100; ++i) {
    Tensor t(DT_FLOAT, TensorShape({1000}));
    t.flat<float>()[0] = 1;
  }
  const AllocatorStats after = DefaultAllocatorStats();
  EXPECT_LE(after.system_allocations - before.system_allocations, 1);
  EXPECT_GE(after.cache_hits - before.cache_hits, 99);
}

// Small blocks come from a per-thread cache; its statistics still add up when a block is
// freed on another thread than the one that made it and both threads are gone.
TEST(Allocator, SmallBlocksAreCachedPerThreadAndAccountedAcrossThreads) {
  const AllocatorStats before = DefaultAllocatorStats();
  for (int i = 0; i < 100; ++i) {
    Tensor t = Tensor::Scalar<float>(static_cast<float>(i));
    EXPECT_EQ(t.scalar<float>(), static_cast<float>(i));
  }
  const AllocatorStats warm = DefaultAllocatorStats();
  EXPECT_LE(warm.system_allocations - before.system_allocations, 1);
  EXPECT_GE(warm.cache_hits - before.cache_hits, 99);
  EXPECT_EQ(warm.bytes_in_use, before.bytes_in_use);
  {
    Tensor handed_over;
    std::thread maker([&] {
      handed_over = Tensor::Scalar<int32_t>(7);
      for (int i = 0; i < 40; ++i) EXPECT_EQ(Tensor::Scalar<int32_t>(i).scalar<int32_t>(), i);
    });
    maker.join();
    EXPECT_GT(DefaultAllocatorStats().bytes_in_use, before.bytes_in_use);
    std::thread freer([&] { handed_over = Tensor(); });
    freer.join();
  }
  EXPECT_EQ(DefaultAllocatorStats().bytes_in_use, before.bytes_in_use);
}

#if defined(__SANITIZE_ADDRESS__)
// The caches keep freed blocks from the system, so AddressSanitizer could not see a use after
// free of a tensor's buffer; they poison what they hold instead.
TEST(Allocator, CachedBlocksArePoisonedForAddressSanitizer) {
  for (size_t bytes : {size_t{8}, size_t{300}, size_t{40000}}) {  // per-thread cache, shared lists
    Allocator* allocator = DefaultAllocator();
    void* p = allocator->Allocate(bytes);
    allocator->Deallocate(p, bytes);
    EXPECT_DEATH(static_cast<volatile char*>(p)[bytes - 1] = 1, "use-after-poison") << bytes;
    void* again = allocator->Allocate(bytes);  // p again, usable once more
    EXPECT_EQ(again, p);
    static_cast<volatile char*>(again)[bytes - 1] = 1;
    allocator->Deallocate(again, bytes);
  }
}
#endif

// Pages of [p, p + bytes) that are mapped (mincore; p page-aligned).
size_t ResidentPages(void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((bytes + page - 1) / page);
  if (mincore(p, bytes, in_core.data()) != 0) return 0;
  size_t resident = 0;
  for (unsigned char c : in_core) resident += c & 1;
  return resident;
}

TEST(Allocator, PrefaultForWriteMapsPagesAndKeepsContents) {
  // Contents stay, whatever the range's alignment: a filler thread may be writing beside it.
  Tensor t(DT_UINT8, TensorShape({(3 << 20) + 77}));
  auto bytes = t.flat<uint8_t>();
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  PrefaultForWrite(bytes.data() + 13, bytes.size() - 20);
  PrefaultForWrite(bytes.data() + 5, 0);
  for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(bytes[i], static_cast<uint8_t>(i * 7 + 3)) << i;

  // Fresh anonymous memory: nothing mapped before, every page after.
  const size_t size = 64 * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* fresh = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(fresh, MAP_FAILED);
  EXPECT_EQ(ResidentPages(fresh, size), 0u);
  PrefaultForWrite(fresh, size);
  if (madvise(fresh, size, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
    munmap(fresh, size);
    GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux < 5.14)";
  }
  EXPECT_EQ(ResidentPages(fresh, size), size / static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  munmap(fresh, size);
}

TEST(Crc32c, KnownValues) {
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c::Value("", 0), 0u);
  char zeros[32] = {};
  EXPECT_EQ(crc32c::Value(zeros, 32), 0x8a9136aau);  // RFC 3720 B.4
  const uint32_t crc = crc32c::Value("hello world", 11);
  EXPECT_EQ(crc32c::Extend(crc32c::Value("hello ", 6), "world", 5), crc);
  EXPECT_NE(crc32c::Mask(crc), crc);
  EXPECT_EQ(crc32c::Unmask(crc32c::Mask(crc)), crc);
}

TEST(Crc32c, HardwareAndPortableAgree) {
  std::string data(10007, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  for (size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 1000u, 10007u}) {
    EXPECT_EQ(crc32c::Value(data.data(), n), crc32c::ExtendPortableForTest(0, data.data(), n)) << n;
  }
}

// Every length up to a few folding blocks, at odd starts and with a running register, so
// that the folding path's setup, loop, lane reduction and tail all meet the two others.
TEST(Crc32c, AllPathsAgreeOnLengthsStartsAndRegisters) {
  std::vector<unsigned char> data(8192 + 64);
  uint64_t state = 88172645463325252ull;
  for (unsigned char& byte : data) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    byte = static_cast<unsigned char>(state);
  }
  int mismatches = 0;
  for (size_t n = 0; n <= 4200; n += (n < 1100 ? 1 : 37)) {
    for (size_t start : {0u, 1u, 7u, 61u}) {
      const uint32_t initial = static_cast<uint32_t>(n * 2654435761u + start);
      const unsigned char* p = data.data() + start;
      const uint32_t expected = crc32c::ExtendPortableForTest(initial, p, n);
      if (crc32c::Extend(initial, p, n) != expected) ++mismatches;
      if (crc32c::ExtendInstructionForTest(initial, p, n) != expected) ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0);
  // A large block split anywhere gives the CRC of the whole.
  const uint32_t whole = crc32c::Value(data.data(), data.size());
  const uint32_t head = crc32c::Value(data.data(), 3001);
  EXPECT_EQ(crc32c::Extend(head, data.data() + 3001, data.size() - 3001), whole);
  EXPECT_EQ(whole, crc32c::ExtendPortableForTest(0, data.data(), data.size()));
}

TEST(FileUtil, AtomicWriteAndRead) {
  const std::string dir = testing::MakeTempDir();
  const std::string path = JoinPath(dir, "a.txt");
  WriteFileAtomically(path, "first");
  EXPECT_EQ(ReadFileToString(path), "first");
  {
    AtomicFileWriter writer(path);
    writer.Append("second");
    // Not committed: the old contents stay and the temp file disappears.
  }
  EXPECT_EQ(ReadFileToString(path), "first");
  EXPECT_EQ(ListDirectory(dir), std::vector<std::string>{"a.txt"});
  {
    AtomicFileWriter writer(path);
    std::string big(3 << 20, 'x');
    writer.Append(big);
    writer.Append("tail");
    writer.Commit();
  }
  EXPECT_EQ(FileSize(path), (3u << 20) + 4);
  EXPECT_THROW(ReadFileToString(JoinPath(dir, "missing")), NotFoundError);
  EXPECT_THROW(AtomicFileWriter(JoinPath(dir, "no/such/dir/file")), NotFoundError);
  CreateDirectories(JoinPath(dir, "x/y"));
  EXPECT_TRUE(FileExists(JoinPath(dir, "x/y")));
  DeleteFileIfExists(path);
  DeleteFileIfExists(path);
  EXPECT_FALSE(FileExists(path));
}

TEST(FileUtil, Paths) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("a", "/b"), "/b");
  EXPECT_EQ(Dirname("a/b/c"), "a/b");
  EXPECT_EQ(Dirname("c"), "");
  EXPECT_EQ(Basename("a/b/c"), "c");
  EXPECT_EQ(RandomHex(4).size(), 8u);
}

TEST(ThreadPool, RunsTasksAndParallelFor) {
  ThreadPool pool("test", 2);
  std::atomic<int> count{0};
  std::vector<int> data(10000, 1);
  pool.ParallelFor(static_cast<int64_t>(data.size()), 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) data[i] = 2;
  });
  for (int v : data) ASSERT_EQ(v, 2);
  std::mutex mu;
  std::condition_variable cv;
  for (int i = 0; i < 10; ++i) {
    pool.Schedule([&] {
      if (count.fetch_add(1) + 1 == 10) {
        std::lock_guard<std::mutex> l(mu);
        cv.notify_all();
      }
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return count.load() == 10; });
  EXPECT_GE(NumSchedulableCPUs(), 1);
}

TEST(Logging, SinkReceivesFormattedLines) {
  std::vector<std::string> lines;
  SetLogSink([&](LogSeverity, const std::string& line) { lines.push_back(line); });
  FT_LOG(WARNING) << "disk " << 3;
  SetLogSink(nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0][0], 'W');
  EXPECT_NE(lines[0].find("core_test.cc"), std::string::npos);
  EXPECT_NE(lines[0].find("] disk 3"), std::string::npos);
}

// Debian's Abseil would abort the process on this lock-order inversion (two orders that never
// overlap in time) unless the library turned deadlock detection off, as std::mutex never had it.
TEST(Mutex, LockOrderInversionDoesNotAbort) {
  absl::Mutex a, b;
  {
    absl::MutexLock first(&a);
    absl::MutexLock second(&b);
  }
  {
    absl::MutexLock first(&b);
    absl::MutexLock second(&a);
  }
  SUCCEED();
}

}  // namespace
}  // namespace flowtrain
