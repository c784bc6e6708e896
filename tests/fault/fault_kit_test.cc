// The fault kit (ctest -L fault): the real fashion_mnist example, run as a user runs it, under
// injected faults — SIGKILL at random instants and inside a save, a full disk (at the final
// save, and after some writes), EIO on fsync, a read-only model directory, SIGTERM whose final
// save fails, a garbage or stale `checkpoint` state file, a damaged newest checkpoint — plus
// the saver's own kill loop (saver_crash_test_util.h). Disk faults come from
// libflowtrain_fault_injector.so (fault_injector.cc) preloaded into the child, so no tmpfs or
// root is needed. Every case asserts that
//   - nothing saved before is lost: the checkpoint that was the latest before the fault is
//     still there and intact (every checksum verified);
//   - the fault is survived (exit 0) or reported: a non-zero exit with exactly one line
//     "fashion_mnist: <error>" naming it (a SIGKILL is its own report);
//   - the next run, with the fault removed, resumes from the newest intact checkpoint (at
//     least the last good one) and finishes.
// At the end it prints a table of the cases tried and survived. The data is a small
// Fashion-MNIST-shaped set written by the test, so that a run takes a fraction of a second.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/saver_crash_test_util.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// One row of the table printed at the end.
struct Row {
  std::string name, fault, outcome, resumed;
  bool ok = false;
};
std::vector<Row>& Table() {
  static std::vector<Row> rows;
  return rows;
}

class PrintTable : public ::testing::Environment {
 public:
  void TearDown() override {
    int survived = 0;
    std::printf("\nfault kit: %zu cases\n%-26s %-44s %-40s %-26s %s\n", Table().size(), "case", "fault",
                "outcome", "next run resumed from", "");
    for (const Row& r : Table()) {
      survived += r.ok;
      std::printf("%-26s %-44s %-40s %-26s %s\n", r.name.c_str(), r.fault.c_str(), r.outcome.c_str(),
                  r.resumed.c_str(), r.ok ? "survived" : "FAILED");
    }
    std::printf("fault kit: %d of %zu faults survived or reported with a non-zero exit\n", survived,
                Table().size());
  }
};
const auto* const kTable = ::testing::AddGlobalTestEnvironment(new PrintTable);

// Writes `bytes` gzip-compressed to `path`.
void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

std::string BigEndian(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// A Fashion-MNIST-shaped data set (IDX files, gzip'ed) of a few hundred random images.
const std::string& DataDir() {
  static const std::string dir = [] {
    const std::string d = testing::MakeTempDir("fault_data");
    std::mt19937 rng(7);
    for (auto [split, n] : {std::pair<std::string, uint32_t>{"train", 512}, {"t10k", 128}}) {
      std::string images = BigEndian(0x803) + BigEndian(n) + BigEndian(28) + BigEndian(28);
      std::string labels = BigEndian(0x801) + BigEndian(n);
      for (uint32_t i = 0; i < n * 784; ++i) images.push_back(static_cast<char>(rng()));
      for (uint32_t i = 0; i < n; ++i) labels.push_back(static_cast<char>(rng() % 10));
      WriteGzip(d + "/" + split + "-images-idx3-ubyte.gz", images);
      WriteGzip(d + "/" + split + "-labels-idx1-ubyte.gz", labels);
    }
    return d;
  }();
  return dir;
}

struct Child {
  pid_t pid = -1;
  std::string log;
};

struct Result {
  int exit_code = -1;  // -1 if killed by a signal
  int signal = 0;
  std::string output;  // stdout and stderr
  // The lines "fashion_mnist: ..." (the examples' top-level error report).
  std::vector<std::string> ErrorLines() const {
    std::vector<std::string> lines;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("fashion_mnist: ", 0) == 0) lines.push_back(line);
    }
    return lines;
  }
};

