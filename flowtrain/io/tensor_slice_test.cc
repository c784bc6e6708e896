// Slices of tensors in checkpoints: TF's slice text and keys, and bundles holding partitioned
// tensors read back whole or cut to another partitioning.
#include <algorithm>
#include <numeric>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "flowtrain/io/tensor_slice.h"
#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

using ::testing::ElementsAre;

// 0, 1, 2, ... in a tensor of `shape`, starting at `first`.
Tensor Iota(const TensorShape& shape, float first = 0) {
  std::vector<float> values(static_cast<size_t>(shape.num_elements()));
  std::iota(values.begin(), values.end(), first);
  return Tensor::FromVector(values, shape);
}

// Rows [begin, end) of the [10, 4] tensor Iota({10, 4}).
Tensor Rows(int64_t begin, int64_t end) { return Iota({end - begin, 4}, static_cast<float>(begin * 4)); }

// Saves the [10, 4] tensor "w" (values 0..39) as the row slices [0, 4), [4, 7), [7, 10), as TF
// saves fixed_size_partitioner(3), and "b" whole.
std::string WritePartitioned() {
  const std::string prefix = testing::MakeTempDir("slices") + "/ckpt";
  BundleWriter writer(prefix);
  const TensorShape full({10, 4});
  writer.AddSlice("w", full, ParseShapeAndSlice("10 4 0,4:0,4").slice, Rows(0, 4));
  writer.AddSlice("w", full, ParseShapeAndSlice("10 4 4,3:0,4").slice, Rows(4, 7));
  writer.AddSlice("w", full, ParseShapeAndSlice("10 4 7,3:0,4").slice, Rows(7, 10));
  writer.Add("b", Iota({10, 4}));
  writer.Finish();
  return prefix;
}

TEST(TensorSlice, ParsesShapeAndSliceAsTf) {
  const ShapeAndSlice s = ParseShapeAndSlice("10 4 4,3:-");
  EXPECT_EQ(s.full_shape, TensorShape({10, 4}));
  EXPECT_EQ(s.slice.start(0), 4);
  EXPECT_EQ(s.slice.length(0), 3);
  EXPECT_TRUE(s.slice.IsFullAt(1));
  EXPECT_EQ(s.slice.ShapeIn(s.full_shape), TensorShape({3, 4}));
  EXPECT_EQ(s.slice.DebugString(), "4,3:-");
  testing::ExpectInvalidArgument([] { ParseShapeAndSlice("10 4 8,3:-"); }, {"10 4 8,3:-", "does not fit"});
  testing::ExpectInvalidArgument([] { ParseShapeAndSlice("10 4 0,3"); }, {"1 dimensions", "shape 2"});
  testing::ExpectInvalidArgument([] { ParseShapeAndSlice("10 x 0,3:-"); }, {"'x'"});
  testing::ExpectInvalidArgument([] { ParseShapeAndSlice("10 4 0;3:-"); }, {"'0;3'"});
}

TEST(TensorSlice, KeysAreTfsOrderedCode) {
  // 0, "w" escaped and terminated, the rank (a length byte, then 2), then (start, length) per
  // dimension: small numbers are one byte 0x80 ^ n (so -1, a full extent, is 0x7f); 1000
  // takes two bytes. The first is the key TF 2.21 wrote for part_0 of a [10, 4] variable.
  EXPECT_EQ(EncodeTensorNameSlice("w", ParseShapeAndSlice("10 4 0,4:0,4").slice),
            std::string("\x00w\x00\x01\x01\x02\x80\x84\x80\x84", 10));
  EXPECT_EQ(EncodeTensorNameSlice("a", TensorSlice({1000}, {1001})),
            std::string("\x00"
                        "a\x00\x01\x01\x01\xc3\xe8\xc3\xe9",
                        10));
  EXPECT_EQ(EncodeTensorNameSlice(std::string("a\0b", 3), TensorSlice(1)),
            std::string("\x00"
                        "a\x00\xff"
                        "b\x00\x01\x01\x01\x80\x7f",
                        11));
}

