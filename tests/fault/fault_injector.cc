// An LD_PRELOAD library that makes file system calls fail as a full, broken or read-only disk
// would, for the fault kit (fault_kit_test.cc). It wraps open/openat (when opening for
// writing), creat, write, pwrite, fsync, fdatasync, rename, mkdir and unlink; the calls it
// wraps fail only on regular files (never on pipes, sockets or the terminal) and only under the
// conditions set by environment variables, read once at the first call:
//
//   FT_FAULT_ERRNO    errno to fail with: ENOSPC (default), EIO, EROFS, EACCES, EDQUOT, or a
//                     number
//   FT_FAULT_OPS      which calls fail, comma-separated: open,write,fsync,rename,mkdir,unlink
//                     (default: all)
//   FT_FAULT_PATH     only on paths containing this string (default: every path)
//   FT_FAULT_AFTER    let this many matching calls succeed first (default 0); every later one
//                     fails, as a disk that filled up stays full
//   FT_FAULT_TRIGGER  only while a file of this name exists (the test creates it when the
//                     disk is to fill up)
//   FT_FAULT_ACTION   "fail" (default), or "kill": the first faulting call sends SIGKILL to
//                     the process instead, so that a kill lands at an exact point of a save
//
// The first injected fault is reported on stderr ("fault injector: ... failed with ENOSPC"),
// so that a test can tell an injected fault from a real one.
//
//   export FT_FAULT_ERRNO=EIO FT_FAULT_OPS=fsync FT_FAULT_PATH=/runs/x/
//   LD_PRELOAD=build/tests/fault/libflowtrain_fault_injector.so build/examples/fashion_mnist
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace {

enum Op : unsigned { kOpen = 1, kWrite = 2, kSync = 4, kRename = 8, kMkdir = 16, kUnlink = 32 };

struct Config {
  int error = ENOSPC;
  unsigned ops = ~0u;
  const char* path = nullptr;  // substring; null matches every path
  int64_t after = 0;
  const char* trigger = nullptr;
  bool kill = false;
};

// Read once; the environment does not change under a running test child.
const Config& GetConfig() {
  static const Config config = [] {
    Config c;
    if (const char* e = getenv("FT_FAULT_ERRNO")) {
      static const struct {
        const char* name;
        int value;
      } kNames[] = {
          {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EROFS", EROFS}, {"EACCES", EACCES}, {"EDQUOT", EDQUOT}};
      c.error = atoi(e);
      for (const auto& n : kNames) {
        if (strcmp(e, n.name) == 0) c.error = n.value;
      }
      if (c.error <= 0) c.error = ENOSPC;
    }
    if (const char* o = getenv("FT_FAULT_OPS")) {
      c.ops = 0;
      static const struct {
        const char* name;
        unsigned bit;
      } kOps[] = {{"open", kOpen},     {"write", kWrite}, {"fsync", kSync},
                  {"rename", kRename}, {"mkdir", kMkdir}, {"unlink", kUnlink}};
      for (const auto& op : kOps) {
        if (strstr(o, op.name) != nullptr) c.ops |= op.bit;
      }
    }
    if (const char* p = getenv("FT_FAULT_PATH"); p != nullptr && *p != '\0') c.path = p;
    if (const char* a = getenv("FT_FAULT_AFTER")) c.after = atoll(a);
    if (const char* t = getenv("FT_FAULT_TRIGGER"); t != nullptr && *t != '\0') c.trigger = t;
    if (const char* k = getenv("FT_FAULT_ACTION")) c.kill = strcmp(k, "kill") == 0;
    return c;
  }();
  return config;
}

std::atomic<int64_t> matching_calls{0};
std::atomic<bool> reported{false};

template <typename Fn>
Fn Real(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

// The path an open descriptor refers to, if it is a regular file.
bool RegularFilePath(int fd, char* out, size_t size) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, out, size - 1);
  if (n < 0) return false;
  out[n] = '\0';
  return true;
}

// True if this call is to fail (errno is then set); `path` is what the call names.
bool Inject(Op op, const char* call, const char* path) {
  const Config& c = GetConfig();
  if ((c.ops & op) == 0 || path == nullptr) return false;
  if (c.path != nullptr && strstr(path, c.path) == nullptr) return false;
  if (c.trigger != nullptr && access(c.trigger, F_OK) != 0) return false;
  if (matching_calls.fetch_add(1) < c.after) return false;
  if (!reported.exchange(true)) {
    char line[512];
    const int n = snprintf(line, sizeof(line), "fault injector: %s(%s) %s with %s\n", call, path,
                           c.kill ? "killed the process" : "failed", strerrorname_np(c.error));
    Real<ssize_t (*)(int, const void*, size_t)>("write")(2, line, n > 0 ? static_cast<size_t>(n) : 0);
  }
  if (c.kill) raise(SIGKILL);
  errno = c.error;
  return true;
}

bool InjectOnFd(Op op, const char* call, int fd) {
  if ((GetConfig().ops & op) == 0) return false;
  char path[4096];
  return RegularFilePath(fd, path, sizeof(path)) && Inject(op, call, path);
}

bool OpensForWriting(int flags) { return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0; }

// open and open64 (`name`) after their variadic mode is read: fails by the rules for an open
// for writing, else calls the real one.
int InjectedOpen(const char* name, const char* path, int flags, mode_t mode) {
  if (OpensForWriting(flags) && Inject(kOpen, name, path)) return -1;
  return Real<int (*)(const char*, int, ...)>(name)(path, flags, mode);
}

}  // namespace

extern "C" {

int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & (O_CREAT | O_TMPFILE)) != 0) {
    va_list args;
    va_start(args, flags);
    mode = va_arg(args, mode_t);
    va_end(args);
  }
  return InjectedOpen("open", path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & (O_CREAT | O_TMPFILE)) != 0) {
    va_list args;
    va_start(args, flags);
    mode = va_arg(args, mode_t);
    va_end(args);
  }
  return InjectedOpen("open64", path, flags, mode);
}