// Starts fashion_mnist on `model_dir` for `steps` more steps, with `env` added to the
// environment (the fault injector's settings; LD_PRELOAD is set when any are given).
Child Start(const std::string& model_dir, int64_t steps, const Env& env = {}) {
  static int runs = 0;
  Child child;
  child.log = model_dir + "/../run" + std::to_string(++runs) + ".log";
  std::vector<std::string> args = {
      FLOWTRAIN_FASHION_MNIST, "--model-dir",  model_dir, "--data-dir",        DataDir(), "--steps",
      std::to_string(steps),   "--batch-size", "16",      "--histogram-steps", "1000000"};
  child.pid = fork();
  if (child.pid == 0) {
    const int fd = ::open(child.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    if (!env.empty()) setenv("LD_PRELOAD", FLOWTRAIN_FAULT_INJECTOR, 1);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return child;
}

// Waits for `child` (killing it after a minute: a hang is a failure too).
Result Wait(const Child& child) {
  Result r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (waitpid(child.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child.pid, SIGKILL);
      waitpid(child.pid, &status, 0);
      ADD_FAILURE() << "fashion_mnist hung; killed after 60 s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.output = FileExists(child.log) ? ReadFileToString(child.log) : "";
  return r;
}

Result RunExample(const std::string& model_dir, int64_t steps, const Env& env = {}) {
  return Wait(Start(model_dir, steps, env));
}

int64_t StepOf(const std::string& prefix) { return std::stoll(prefix.substr(prefix.rfind('-') + 1)); }

// Waits until the run's log shows `text`.
void WaitForLog(const Child& child, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (FileExists(child.log) && ReadFileToString(child.log).find(text) != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "the run never logged '" << text << "'";
}

// The temporaries of interrupted saves in `dir`.
std::vector<std::string> Debris(const std::string& dir) {
  std::vector<std::string> found;
  for (const std::string& name : ListDirectory(dir)) {
    if (name.find("_temp_") != std::string::npos || name.find(".tmp") != std::string::npos)
      found.push_back(name);
  }
  return found;
}

// Backdates everything in `dir` by ten minutes: the temporaries of a kill are then old enough to
// be taken for a dead process's (train::kStaleSaveTemporaryAge).
void AgeDirectory(const std::string& dir) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    std::filesystem::last_write_time(entry.path(), entry.last_write_time() - std::chrono::minutes(10));
  }
  std::filesystem::last_write_time(dir, std::filesystem::last_write_time(dir) - std::chrono::minutes(10));
}

void FlipByte(const std::string& path, int64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c = 0;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0x5a));
}

// The model directory of a case, with a first good run of 20 steps in it (checkpoints of steps
// 0 and 20).
std::string TrainedModelDir(const std::string& name) {
  const std::string dir = testing::MakeTempDir("fault_" + name) + "/model";
  CreateDirectories(dir);
  const Result first = RunExample(dir, 20);
  EXPECT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(train::LatestCheckpoint(dir), dir + "/model.ckpt-20");
  return dir;
}

// Runs one case: `inject` applies the fault (to a directory trained to step 20) and returns
// the faulty run's result; `expected_error` is what its one error line must contain when it
// exits non-zero (empty: the run must succeed). Then checks the last good checkpoint, and
// that a clean run resumes from at least `resume_at_least` and finishes 5 steps later.
// Failures recorded so far in the running test.
int FailuresSoFar() {
  const ::testing::TestResult* result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int failures = 0;
  for (int i = 0; i < result->total_part_count(); ++i) failures += result->GetTestPartResult(i).failed();
  return failures;
}

void RunCase(const std::string& name, const std::string& fault,
             const std::function<Result(const std::string& dir)>& inject, const std::string& expected_error,
             int64_t resume_at_least = 20,
             const std::function<void(const std::string& dir)>& after_next = {}) {
  Row row{name, fault, "", "", false};
  const int failures_before = FailuresSoFar();
  const std::string dir = TrainedModelDir(name);
  const std::string last_good = dir + "/model.ckpt-20";
  const Result faulty = inject(dir);
  const std::vector<std::string> errors = faulty.ErrorLines();
  if (faulty.signal != 0) {
    row.outcome = std::string("killed by ") + strsignal(faulty.signal);
    EXPECT_EQ(faulty.signal, SIGKILL) << faulty.output;
  } else if (faulty.exit_code == 0 || faulty.exit_code == 128 + SIGTERM) {
    // 128 + SIGTERM: stopped by the signal after saving, as the example promises.
    row.outcome = "exit " + std::to_string(faulty.exit_code);
    EXPECT_TRUE(expected_error.empty()) << "the fault went unreported:\n" << faulty.output;
  } else {
    row.outcome = "exit " + std::to_string(faulty.exit_code) + ": " +
                  (errors.empty() ? "(no error line)" : errors[0].substr(15, 30));
    EXPECT_FALSE(expected_error.empty()) << faulty.output;
    EXPECT_EQ(faulty.exit_code, 1) << faulty.output;
    EXPECT_EQ(errors.size(), 1u) << "one line naming the error, got:\n" << faulty.output;
    if (!errors.empty()) {
      EXPECT_NE(errors[0].find(expected_error), std::string::npos) << errors[0];
    }
  }
  // Nothing saved before is lost.
  EXPECT_TRUE(train::CheckpointExists(last_good)) << last_good;
  if (train::CheckpointExists(last_good)) {
    EXPECT_NO_THROW(io::BundleReader(last_good).VerifyAll()) << last_good;
  }
  // The next run, without the fault, resumes and finishes.
  const Result next = RunExample(dir, 5);
  EXPECT_EQ(next.exit_code, 0) << next.output;
  // Where it resumed: its final step less the 5 it ran; it must have restored that checkpoint.
  std::smatch m;
  static const std::regex kFinal("Test accuracy after step (\\d+)");
  if (std::regex_search(next.output, m, kFinal)) {
    const int64_t resumed = std::stoll(m[1].str()) - 5;
    const std::string prefix = dir + "/model.ckpt-" + std::to_string(resumed);
    row.resumed = "model.ckpt-" + std::to_string(resumed);
    EXPECT_GE(resumed, resume_at_least) << next.output;
    EXPECT_NE(next.output.find("Restoring parameters from " + prefix + "\n"), std::string::npos)
        << next.output;
  } else {
    row.resumed = "(did not finish)";
    ADD_FAILURE() << "the next run did not finish:\n" << next.output;
  }
  if (after_next) after_next(dir);
  row.ok = FailuresSoFar() == failures_before;
  Table().push_back(row);
}

