// Helpers for the TensorFlow-in-the-loop tests (tests/tf/): the Python that has TensorFlow, the
// scripts beside these tests, the corpus TF wrote for this test run, and running a script as a
// child process.
//
//   PythonRun r = RunTfPython({TfScript("interop/check_checkpoint.py"), "--prefix", prefix});
//   EXPECT_EQ(r.exit_code, 0) << r.output;
#ifndef FLOWTRAIN_TESTS_TF_TF_TEST_UTIL_H_
#define FLOWTRAIN_TESTS_TF_TF_TEST_UTIL_H_

#include <string>
#include <vector>

namespace flowtrain::testing {

// The Python interpreter of the TF environment (FLOWTRAIN_TF_PYTHON at configure time).
std::string TfPython();

// Path of a file under tests/tf/ in the source tree.
std::string TfScript(const std::string& relative);

// The folder the corpus generator (tests/tf/corpus/generate.py) wrote for this test run.
std::string TfCorpusDir();

// What a finished child process left: its exit code (128 + signal if it was killed) and its
// standard output and error, interleaved.
struct PythonRun {
  int exit_code = -1;
  std::string output;
};

// Runs the TF environment's Python with `args` (each passed as one argument, never through a
// shell's word splitting) and waits for it. TF's C++ logging is quietened (TF_CPP_MIN_LOG_LEVEL).
PythonRun RunTfPython(const std::vector<std::string>& args);

}  // namespace flowtrain::testing

#endif  // FLOWTRAIN_TESTS_TF_TF_TEST_UTIL_H_