int openat(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & (O_CREAT | O_TMPFILE)) != 0) {
    va_list args;
    va_start(args, flags);
    mode = va_arg(args, mode_t);
    va_end(args);
  }
  if (OpensForWriting(flags) && Inject(kOpen, "openat", path)) return -1;
  return Real<int (*)(int, const char*, int, ...)>("openat")(dirfd, path, flags, mode);
}

int creat(const char* path, mode_t mode) {
  if (Inject(kOpen, "creat", path)) return -1;
  return Real<int (*)(const char*, mode_t)>("creat")(path, mode);
}

ssize_t write(int fd, const void* data, size_t n) {
  if (InjectOnFd(kWrite, "write", fd)) return -1;
  return Real<ssize_t (*)(int, const void*, size_t)>("write")(fd, data, n);
}

ssize_t pwrite(int fd, const void* data, size_t n, off_t offset) {
  if (InjectOnFd(kWrite, "pwrite", fd)) return -1;
  return Real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite")(fd, data, n, offset);
}

int fsync(int fd) {
  if (InjectOnFd(kSync, "fsync", fd)) return -1;
  return Real<int (*)(int)>("fsync")(fd);
}

int fdatasync(int fd) {
  if (InjectOnFd(kSync, "fdatasync", fd)) return -1;
  return Real<int (*)(int)>("fdatasync")(fd);
}

int rename(const char* from, const char* to) {
  if (Inject(kRename, "rename", to)) return -1;
  return Real<int (*)(const char*, const char*)>("rename")(from, to);
}

int mkdir(const char* path, mode_t mode) {
  if (Inject(kMkdir, "mkdir", path)) return -1;
  return Real<int (*)(const char*, mode_t)>("mkdir")(path, mode);
}

int unlink(const char* path) {
  if (Inject(kUnlink, "unlink", path)) return -1;
  return Real<int (*)(const char*)>("unlink")(path);
}

}  // extern "C"
