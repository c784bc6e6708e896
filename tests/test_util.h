// Helpers shared by the tests: where the TF-written fixtures are, fresh temporary dirs, a
// tensor's elements, expecting an InvalidArgumentError, and running the flowtrain CLI.
#ifndef FLOWTRAIN_TESTS_TEST_UTIL_H_
#define FLOWTRAIN_TESTS_TEST_UTIL_H_

#include <initializer_list>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/tensor.h"

namespace flowtrain::testing {

// The folder of TF-written fixtures: ../shared/fixtures beside the source tree, or
// FLOWTRAIN_FIXTURES_DIR when that is set. A plain clone has no such folder; every test that
// reads a fixture names it with FLOWTRAIN_REQUIRE_FIXTURES and skips without it.
std::string FixturesDir();

// Path of a file under the fixtures folder.
std::string FixturePath(const std::string& relative);

// Empty when every one of `fixtures` (top-level entries of the fixtures folder, such as
// "tf1_estimator_model_dir") is there; otherwise a message naming the absent ones.
std::string AbsentFixtures(std::initializer_list<std::string_view> fixtures);

// FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir", ...) skips the current test when any
// named fixture is absent, with a message naming them. GTEST_SKIP returns from the function it
// is in, so this belongs in a TEST body or a test fixture's SetUp(), never in a helper.
#define FLOWTRAIN_REQUIRE_FIXTURES(...)                                                                   \
  if (const std::string flowtrain_absent_fixtures_ = ::flowtrain::testing::AbsentFixtures({__VA_ARGS__}); \
      flowtrain_absent_fixtures_.empty()) {                                                               \
  } else                                                                                                  \
    GTEST_SKIP() << flowtrain_absent_fixtures_

// A new empty directory under the test temp dir, removed at process exit.
std::string MakeTempDir(const std::string& prefix = "ft");

// The build directory (for locating helper binaries built beside the tests).
std::string BinaryDir();

// The built flowtrain command-line binary (target flowtrain_cli): BinaryDir()/tools/flowtrain.
std::string FlowtrainCliPath();

struct CliResult {
  int exit_code = -1;  // -1 when it could not be started or did not exit normally
  std::string output;  // stdout and stderr
};

// Runs FlowtrainCliPath() with `args`, a shell command line's words after the program (the
// caller quotes paths), and returns its exit code and everything it printed.
CliResult RunFlowtrainCli(const std::string& args);
// The same for any shell command line.
CliResult RunShellCommand(const std::string& command);

// PEM files for TLS tests, made by the openssl command in a new temp dir: a CA, a
// certificate for "localhost" and 127.0.0.1 signed by it (server and client use), and a
// second CA with a client certificate of its own (a stranger's).
struct TlsTestFiles {
  std::string ca;
  std::string cert;
  std::string key;
  std::string rogue_ca;
  std::string rogue_cert;
  std::string rogue_key;
};
// Empty paths when openssl is not installed or fails; the caller skips with the message in
// `*why_not`.
TlsTestFiles MakeTlsTestFiles(std::string* why_not);

// Byte offsets where the records of an event file start (the first is the file_version event).
std::vector<uint64_t> RecordOffsets(const std::string& event_file);

// The elements of `t`, in order.
template <typename T>
std::vector<T> Values(const Tensor& t) {
  auto flat = t.flat<T>();
  return std::vector<T>(flat.begin(), flat.end());
}

// Runs `fn` expecting an InvalidArgumentError whose message contains every one of `parts`.
template <typename Fn>
void ExpectInvalidArgument(const Fn& fn, std::initializer_list<std::string_view> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an InvalidArgumentError";
  } catch (const InvalidArgumentError& e) {
    for (std::string_view part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what() << "\n  lacks: " << part;
    }
  }
}
template <typename Fn>
void ExpectInvalidArgument(const Fn& fn, std::string_view needle) {
  ExpectInvalidArgument(fn, {needle});
}

// Runs `fn` expecting an `Error` (DataLossError, say) whose message contains every one of `parts`.
//   ExpectError<DataLossError>([&] { ReadIdxFile(path); }, {path, "header"});
template <typename Error, typename Fn>
void ExpectError(const Fn& fn, std::initializer_list<std::string_view> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    for (std::string_view part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what() << "\n  lacks: " << part;
    }
  }
}

}  // namespace flowtrain::testing

#endif  // FLOWTRAIN_TESTS_TEST_UTIL_H_
