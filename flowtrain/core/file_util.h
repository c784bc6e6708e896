// File helpers with flowtrain errors, and the atomic writer every saved file goes through:
// data is written under a temporary name in the same directory, flushed, fsync'ed, and renamed
// over the final name, so a crash at any instant leaves either the old file or the new one.
//
//   AtomicFileWriter out("runs/x/checkpoint");
//   out.Append(text);
//   out.Commit();                    // without Commit, the destructor removes the temp file
//
//   WriteFileAtomically("runs/x/graph.pbtxt", text);
//   std::string data = ReadFileToString("runs/x/checkpoint");   // NotFound if missing
#ifndef FLOWTRAIN_CORE_FILE_UTIL_H_
#define FLOWTRAIN_CORE_FILE_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flowtrain {

// Throws the error matching `errno_value` (NotFound, PermissionDenied, ResourceExhausted for a
// full disk, ...) naming `path` and what was being done.
[[noreturn]] void ThrowIOError(std::string_view action, std::string_view path, int errno_value);

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();  // removes the temporary file unless committed

  void Append(std::string_view data);
  void Append(const void* data, size_t n) { Append(std::string_view(static_cast<const char*>(data), n)); }
  // Bytes appended so far.
  uint64_t size() const { return size_; }
  // Flushes, fsyncs, renames into place and fsyncs the directory.
  void Commit();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  void FlushBuffer();

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string buffer_;
  bool committed_ = false;
};

void WriteFileAtomically(const std::string& path, std::string_view contents);
std::string ReadFileToString(const std::string& path);
bool FileExists(const std::string& path);
// Size in bytes; NotFound if missing.
uint64_t FileSize(const std::string& path);
// Creates `dir` and its parents; succeeds if it exists.
void CreateDirectories(const std::string& dir);
// Deletes a file; a missing file is not an error.
void DeleteFileIfExists(const std::string& path);
// Names (not paths) of the entries of `dir`, sorted.
std::vector<std::string> ListDirectory(const std::string& dir);
std::string JoinPath(std::string_view a, std::string_view b);
// The directory part of `path` ("" for a bare name), as os.path.dirname.
std::string Dirname(std::string_view path);
// The last part of `path`, as os.path.basename.
std::string Basename(std::string_view path);
bool IsAbsolutePath(std::string_view path);
// A random hex string, for temporary and event file names.
std::string RandomHex(int bytes);

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_FILE_UTIL_H_