TEST(TensorSlice, PartitionedTensorReadsWholeAndAsAnyOtherPartitioning) {
  const std::string prefix = WritePartitioned();
  BundleReader reader(prefix);
  EXPECT_EQ(reader.LookupDtypeAndShape("w").shape, TensorShape({10, 4}));
  EXPECT_EQ(testing::Values<float>(reader.Lookup("w")), testing::Values<float>(Iota({10, 4})));
  // Two parts, across the saved slices' boundaries, from the sliced and the whole tensor.
  for (const char* key : {"w", "b"}) {
    EXPECT_EQ(testing::Values<float>(reader.LookupSlice(key, ParseShapeAndSlice("10 4 0,5:0,4").slice)),
              testing::Values<float>(Rows(0, 5)));
    EXPECT_EQ(testing::Values<float>(reader.LookupSlice(key, ParseShapeAndSlice("10 4 5,5:-").slice)),
              testing::Values<float>(Rows(5, 10)));
  }
  // Columns: element (r, c) is 4r + c.
  EXPECT_THAT(testing::Values<float>(reader.LookupSlice("w", ParseShapeAndSlice("10 4 3,2:1,2").slice)),
              ElementsAre(13, 14, 17, 18));
  Tensor into(DT_FLOAT, TensorShape({10, 4}));
  reader.LookupInto("w", &into);
  EXPECT_EQ(testing::Values<float>(into), testing::Values<float>(Iota({10, 4})));
  reader.VerifyAll();
  testing::ExpectInvalidArgument([&] { reader.LookupSlice("w", ParseShapeAndSlice("11 4 9,2:-").slice); },
                                 {"'w'", "does not fit"});
}

TEST(TensorSlice, WriterRejectsSlicesThatDoNotMatch) {
  BundleWriter writer(testing::MakeTempDir("slices") + "/ckpt");
  const TensorSlice rows = ParseShapeAndSlice("10 4 0,4:-").slice;
  testing::ExpectInvalidArgument(
      [&] {
        writer.AddSlice("w", {10, 4}, rows, Rows(0, 3));
      },
      {"'w'", "[4,4]", "[3,4]"});
  testing::ExpectInvalidArgument([&] { writer.AddSlice("w", {2, 4}, rows, Rows(0, 4)); }, {"does not fit"});
  writer.AddSlice("w", {10, 4}, rows, Rows(0, 4));
  testing::ExpectInvalidArgument(
      [&] {
        writer.AddSlice("w", {11, 4}, ParseShapeAndSlice("11 4 4,3:-").slice, Rows(4, 7));
      },
      {"'w'", "[11,4]", "[10,4]"});
  writer.Add("b", Rows(0, 1));
  testing::ExpectInvalidArgument(
      [&] {
        writer.AddSlice("b", {10, 4}, rows, Rows(0, 4));
      },
      {"a whole tensor"});
}

// Rows [i, i + 1) of a tensor of `rows` x `columns`, one slice a row.
std::vector<TensorSlice> RowSlices(int64_t rows, int64_t columns) {
  std::vector<TensorSlice> slices;
  for (int64_t i = 0; i < rows; ++i)
    slices.emplace_back(std::vector<int64_t>{i, 0}, std::vector<int64_t>{1, columns});
  return slices;
}

TEST(TensorSlice, FindOverlapComparesSlicesOfOneAxisOnlyWithTheirNeighbours) {
  // Shuffled, as an index lists them by key: the sweep sorts them.
  std::vector<TensorSlice> rows = RowSlices(100000, 4);
  std::reverse(rows.begin(), rows.end());
  std::swap(rows[10], rows[70000]);
  SliceOverlap found = FindOverlap(rows, TensorShape({100000, 4}), 1000);
  EXPECT_EQ(found.outcome, SliceOverlap::kDisjoint);
  EXPECT_EQ(found.comparisons, 0);  // each row is closed before the next opens

  // A 100 x 100 grid: the sweep runs along either axis with 100 slices open at a time.
  std::vector<TensorSlice> grid;
  for (int64_t i = 0; i < 100; ++i) {
    for (int64_t j = 0; j < 100; ++j)
      grid.emplace_back(std::vector<int64_t>{i, j}, std::vector<int64_t>{1, 1});
  }
  found = FindOverlap(grid, TensorShape({100, 100}), int64_t{1} << 24);
  EXPECT_EQ(found.outcome, SliceOverlap::kDisjoint);
  EXPECT_LE(found.comparisons, 100 * 100 * 100);
  grid[5 * 100 + 7] = TensorSlice({5, 7}, {1, 2});  // now covers (5, 8) too
  found = FindOverlap(grid, TensorShape({100, 100}), int64_t{1} << 24);
  ASSERT_EQ(found.outcome, SliceOverlap::kOverlap);
  EXPECT_EQ(found.first, 5 * 100 + 7u);
  EXPECT_EQ(found.second, 5 * 100 + 8u);
}

