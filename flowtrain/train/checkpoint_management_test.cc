// The `checkpoint` state file and checkpoint bookkeeping, against TF's own files and rules.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "flowtrain/train/checkpoint_management.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Paths(const tensorflow::CheckpointState& state) {
  return {state.all_model_checkpoint_paths().begin(), state.all_model_checkpoint_paths().end()};
}

// Writes a small V2 checkpoint at `prefix` (and a .meta file beside it).
void WriteCheckpoint(const std::string& prefix) {
  io::BundleWriter writer(prefix);
  writer.Add("w", Tensor::Scalar<float>(1));
  writer.Finish();
  WriteFileAtomically(prefix + ".meta", "meta");
}

// Runs `fn` with the working directory set to `dir`.
template <typename Fn>
void InDirectory(const std::string& dir, Fn&& fn) {
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  try {
    fn();
  } catch (...) {
    std::filesystem::current_path(previous);
    throw;
  }
  std::filesystem::current_path(previous);
}

TEST(CheckpointState, EstimatorStateFileRoundTripsByteForByte) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::string fixture_dir = testing::FixturePath("tf1_estimator_model_dir");
  const std::string original = ReadFileToString(fixture_dir + "/checkpoint");
  std::optional<tensorflow::CheckpointState> state = GetCheckpointState(fixture_dir);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->model_checkpoint_path(), fixture_dir + "/model.ckpt-2000");
  EXPECT_THAT(Paths(*state), ElementsAre(fixture_dir + "/model.ckpt-0", fixture_dir + "/model.ckpt-1000",
                                         fixture_dir + "/model.ckpt-2000"));
  EXPECT_EQ(LatestCheckpoint(fixture_dir), fixture_dir + "/model.ckpt-2000");

  // Saving the same state as Estimator does (absolute paths, save_relative_paths) reproduces
  // TF's file exactly.
  const std::string dir = testing::MakeTempDir("ckpt_state");
  std::vector<std::string> all;
  for (const std::string& path : Paths(*state)) all.push_back(dir + "/" + Basename(path));
  UpdateCheckpointStateInternal(dir, dir + "/model.ckpt-2000", all, "checkpoint",
                                /*save_relative_paths=*/true);
  EXPECT_EQ(ReadFileToString(dir + "/checkpoint"), original);
}

TEST(CheckpointState, AbsolutePathStateFileRoundTripsByteForByte) {
  FLOWTRAIN_REQUIRE_FIXTURES("checkpoint_state_tf1");
  const std::string fixture_dir = testing::FixturePath("checkpoint_state_tf1");
  const std::string original = ReadFileToString(fixture_dir + "/checkpoint");
  std::optional<tensorflow::CheckpointState> state = GetCheckpointState(fixture_dir);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->model_checkpoint_path(), "/tmp/bad_half_plus_two/00000123/export");
  EXPECT_EQ(CheckpointStateToText(*state), original);

  const std::string dir = testing::MakeTempDir("ckpt_state");
  UpdateCheckpointStateInternal(dir, state->model_checkpoint_path(), Paths(*state));
  EXPECT_EQ(ReadFileToString(dir + "/checkpoint"), original);
  // The V1 checkpoint it names does not exist (and flowtrain reads only V2 ones).
  EXPECT_EQ(LatestCheckpoint(dir), std::nullopt);
}