TEST(FaultKit, SigkillAtRandomInstants) {
  std::random_device seed_source;
  const uint32_t seed = seed_source();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(200, 1500);
  for (int i = 0; i < 3; ++i) {
    const int ms = delay_ms(rng);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << ", kill after " << ms << " ms");
    RunCase(
        "sigkill_random_" + std::to_string(i), "SIGKILL " + std::to_string(ms) + " ms into a run",
        [&](const std::string& dir) {
          Child c = Start(dir, 100000);
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          kill(c.pid, SIGKILL);
          return Wait(c);
        },
        "");
  }
}

// Killed at the rename that completes a save's index (the final save of a run of 5 steps
// from step 20): the save's temporaries stay behind; the next run (once they are old)
// deletes them.
TEST(FaultKit, SigkillInsideASaveLeavesNoDebrisBehind) {
  RunCase(
      "sigkill_in_save", "SIGKILL at the rename of a save's index",
      [](const std::string& dir) {
        Result r = RunExample(dir, 5,
                              {{"FT_FAULT_ACTION", "kill"},
                               {"FT_FAULT_OPS", "rename"},
                               {"FT_FAULT_PATH", dir + "/model.ckpt-25.index"}});
        EXPECT_FALSE(Debris(dir).empty()) << "the kill left no temporaries to clean up";
        AgeDirectory(dir);
        return r;
      },
      "", 20,
      [](const std::string& dir) {
        // The run after the kill found the temporaries old and deleted them.
        EXPECT_TRUE(Debris(dir).empty()) << Debris(dir)[0];
      });
}

TEST(FaultKit, DiskFullAtTheFinalSave) {
  RunCase(
      "enospc_final_save", "ENOSPC on every write of model.ckpt-40",
      [](const std::string& dir) {
        return RunExample(dir, 20, {{"FT_FAULT_ERRNO", "ENOSPC"}, {"FT_FAULT_PATH", dir + "/model.ckpt-40"}});
      },
      "ResourceExhausted");
}

TEST(FaultKit, DiskFullAfterSomeWrites) {
  for (int after : {0, 3, 12}) {
    RunCase(
        "enospc_after_" + std::to_string(after) + "_writes",
        "ENOSPC after " + std::to_string(after) + " writes in the model dir",
        [&](const std::string& dir) {
          return RunExample(dir, 20,
                            {{"FT_FAULT_ERRNO", "ENOSPC"},
                             {"FT_FAULT_OPS", "open,write,mkdir,rename"},
                             {"FT_FAULT_PATH", dir + "/"},
                             {"FT_FAULT_AFTER", std::to_string(after)}});
        },
        "ResourceExhausted");
  }
}

TEST(FaultKit, EioOnFsync) {
  RunCase(
      "eio_fsync", "EIO on fsync of checkpoint files",
      [](const std::string& dir) {
        return RunExample(
            dir, 20,
            {{"FT_FAULT_ERRNO", "EIO"}, {"FT_FAULT_OPS", "fsync"}, {"FT_FAULT_PATH", dir + "/model.ckpt"}});
      },
      "Internal");
}

