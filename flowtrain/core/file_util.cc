#include "flowtrain/core/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "flowtrain/core/str_util.h"
#include "flowtrain/core/error.h"

namespace flowtrain {
namespace {

constexpr size_t kWriteBufferBytes = 1 << 20;

void WriteAll(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t written = ::write(fd, data, n);
    if (written < 0) {
      if (errno == EINTR) continue;
      ThrowIOError("writing", path, errno);
    }
    data += written;
    n -= static_cast<size_t>(written);
  }
}

void SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // Best effort: some filesystems do not allow opening directories.
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void ThrowIOError(std::string_view action, std::string_view path, int errno_value) {
  std::string message = StrCat("Error ", action, " '", path, "': ", std::strerror(errno_value));
  switch (errno_value) {
    case ENOENT:
    case ENOTDIR:
      ThrowError(Code::kNotFound, std::move(message));
    case EACCES:
    case EPERM:
    case EROFS:
      ThrowError(Code::kPermissionDenied, std::move(message));
    case ENOSPC:
    case EDQUOT:
    case ENOMEM:
      ThrowError(Code::kResourceExhausted, std::move(message));
    case EEXIST:
      ThrowError(Code::kAlreadyExists, std::move(message));
    case EINVAL:
    case ENAMETOOLONG:
    case EISDIR:
      ThrowError(Code::kInvalidArgument, std::move(message));
    default:
      ThrowError(Code::kInternal, std::move(message));
  }
}

std::string RandomHex(int bytes) {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ (static_cast<uint64_t>(::getpid()) << 32));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (int i = 0; i < bytes; ++i) {
    const uint8_t b = static_cast<uint8_t>(rng());
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), temp_path_(StrCat(path_, ".tmp", RandomHex(16))) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) ThrowIOError("creating", temp_path_, errno);
  buffer_.reserve(kWriteBufferBytes);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::Append(std::string_view data) {
  if (committed_) FailedPrecondition("Append to '", path_, "' after Commit");
  size_ += data.size();
  if (buffer_.size() + data.size() <= kWriteBufferBytes) {
    buffer_.append(data);
    return;
  }
  FlushBuffer();
  if (data.size() >= kWriteBufferBytes) {
    WriteAll(fd_, data.data(), data.size(), temp_path_);
  } else {
    buffer_.append(data);
  }
}

void AtomicFileWriter::FlushBuffer() {
  if (buffer_.empty()) return;
  WriteAll(fd_, buffer_.data(), buffer_.size(), temp_path_);
  buffer_.clear();
}

void AtomicFileWriter::Commit() {
  if (committed_) return;
  FlushBuffer();
  if (::fsync(fd_) != 0) ThrowIOError("syncing", temp_path_, errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    ThrowIOError("closing", temp_path_, errno);
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) ThrowIOError("renaming into", path_, errno);
  committed_ = true;
  SyncDirectory(Dirname(path_));
}

void WriteFileAtomically(const std::string& path, std::string_view contents) {
  AtomicFileWriter writer(path);
  writer.Append(contents);
  writer.Commit();
}

std::string ReadFileToString(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ThrowIOError("opening", path, errno);
  std::string out;
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ThrowIOError("reading", path, err);
    }
    if (n == 0) break;
    out.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) ThrowIOError("getting the size of", path, errno);
  return static_cast<uint64_t>(st.st_size);
}

void CreateDirectories(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) ThrowIOError("creating directory", dir, ec.value());
}

void DeleteFileIfExists(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) ThrowIOError("deleting", path, errno);
}

std::vector<std::string> ListDirectory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) ThrowIOError("listing", dir, ec.value());
  std::vector<std::string> names;
  for (const auto& entry : it) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  if (IsAbsolutePath(b)) return std::string(b);
  if (a.back() == '/') return StrCat(a, b);
  return StrCat(a, "/", b);
}

std::string Dirname(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return "";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool IsAbsolutePath(std::string_view path) { return !path.empty() && path.front() == '/'; }

}  // namespace flowtrain