TEST(CheckpointState, TextMatchesPythonTextFormat) {
  tensorflow::CheckpointState state;
  state.set_model_checkpoint_path("ckpt-3");
  state.add_all_model_checkpoint_paths("we\"ird\\name\n\t'\x01\xc3\xa9");
  state.add_all_model_checkpoint_paths("ckpt-3");
  for (double t :
       {1601612029.9504316, 1601612030.0, 0.5, 1e16, 1.5e-05, 0.0001, -2.0, 0.0, 123456789012345678.0}) {
    state.add_all_model_checkpoint_timestamps(t);
  }
  state.set_last_preserved_timestamp(1601612028.9504316);
  EXPECT_EQ(CheckpointStateToText(state),
            "model_checkpoint_path: \"ckpt-3\"\n"
            "all_model_checkpoint_paths: \"we\\\"ird\\\\name\\n\\t\\'\\001\\303\\251\"\n"
            "all_model_checkpoint_paths: \"ckpt-3\"\n"
            "all_model_checkpoint_timestamps: 1601612029.9504316\n"
            "all_model_checkpoint_timestamps: 1601612030.0\n"
            "all_model_checkpoint_timestamps: 0.5\n"
            "all_model_checkpoint_timestamps: 1e+16\n"
            "all_model_checkpoint_timestamps: 1.5e-05\n"
            "all_model_checkpoint_timestamps: 0.0001\n"
            "all_model_checkpoint_timestamps: -2.0\n"
            "all_model_checkpoint_timestamps: 0.0\n"
            "all_model_checkpoint_timestamps: 1.2345678901234568e+17\n"
            "last_preserved_timestamp: 1601612028.9504316\n");
  // And it parses back to the same message.
  const std::string dir = testing::MakeTempDir("ckpt_state");
  WriteFileAtomically(dir + "/checkpoint", CheckpointStateToText(state));
  std::optional<tensorflow::CheckpointState> back = GetCheckpointState(dir);
  ASSERT_TRUE(back.has_value());
  // Relative paths come back joined onto the directory.
  EXPECT_EQ(back->all_model_checkpoint_paths(0), dir + "/we\"ird\\name\n\t'\x01\xc3\xa9");
  EXPECT_EQ(back->all_model_checkpoint_timestamps_size(), 9);
  EXPECT_EQ(back->all_model_checkpoint_timestamps(0), 1601612029.9504316);
  EXPECT_EQ(back->last_preserved_timestamp(), 1601612028.9504316);
}

TEST(CheckpointState, TimestampsAreWrittenLikeCheckpointManager) {
  const std::string dir = testing::MakeTempDir("ckpt_state");
  UpdateCheckpointStateInternal(dir, dir + "/ckpt-2", {dir + "/ckpt-1", dir + "/ckpt-2"}, "checkpoint", true,
                                {1601612029.25, 1601612031.5}, 1601612000.0);
  EXPECT_EQ(ReadFileToString(dir + "/checkpoint"),
            "model_checkpoint_path: \"ckpt-2\"\n"
            "all_model_checkpoint_paths: \"ckpt-1\"\n"
            "all_model_checkpoint_paths: \"ckpt-2\"\n"
            "all_model_checkpoint_timestamps: 1601612029.25\n"
            "all_model_checkpoint_timestamps: 1601612031.5\n"
            "last_preserved_timestamp: 1601612000.0\n");
  EXPECT_THROW(
      UpdateCheckpointStateInternal(dir, dir + "/ckpt-2", {dir + "/ckpt-2"}, "checkpoint", true, {1.0, 2.0}),
      InvalidArgumentError);
}

TEST(CheckpointState, ModelPathIsAppendedWhenMissingFromTheList) {
  tensorflow::CheckpointState state =
      GenerateCheckpointStateProto("/train", "/train/model.ckpt-3", {"/train/model.ckpt-1"});
  EXPECT_EQ(state.model_checkpoint_path(), "/train/model.ckpt-3");
  EXPECT_THAT(Paths(state), ElementsAre("/train/model.ckpt-1", "/train/model.ckpt-3"));
  state = GenerateCheckpointStateProto("/train", "/train/model.ckpt-3");
  EXPECT_THAT(Paths(state), ElementsAre("/train/model.ckpt-3"));
}

