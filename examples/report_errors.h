// The top level every example shares: an error that reaches it is printed as one line on
// stderr, naming the program and the error ("fashion_mnist: ResourceExhausted: ..."; a
// message's line breaks become spaces, so that scripts can grep for it), and the process exits
// with status 1 instead of aborting in std::terminate.
//
//   int Main(int argc, char** argv) { ... }   // the example itself; may throw
//   int main(int argc, char** argv) { return examples::ReportErrors(Main, argc, argv); }
#ifndef FLOWTRAIN_EXAMPLES_REPORT_ERRORS_H_
#define FLOWTRAIN_EXAMPLES_REPORT_ERRORS_H_

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "flowtrain/flowtrain.h"

namespace examples {

// Runs `body(argc, argv)` and returns its exit status, or 1 after printing the error it threw.
inline int ReportErrors(int (*body)(int, char**), int argc, char** argv) {
  const char* slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
  const std::string program = argc == 0 ? "example" : slash != nullptr ? slash + 1 : argv[0];
  std::string error;
  try {
    return body(argc, argv);
  } catch (const flowtrain::Error& e) {
    error = e.ToString();
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::replace(error.begin(), error.end(), '\n', ' ');
  std::fprintf(stderr, "%s: %s\n", program.c_str(), error.c_str());
  return 1;
}

}  // namespace examples

#endif  // FLOWTRAIN_EXAMPLES_REPORT_ERRORS_H_