TEST(FaultKit, ReadOnlyModelDirectory) {
  RunCase(
      "read_only_dir", "EROFS on every change in the model dir",
      [](const std::string& dir) {
        return RunExample(dir, 20,
                          {{"FT_FAULT_ERRNO", "EROFS"},
                           {"FT_FAULT_OPS", "open,mkdir,rename,unlink"},
                           {"FT_FAULT_PATH", dir + "/"}});
      },
      "PermissionDenied");
}

// SIGTERM (a preemption) whose final save hits a full disk: the run must not claim it saved.
TEST(FaultKit, SigtermWhoseFinalSaveFails) {
  RunCase(
      "sigterm_save_fails", "SIGTERM, then ENOSPC at the final save",
      [](const std::string& dir) {
        const std::string trigger = dir + "/../disk_full";
        Child c = Start(dir, 100000,
                        {{"FT_FAULT_ERRNO", "ENOSPC"},
                         {"FT_FAULT_TRIGGER", trigger},
                         {"FT_FAULT_PATH", dir + "/model.ckpt"}});
        WaitForLog(c, "Restoring parameters from " + dir + "/model.ckpt-20");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        WriteFileAtomically(trigger, "");
        kill(c.pid, SIGTERM);
        Result r = Wait(c);
        EXPECT_EQ(r.output.find("Stopped by"), std::string::npos) << r.output;
        return r;
      },
      "not saved");
}

TEST(FaultKit, SigtermSavesAndSaysWhat) {
  RunCase(
      "sigterm", "SIGTERM mid-run",
      [](const std::string& dir) {
        Child c = Start(dir, 100000);
        WaitForLog(c, "Restoring parameters from " + dir + "/model.ckpt-20");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        kill(c.pid, SIGTERM);
        Result r = Wait(c);
        EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.output;
        // The checkpoint it names is the one the state file names, of the step reached.
        std::smatch m;
        const std::string latest = train::LatestCheckpoint(dir).value_or("");
        EXPECT_TRUE(std::regex_search(r.output, m, std::regex("saved (\\S+), run again"))) << r.output;
        if (!m.empty()) {
          EXPECT_EQ(m[1].str(), latest);
        }
        EXPECT_GT(StepOf(latest), 20);
        return r;
      },
      "", 21);
}

TEST(FaultKit, GarbageStateFile) {
  RunCase(
      "garbage_state_file", "`checkpoint` overwritten with garbage",
      [](const std::string& dir) {
        WriteFileAtomically(dir + "/checkpoint", "\x01\x02garbage{{{ not a CheckpointState");
        Result r;
        r.exit_code = 0;
        return r;
      },
      "");
}

TEST(FaultKit, StateFileNamingAMissingCheckpoint) {
  RunCase(
      "state_names_missing", "`checkpoint` names model.ckpt-999",
      [](const std::string& dir) {
        WriteFileAtomically(dir + "/checkpoint",
                            "model_checkpoint_path: \"model.ckpt-999\"\n"
                            "all_model_checkpoint_paths: \"model.ckpt-999\"\n");
        Result r;
        r.exit_code = 0;
        return r;
      },
      "");
}

TEST(FaultKit, DamagedNewestCheckpoint) {
  RunCase(
      "damaged_newest", "a byte of model.ckpt-40's data flipped",
      [](const std::string& dir) {
        Result r = RunExample(dir, 20);
        EXPECT_EQ(r.exit_code, 0) << r.output;
        FlipByte(dir + "/model.ckpt-40.data-00000-of-00001", 100);
        return r;
      },
      "");
}

// The saver's own kill loop (saver_crash_test_util.h): kills land inside saves; a later save
// (its debris aged) leaves nothing of them behind.
TEST(FaultKit, SaverKillLoopLeavesNoDebris) {
  const std::string dir = testing::MakeTempDir("fault_kill_loop");
  train::crash_test::RunKillLoop(dir, 8, 3, 2024);
  const size_t debris = Debris(dir).size();
  AgeDirectory(dir);
  train::crash_test::CrashModel m(/*sharded=*/true);
  Session sess(m.graph);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&m.graph)});
  m.saver->Save(sess, dir + "/model.ckpt", 1000000);
  EXPECT_TRUE(Debris(dir).empty()) << Debris(dir)[0];
  Table().push_back({"saver_kill_loop", "8+ SIGKILLs aimed inside saves",
                     std::to_string(debris) + " temporaries left, then deleted", "(latest restores)",
                     !::testing::Test::HasFailure()});
}

}  // namespace
}  // namespace flowtrain