TEST(CheckpointState, RelativeSaveDirRewritesRelativePaths) {
  const std::string root = testing::MakeTempDir("ckpt_state");
  InDirectory(root, [&] {
    // As Python: relative paths that include the relative save_dir become relative to it.
    tensorflow::CheckpointState state = GenerateCheckpointStateProto(
        "runs/x", "runs/x/model.ckpt-2", {"runs/x/model.ckpt-1", "/abs/model.ckpt-0", "runs/x/model.ckpt-2"});
    EXPECT_EQ(state.model_checkpoint_path(), "model.ckpt-2");
    EXPECT_THAT(Paths(state), ElementsAre("model.ckpt-1", "/abs/model.ckpt-0", "model.ckpt-2"));
    state = GenerateCheckpointStateProto("runs/x", "other/model.ckpt-2");
    EXPECT_EQ(state.model_checkpoint_path(), "../../other/model.ckpt-2");

    // Without save_relative_paths, absolute paths stay absolute.
    CreateDirectories("runs/x");
    UpdateCheckpointStateInternal("runs/x", root + "/runs/x/model.ckpt-2");
    EXPECT_EQ(ReadFileToString("runs/x/checkpoint"),
              StrCat("model_checkpoint_path: \"", root, "/runs/x/model.ckpt-2\"\n",
                     "all_model_checkpoint_paths: \"", root, "/runs/x/model.ckpt-2\"\n"));
    // With it, paths are written relative to the save dir (Saver passes the directory of its
    // save path, so a relative save dir comes with relative checkpoint paths).
    UpdateCheckpointStateInternal("runs/x", "runs/x/model.ckpt-2", {}, "checkpoint", true);
    EXPECT_EQ(ReadFileToString("runs/x/checkpoint"),
              "model_checkpoint_path: \"model.ckpt-2\"\n"
              "all_model_checkpoint_paths: \"model.ckpt-2\"\n");
    std::optional<tensorflow::CheckpointState> read = GetCheckpointState("runs/x");
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(read->model_checkpoint_path(), "runs/x/model.ckpt-2");
  });
}

TEST(CheckpointState, StateFileMayNotBeTheCheckpoint) {
  const std::string dir = testing::MakeTempDir("ckpt_state");
  EXPECT_THROW(UpdateCheckpointStateInternal(dir, dir + "/checkpoint"), InvalidArgumentError);
  EXPECT_FALSE(FileExists(dir + "/checkpoint"));
}

TEST(CheckpointState, WritesAtomicallyLeavingNoTemporaryFiles) {
  const std::string dir = testing::MakeTempDir("ckpt_state");
  for (int step = 1; step <= 3; ++step) {
    UpdateCheckpointStateInternal(dir, StrCat(dir, "/model.ckpt-", step), {}, "checkpoint", true);
  }
  EXPECT_THAT(ListDirectory(dir), ElementsAre("checkpoint"));
  UpdateCheckpointStateInternal(dir, dir + "/m-1", {}, "other_state");
  EXPECT_THAT(ListDirectory(dir), ElementsAre("checkpoint", "other_state"));
  EXPECT_EQ(GetCheckpointState(dir, "other_state")->model_checkpoint_path(), dir + "/m-1");
}

TEST(CheckpointState, MissingOrUnparsableStateIsIgnored) {
  const std::string dir = testing::MakeTempDir("ckpt_state");
  EXPECT_EQ(GetCheckpointState(dir), std::nullopt);
  EXPECT_EQ(LatestCheckpoint(dir), std::nullopt);
  EXPECT_EQ(GetCheckpointState(dir + "/no/such/dir"), std::nullopt);
  WriteFileAtomically(dir + "/checkpoint", "model_checkpoint_path: \"unterminated\n");
  EXPECT_EQ(GetCheckpointState(dir), std::nullopt);
  WriteFileAtomically(dir + "/checkpoint", "no_such_field: 3\n");
  EXPECT_EQ(GetCheckpointState(dir), std::nullopt);
  // Parses, but names no checkpoint: an error, as in TF.
  WriteFileAtomically(dir + "/checkpoint", "all_model_checkpoint_paths: \"a\"\n");
  EXPECT_THROW(GetCheckpointState(dir), InvalidArgumentError);
}

TEST(CheckpointManagement, LatestCheckpointRequiresTheIndexFile) {
  const std::string dir = testing::MakeTempDir("ckpt_state");
  UpdateCheckpointStateInternal(dir, dir + "/model.ckpt-5", {}, "checkpoint", true);
  EXPECT_EQ(LatestCheckpoint(dir), std::nullopt);
  WriteCheckpoint(dir + "/model.ckpt-5");
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-5");
  EXPECT_TRUE(CheckpointExists(dir + "/model.ckpt-5"));
  EXPECT_FALSE(CheckpointExists(dir + "/model.ckpt-6"));
}