TEST(TensorSlice, FindOverlapGivesUpOnWovenLayoutsAfterItsComparisons) {
  // m columns spanning every row beside m rows spanning the other m columns: disjoint, but
  // along either axis one half stays open while the other half passes.
  constexpr int64_t m = 300;
  std::vector<TensorSlice> woven;
  for (int64_t j = 0; j < m; ++j) woven.emplace_back(std::vector<int64_t>{0, j}, std::vector<int64_t>{m, 1});
  for (int64_t i = 0; i < m; ++i) woven.emplace_back(std::vector<int64_t>{i, m}, std::vector<int64_t>{1, m});
  const TensorShape shape({m, 2 * m});
  SliceOverlap found = FindOverlap(woven, shape, int64_t{1} << 24);
  EXPECT_EQ(found.outcome, SliceOverlap::kDisjoint);
  EXPECT_GE(found.comparisons, m * (m - 1) / 2);
  found = FindOverlap(woven, shape, 1000);
  EXPECT_EQ(found.outcome, SliceOverlap::kUndecided);
  EXPECT_EQ(found.comparisons, 1000);
}

TEST(TensorSlice, FindOverlapIgnoresEmptySlicesAndSeesScalarsShareTheirElement) {
  const std::vector<TensorSlice> with_empty = {TensorSlice({0, 0}, {2, 4}), TensorSlice({1, 0}, {0, 4}),
                                               TensorSlice({2, 0}, {2, 4})};
  EXPECT_EQ(FindOverlap(with_empty, TensorShape({4, 4}), 100).outcome, SliceOverlap::kDisjoint);
  const SliceOverlap scalars = FindOverlap({TensorSlice(0), TensorSlice(0)}, TensorShape({}), 100);
  EXPECT_EQ(scalars.outcome, SliceOverlap::kOverlap);
  EXPECT_EQ(FindOverlap({TensorSlice(0)}, TensorShape({}), 100).outcome, SliceOverlap::kDisjoint);
}

TEST(TensorSlice, TensorOfTwentyThousandSlicesReadsBack) {
  // A hostile index can list this many slices; checking them pairwise took 2e8 comparisons.
  constexpr int64_t kRows = 20000;
  const std::string prefix = testing::MakeTempDir("slices") + "/ckpt";
  {
    BundleWriter writer(prefix);
    for (const TensorSlice& row : RowSlices(kRows, 2)) {
      writer.AddSlice("w", {kRows, 2}, row, Iota({1, 2}, static_cast<float>(row.start(0) * 2)));
    }
    writer.Finish();
  }
  EXPECT_EQ(testing::Values<float>(BundleReader(prefix).Lookup("w")),
            testing::Values<float>(Iota({kRows, 2})));
}

// Rewrites the index of `prefix` with `edit` applied to the entry of "w".
template <typename Fn>
void EditEntry(const std::string& prefix, const Fn& edit) {
  bundle_internal::IndexContents contents = bundle_internal::ReadIndexTable(MetaFilename(prefix));
  edit(contents.entries.at("w"));
  WriteFileAtomically(MetaFilename(prefix),
                      bundle_internal::BuildIndexTable(contents.header, contents.entries));
}

TEST(TensorSlice, DamagedSliceListsAreDataLossNamingTheSlice) {
  const std::string unfit = WritePartitioned();
  EditEntry(unfit,
            [](tensorflow::BundleEntryProto& e) { e.mutable_slices(2)->mutable_extent(0)->set_length(4); });
  testing::ExpectError<DataLossError>([&] { BundleReader(unfit).Lookup("w"); },
                                      {unfit, "slice 7,4:0,4", "'w'", "does not fit", "[10,4]"});

  const std::string overlapping = WritePartitioned();
  EditEntry(overlapping,
            [](tensorflow::BundleEntryProto& e) { e.mutable_slices(1)->mutable_extent(0)->set_start(3); });
  testing::ExpectError<DataLossError>([&] { BundleReader(overlapping).Lookup("w"); }, {"3,3:0,4", "overlap"});

  const std::string missing = WritePartitioned();
  EditEntry(missing,
            [](tensorflow::BundleEntryProto& e) { e.mutable_slices(1)->mutable_extent(0)->set_length(2); });
  testing::ExpectError<DataLossError>([&] { BundleReader(missing).Lookup("w"); }, {"4,2:0,4", "missing"});

  const std::string gap = WritePartitioned();
  EditEntry(gap, [](tensorflow::BundleEntryProto& e) { e.mutable_slices()->RemoveLast(); });
  testing::ExpectError<NotFoundError>([&] { BundleReader(gap).Lookup("w"); }, {"sufficient slices", "w"});
}

}  // namespace
}  // namespace flowtrain::io
