// Helpers shared by the tests: where the TF-written fixtures are, and fresh temporary dirs.
#ifndef FLOWTRAIN_TESTS_TEST_UTIL_H_
#define FLOWTRAIN_TESTS_TEST_UTIL_H_

#include <string>

namespace flowtrain::testing {

// Path of a file under ../shared/fixtures (FLOWTRAIN_FIXTURES_DIR overrides the location).
std::string FixturePath(const std::string& relative);

// A new empty directory under the test temp dir, removed at process exit.
std::string MakeTempDir(const std::string& prefix = "ft");

// The build directory (for locating helper binaries built beside the tests).
std::string BinaryDir();

}  // namespace flowtrain::testing

#endif  // FLOWTRAIN_TESTS_TEST_UTIL_H_