TEST(CheckpointManagement, MtimesAndExistingCheckpoints) {
  const std::string dir = testing::MakeTempDir("ckpt_state");
  WriteCheckpoint(dir + "/a");
  WriteCheckpoint(dir + "/c");
  const double now = static_cast<double>(std::time(nullptr));
  const std::vector<double> mtimes = GetCheckpointMtimes({dir + "/a", dir + "/b", dir + "/c"});
  ASSERT_EQ(mtimes.size(), 2u);
  for (double mtime : mtimes) EXPECT_NEAR(mtime, now, 60.0);
  const auto existing = ExistingCheckpoints({dir + "/a", dir + "/b", dir + "/c"});
  ASSERT_EQ(existing.size(), 2u);
  EXPECT_EQ(existing[0].prefix, dir + "/a");
  EXPECT_EQ(existing[1].prefix, dir + "/c");
  EXPECT_EQ(existing[1].mtime, mtimes[1]);
}

TEST(CheckpointManagement, RemoveCheckpointDeletesIndexDataShardsAndMeta) {
  const std::string dir = testing::MakeTempDir("ckpt_state");
  WriteCheckpoint(dir + "/model.ckpt-1");
  WriteCheckpoint(dir + "/model.ckpt-10");  // shares the prefix text; must survive
  WriteFileAtomically(dir + "/model.ckpt-1.data-00001-of-00002", "shard");
  RemoveCheckpoint(dir + "/model.ckpt-1");
  EXPECT_THAT(ListDirectory(dir),
              ElementsAre("model.ckpt-10.data-00000-of-00001", "model.ckpt-10.index", "model.ckpt-10.meta"));
  RemoveCheckpoint(dir + "/model.ckpt-1");  // already gone: nothing to do
  RemoveCheckpoint(dir + "/model.ckpt-10");
  EXPECT_THAT(ListDirectory(dir), IsEmpty());
  RemoveCheckpoint(dir + "/missing_dir/model.ckpt-1");
}

TEST(CheckpointManagement, FindCheckpointsInDirectoryListsCompleteOnesNewestStepFirst) {
  const std::string dir = testing::MakeTempDir("ckpt_find");
  for (const char* name : {"model.ckpt-9", "model.ckpt-100", "model.ckpt-20", "other"}) {
    WriteCheckpoint(JoinPath(dir, name));
  }
  // Incomplete: the second of two shards is missing, or there is no data file at all.
  WriteCheckpoint(dir + "/model.ckpt-500");
  std::filesystem::rename(dir + "/model.ckpt-500.data-00000-of-00001",
                          dir + "/model.ckpt-500.data-00000-of-00002");
  WriteFileAtomically(dir + "/model.ckpt-700.index", "index");
  EXPECT_THAT(FindCheckpointsInDirectory(dir), ElementsAre(dir + "/model.ckpt-100", dir + "/model.ckpt-20",
                                                           dir + "/model.ckpt-9", dir + "/other"));
  EXPECT_THAT(FindCheckpointsInDirectory(dir + "/missing"), IsEmpty());
}

// Backdates `path` by `seconds`, as if it had been left there that long ago.
void Age(const std::string& path, int seconds) {
  const auto then = std::filesystem::last_write_time(path) - std::chrono::seconds(seconds);
  std::filesystem::last_write_time(path, then);
}

