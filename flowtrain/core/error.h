// Errors are exceptions of one hierarchy. Each carries one of TensorFlow's canonical codes
// (the same numbers as TF's `error_codes.proto` and gRPC's status codes), so the monitored
// session can react to codes exactly as TF does: OutOfRange ends training cleanly,
// Aborted/Unavailable trigger recovery.
//
//   try {
//     sess.Run({}, {loss}, {});
//   } catch (const flowtrain::OutOfRangeError& e) {
//     // input exhausted
//   } catch (const flowtrain::Error& e) {
//     LOG(ERROR) << flowtrain::CodeName(e.code()) << ": " << e.what();
//   }
//
// Throw with `ThrowError(code, parts...)` or the typed helpers (`InvalidArgument(...)`) so the
// thrown object is always the subclass that matches its code and can be caught by type.
#ifndef FLOWTRAIN_CORE_ERROR_H_
#define FLOWTRAIN_CORE_ERROR_H_

#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "flowtrain/core/str_util.h"

namespace flowtrain {

// Canonical error codes. Numbers are TensorFlow's and gRPC's; never renumber.
enum class Code : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// TF's spelling of a code, e.g. "InvalidArgument".
std::string_view CodeName(Code code);

// Base of every flowtrain error. `what()` is the message alone, as TF prints it.
class Error : public std::runtime_error {
 public:
  Error(Code code, std::string message) : std::runtime_error(std::move(message)), code_(code) {}
  Code code() const { return code_; }
  std::string message() const { return what(); }
  // "InvalidArgument: <message>", for logs.
  std::string ToString() const;

 private:
  Code code_;
};

#define FLOWTRAIN_DECLARE_ERROR(Name, CodeValue)                                              \
  class Name##Error : public Error {                                                          \
   public:                                                                                    \
    explicit Name##Error(std::string message) : Error(Code::CodeValue, std::move(message)) {} \
  };

FLOWTRAIN_DECLARE_ERROR(Cancelled, kCancelled)
FLOWTRAIN_DECLARE_ERROR(Unknown, kUnknown)
FLOWTRAIN_DECLARE_ERROR(InvalidArgument, kInvalidArgument)
FLOWTRAIN_DECLARE_ERROR(DeadlineExceeded, kDeadlineExceeded)
FLOWTRAIN_DECLARE_ERROR(NotFound, kNotFound)
FLOWTRAIN_DECLARE_ERROR(AlreadyExists, kAlreadyExists)
FLOWTRAIN_DECLARE_ERROR(PermissionDenied, kPermissionDenied)
FLOWTRAIN_DECLARE_ERROR(ResourceExhausted, kResourceExhausted)
FLOWTRAIN_DECLARE_ERROR(FailedPrecondition, kFailedPrecondition)
FLOWTRAIN_DECLARE_ERROR(Aborted, kAborted)
FLOWTRAIN_DECLARE_ERROR(OutOfRange, kOutOfRange)
FLOWTRAIN_DECLARE_ERROR(Unimplemented, kUnimplemented)
FLOWTRAIN_DECLARE_ERROR(Internal, kInternal)
FLOWTRAIN_DECLARE_ERROR(Unavailable, kUnavailable)
FLOWTRAIN_DECLARE_ERROR(DataLoss, kDataLoss)
FLOWTRAIN_DECLARE_ERROR(Unauthenticated, kUnauthenticated)

#undef FLOWTRAIN_DECLARE_ERROR

// Throws the subclass of Error that matches `code` with `message`.
[[noreturn]] void ThrowError(Code code, std::string message);

// Rethrows `error` with `context` prepended to its message, keeping its code and class.
[[noreturn]] void RethrowWithContext(const Error& error, std::string_view context);

// Converts any exception to an Error of the same code (Unknown for non-flowtrain ones),
// keeping the message. Used where an exception crosses a thread or process boundary.
Error ErrorFromException(const std::exception_ptr& exception);

// Helpers that build the message from parts with StrCat.
#define FLOWTRAIN_ERROR_HELPER(Name)              \
  template <typename... Parts>                    \
  [[noreturn]] void Name(const Parts&... parts) { \
    ThrowError(Code::k##Name, StrCat(parts...));  \
  }
FLOWTRAIN_ERROR_HELPER(Cancelled)
FLOWTRAIN_ERROR_HELPER(Unknown)
FLOWTRAIN_ERROR_HELPER(InvalidArgument)
FLOWTRAIN_ERROR_HELPER(DeadlineExceeded)
FLOWTRAIN_ERROR_HELPER(NotFound)
FLOWTRAIN_ERROR_HELPER(AlreadyExists)
FLOWTRAIN_ERROR_HELPER(PermissionDenied)
FLOWTRAIN_ERROR_HELPER(ResourceExhausted)
FLOWTRAIN_ERROR_HELPER(FailedPrecondition)
FLOWTRAIN_ERROR_HELPER(Aborted)
FLOWTRAIN_ERROR_HELPER(OutOfRange)
FLOWTRAIN_ERROR_HELPER(Unimplemented)
FLOWTRAIN_ERROR_HELPER(Internal)
FLOWTRAIN_ERROR_HELPER(Unavailable)
FLOWTRAIN_ERROR_HELPER(DataLoss)
FLOWTRAIN_ERROR_HELPER(Unauthenticated)
#undef FLOWTRAIN_ERROR_HELPER

// Throws InvalidArgument with the message parts when `condition` is false.
#define FT_REQUIRE(condition, ...)                               \
  do {                                                           \
    if (!(condition)) ::flowtrain::InvalidArgument(__VA_ARGS__); \
  } while (false)

// Throws Internal naming the broken invariant when `condition` is false.
#define FT_CHECK_INTERNAL(condition)                                                                      \
  do {                                                                                                    \
    if (!(condition)) ::flowtrain::Internal("Check failed: " #condition " at ", __FILE__, ":", __LINE__); \
  } while (false)

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_ERROR_H_
