#include "flowtrain/core/error.h"

namespace flowtrain {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kCancelled:
      return "Cancelled";
    case Code::kUnknown:
      return "Unknown";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kDeadlineExceeded:
      return "DeadlineExceeded";
    case Code::kNotFound:
      return "NotFound";
    case Code::kAlreadyExists:
      return "AlreadyExists";
    case Code::kPermissionDenied:
      return "PermissionDenied";
    case Code::kResourceExhausted:
      return "ResourceExhausted";
    case Code::kFailedPrecondition:
      return "FailedPrecondition";
    case Code::kAborted:
      return "Aborted";
    case Code::kOutOfRange:
      return "OutOfRange";
    case Code::kUnimplemented:
      return "Unimplemented";
    case Code::kInternal:
      return "Internal";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kDataLoss:
      return "DataLoss";
    case Code::kUnauthenticated:
      return "Unauthenticated";
  }
  return "Unknown";
}

std::string Error::ToString() const { return StrCat(CodeName(code_), ": ", what()); }

void ThrowError(Code code, std::string message) {
  switch (code) {
    case Code::kCancelled:
      throw CancelledError(std::move(message));
    case Code::kInvalidArgument:
      throw InvalidArgumentError(std::move(message));
    case Code::kDeadlineExceeded:
      throw DeadlineExceededError(std::move(message));
    case Code::kNotFound:
      throw NotFoundError(std::move(message));
    case Code::kAlreadyExists:
      throw AlreadyExistsError(std::move(message));
    case Code::kPermissionDenied:
      throw PermissionDeniedError(std::move(message));
    case Code::kResourceExhausted:
      throw ResourceExhaustedError(std::move(message));
    case Code::kFailedPrecondition:
      throw FailedPreconditionError(std::move(message));
    case Code::kAborted:
      throw AbortedError(std::move(message));
    case Code::kOutOfRange:
      throw OutOfRangeError(std::move(message));
    case Code::kUnimplemented:
      throw UnimplementedError(std::move(message));
    case Code::kInternal:
      throw InternalError(std::move(message));
    case Code::kUnavailable:
      throw UnavailableError(std::move(message));
    case Code::kDataLoss:
      throw DataLossError(std::move(message));
    case Code::kUnauthenticated:
      throw UnauthenticatedError(std::move(message));
    case Code::kOk:  // An OK "error" is a caller bug; report it rather than hide it.
    case Code::kUnknown:
      break;
  }
  throw UnknownError(std::move(message));
}

void RethrowWithContext(const Error& error, std::string_view context) {
  ThrowError(error.code(), StrCat(context, error.what()));
}

Error ErrorFromException(const std::exception_ptr& exception) {
  try {
    std::rethrow_exception(exception);
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    return Error(Code::kUnknown, e.what());
  } catch (...) {
    return Error(Code::kUnknown, "unknown exception");
  }
}

}  // namespace flowtrain