TEST(CheckpointManagement, RemoveStaleSaveTemporariesDeletesOnlyAnInterruptedSavesDebris) {
  const std::string dir = testing::MakeTempDir("ckpt_debris");
  const std::string hex(32, 'a'), hex2(32, '7');
  // Left by killed saves: a sharded save's directory, atomic writes' temporaries.
  const std::string temp_dir = dir + "/model.ckpt-500_temp_" + hex;
  CreateDirectories(temp_dir);
  for (const std::string& part :
       {std::string("part-00000-of-00001.index"), "part-00000-of-00001.data-00000-of-00001.tmp" + hex}) {
    WriteFileAtomically(JoinPath(temp_dir, part), "x");
    Age(JoinPath(temp_dir, part), 120);
  }
  Age(temp_dir, 120);
  const std::vector<std::string> debris = {"checkpoint.tmp" + hex, "model.ckpt-500.index.tmp" + hex2,
                                           "model.ckpt-500.data-00000-of-00001.tmp" + hex,
                                           "model.ckpt-500.meta.tmp" + hex};
  for (const std::string& name : debris) {
    WriteFileAtomically(JoinPath(dir, name), "x");
    Age(JoinPath(dir, name), 120);
  }
  // Not ours: other prefixes, other patterns, a directory with a user's file in it; and a save
  // in progress (touched just now).
  const std::vector<std::string> kept = {"model.ckpt-100.index",
                                         "notes.tmp" + hex,
                                         "other.ckpt-5.index.tmp" + hex,
                                         "model.ckpt-5.index.tmp123",
                                         "model.ckpt-5_temp_" + hex + "/mine.txt",
                                         "model.ckpt-600_temp_" + hex2 + "/part-00000-of-00001.index",
                                         "model.ckpt-600.index.tmp" + hex2};
  for (const std::string& name : kept) {
    CreateDirectories(Dirname(JoinPath(dir, name)));
    WriteFileAtomically(JoinPath(dir, name), "x");
    if (name.find("600") == std::string::npos) Age(JoinPath(dir, name), 120);
  }
  Age(dir + "/model.ckpt-5_temp_" + hex, 120);

  EXPECT_EQ(RemoveStaleSaveTemporaries(dir + "/model.ckpt"), 7);
  EXPECT_FALSE(FileExists(temp_dir));
  for (const std::string& name : debris) EXPECT_FALSE(FileExists(JoinPath(dir, name))) << name;
  for (const std::string& name : kept) EXPECT_TRUE(FileExists(JoinPath(dir, name))) << name;
  // The save in progress goes once it is as old as the threshold.
  EXPECT_EQ(RemoveStaleSaveTemporaries(dir + "/model.ckpt", "checkpoint", std::chrono::seconds(0)), 3);
  EXPECT_EQ(RemoveStaleSaveTemporaries(dir + "/missing/model.ckpt"), 0);
}

TEST(CheckpointManagement, MetaGraphFilenameStripsShardSuffix) {
  EXPECT_EQ(MetaGraphFilename("/t/model.ckpt-123"), "/t/model.ckpt-123.meta");
  EXPECT_EQ(MetaGraphFilename("/t/model.ckpt-123-00001-of-00002"), "/t/model.ckpt-123.meta");
  EXPECT_EQ(MetaGraphFilename("/t/model.ckpt-123-\?\?\?\?\?-of-00005", "graph"), "/t/model.ckpt-123.graph");
  // What the regex TF uses leaves alone.
  EXPECT_EQ(MetaGraphFilename("/t/m-of-5"), "/t/m-of-5.meta");
  EXPECT_EQ(MetaGraphFilename("-1-of-5"), ".meta");
  EXPECT_EQ(MetaGraphFilename("/t/m1-of-5"), "/t/m1-of-5.meta");
  EXPECT_EQ(MetaGraphFilename("/t/m-1-of-"), "/t/m-1-of-.meta");
  EXPECT_EQ(MetaGraphFilename("/t/m-1-of-5x"), "/t/m-1-of-5x.meta");
  EXPECT_EQ(MetaGraphFilename("/t/a-1-2-of-3"), "/t/a-1.meta");
  // A checkpoint state file can name any path: std::regex overflowed the stack on this one.
  const std::string digits(200000, '7');
  EXPECT_EQ(MetaGraphFilename("/t/m-" + digits + "-of-" + digits), "/t/m.meta");
  EXPECT_EQ(MetaGraphFilename("/t/m-" + digits), "/t/m-" + digits + ".meta");
}

}  // namespace
}  // namespace flowtrain::train
