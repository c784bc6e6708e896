#include "flowtrain/train/checkpoint_management.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::train {
namespace {

// Python's os.path.relpath: both paths made absolute against the working directory and
// normalized, then the first expressed relative to the second.
std::string RelativePath(const std::string& path, const std::string& start) {
  auto normalized = [](const std::string& p) {
    std::string s = std::filesystem::absolute(p).lexically_normal().string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return std::filesystem::path(s);
  };
  const std::string relative = normalized(path).lexically_relative(normalized(start)).string();
  return relative.empty() ? "." : relative;
}

// Python's repr(float): the shortest digits that read back exactly, in fixed notation when the
// decimal exponent is in [-4, 16), with ".0" on integral values; otherwise "1e+16" style.
std::string PythonFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  const std::string_view text(buffer, result.ptr - buffer);
  const size_t e = text.find('e');
  std::string_view mantissa = text.substr(0, e);
  std::string sign;
  if (!mantissa.empty() && mantissa.front() == '-') {
    sign = "-";
    mantissa.remove_prefix(1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  int exponent = 0;
  std::from_chars(text.data() + e + (text[e + 1] == '+' ? 2 : 1), text.data() + text.size(), exponent);
  const int point = exponent + 1;  // digits before the decimal point
  const int n = static_cast<int>(digits.size());
  if (point > -4 && point <= 16) {
    if (point <= 0) return StrCat(sign, "0.", std::string(-point, '0'), digits);
    if (point >= n) return StrCat(sign, digits, std::string(point - n, '0'), ".0");
    return StrCat(sign, digits.substr(0, point), ".", digits.substr(point));
  }
  char exp_text[16];
  std::snprintf(exp_text, sizeof(exp_text), "e%c%02d", exponent < 0 ? '-' : '+',
                exponent < 0 ? -exponent : exponent);
  return StrCat(sign, digits.substr(0, 1), n > 1 ? "." : "", digits.substr(1), exp_text);
}

// Python protobuf's text_encoding.CEscape with as_utf8=False (C++ TextFormat escapes the same
// way): named escapes for \n \r \t " ' \, three-digit octal for other bytes outside 32..126.
std::string CEscape(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 32 || c >= 127) {
          char octal[8];
          std::snprintf(octal, sizeof(octal), "\\%03o", c);
          out += octal;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out;
}

// Collects parse errors for the "Checkpoint ignored" warning instead of protobuf's own log.
class CollectingErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!errors_.empty()) errors_ += "; ";
    StrAppend(&errors_, "line ", line + 1, " column ", column + 1, ": ", message);
  }
  const std::string& errors() const { return errors_; }

 private:
  std::string errors_;
};

std::string CheckpointStatePath(const std::string& dir, const std::string& latest_filename) {
  return JoinPath(dir, latest_filename.empty() ? kDefaultLatestFilename : latest_filename);
}

// Seconds since the Epoch of the last modification of `path`; nullopt if it is gone.
std::optional<double> Mtime(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
}

std::optional<double> IndexMtime(const std::string& prefix) { return Mtime(prefix + ".index"); }

// Deletes a file that was just seen; losing a race with another deleter is only a warning.
void DeleteMatchedFile(const std::string& path) {
  if (::unlink(path.c_str()) == 0) return;
  if (errno == ENOENT) {
    FT_LOG(WARNING) << "Hit NotFoundError when deleting '" << path
                    << "', possibly because another process/thread is also deleting/moving "
                       "the same file";
    return;
  }
  ThrowIOError("deleting", path, errno);
}

// True for "<base>.data-?????-of-?????" where each ? is any character, as TF's glob matches.
bool IsDataFileOf(std::string_view name, std::string_view base) {
  const std::string head = StrCat(base, ".data-");
  if (name.size() != head.size() + 14 || name.substr(0, head.size()) != head) return false;
  return name.substr(head.size() + 5, 4) == "-of-";
}

double NowSinceEpoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The global step ending a checkpoint's prefix ("model.ckpt-1200" -> 1200), if any.
std::optional<int64_t> StepOfPrefix(std::string_view name) {
  const size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash + 1 == name.size()) return std::nullopt;
  int64_t step = 0;
  const auto [end, ec] = std::from_chars(name.data() + dash + 1, name.data() + name.size(), step);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return step;
}

// The patterns below only ever see one directory entry's name (at most NAME_MAX bytes), which
// keeps std::regex's recursion shallow; paths from files are never matched with it.
// Matches what follows `<base>` in the name of a sharded save's temporary directory.
const std::regex& TempDirSuffix() {
  static const std::regex kSuffix(R"((-\d+)?_temp_[0-9a-f]{32})");
  return kSuffix;
}

// Matches an AtomicFileWriter temporary of a checkpoint's file, after `<base>`.
const std::regex& TempFileSuffix() {
  static const std::regex kSuffix(R"((-\d+)?\.[A-Za-z0-9_.-]+\.tmp[0-9a-f]{32})");
  return kSuffix;
}

// Matches what a sharded save writes inside its temporary directory.
const std::regex& TempPartFile() {
  static const std::regex kPart(R"(part-\d{5}-of-\d{5}\.(index|data-\d{5}-of-\d{5})(\.tmp[0-9a-f]{32})?)");
  return kPart;
}

}  // namespace

std::vector<std::string> FindCheckpointsInDirectory(const std::string& checkpoint_dir) {
  std::vector<std::string> names;
  try {
    names = ListDirectory(checkpoint_dir.empty() ? "." : checkpoint_dir);
  } catch (const Error& e) {
    FT_LOG(WARNING) << "No checkpoints found: " << e.what();
    return {};
  }
  struct Found {
    std::string prefix;
    std::optional<int64_t> step;
    double mtime;
  };
  std::vector<Found> found;
  constexpr std::string_view kIndex = ".index";
  for (const std::string& name : names) {
    if (name.size() <= kIndex.size() || !name.ends_with(kIndex)) continue;
    const std::string base = name.substr(0, name.size() - kIndex.size());
    // The shard count is in the data files' names; every shard must be there.
    int num_shards = 0;
    for (const std::string& other : names) {
      if (IsDataFileOf(other, base)) {
        std::from_chars(other.data() + other.size() - 5, other.data() + other.size(), num_shards);
        break;
      }
    }
    if (num_shards <= 0) continue;
    const std::string prefix = JoinPath(checkpoint_dir, base);
    bool complete = true;
    for (int shard = 0; shard < num_shards && complete; ++shard) {
      char data[32];
      std::snprintf(data, sizeof(data), ".data-%05d-of-%05d", shard, num_shards);
      complete = std::binary_search(names.begin(), names.end(), base + data);
    }
    const std::optional<double> mtime = IndexMtime(prefix);
    if (complete && mtime) found.push_back({prefix, StepOfPrefix(base), *mtime});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.step.has_value() != b.step.has_value()) return a.step.has_value();
    if (a.step && *a.step != *b.step) return *a.step > *b.step;
    return a.mtime > b.mtime;
  });
  std::vector<std::string> prefixes;
  for (Found& f : found) prefixes.push_back(std::move(f.prefix));
  return prefixes;
}

int RemoveStaleSaveTemporaries(const std::string& save_path, const std::string& latest_filename,
                               std::chrono::seconds min_age) {
  const std::string dir = Dirname(save_path).empty() ? "." : Dirname(save_path);
  const std::string base = Basename(save_path);
  const std::string state_temp =
      StrCat(latest_filename.empty() ? kDefaultLatestFilename : latest_filename, ".tmp");
  std::vector<std::string> names;
  try {
    names = ListDirectory(dir);
  } catch (const Error&) {
    return 0;  // no directory, nothing left behind; the save itself reports it
  }
  const double now = NowSinceEpoch();
  auto stale = [&](std::optional<double> mtime) { return mtime && now - *mtime >= min_age.count(); };
  auto remove = [&](const std::string& path, bool directory) {
    if ((directory ? ::rmdir(path.c_str()) : ::unlink(path.c_str())) == 0) return true;
    FT_LOG(WARNING) << "Could not delete '" << path << "', left by an interrupted save: " << strerror(errno);
    return false;
  };
  static const std::regex kHex32("[0-9a-f]{32}");
  std::error_code ec;
  int removed = 0;
  for (const std::string& name : names) {
    const std::string path = JoinPath(dir, name);
    if (name.starts_with(state_temp) && std::regex_match(name.substr(state_temp.size()), kHex32)) {
      if (stale(Mtime(path)) && remove(path, false)) ++removed;
      continue;
    }
    if (!name.starts_with(base)) continue;
    const std::string rest = name.substr(base.size());
    if (std::regex_match(rest, TempFileSuffix())) {
      if (stale(Mtime(path)) && remove(path, false)) ++removed;
      continue;
    }
    if (!std::regex_match(rest, TempDirSuffix()) || !std::filesystem::is_directory(path, ec)) continue;
    std::vector<std::string> parts;
    try {
      parts = ListDirectory(path);
    } catch (const Error& e) {
      FT_LOG(WARNING) << "Could not list '" << path << "', left by an interrupted save: " << e.what();
      continue;
    }
    // A save in progress keeps touching its directory or the files in it.
    bool untouched = stale(Mtime(path));
    bool only_parts = true;
    for (const std::string& part : parts) {
      untouched = untouched && stale(Mtime(JoinPath(path, part)));
      only_parts = only_parts && std::regex_match(part, TempPartFile());
    }
    if (!untouched) continue;
    if (!only_parts) {
      FT_LOG(WARNING) << "Leaving '" << path << "': it looks like an interrupted save's temporary directory "
                      << "but holds files no save writes";
      continue;
    }
    bool all_removed = true;
    for (const std::string& part : parts) {
      if (remove(JoinPath(path, part), false)) {
        ++removed;
      } else {
        all_removed = false;
      }
    }
    if (all_removed && remove(path, true)) ++removed;
  }
  if (removed > 0) {
    FT_LOG(INFO) << "Deleted " << removed << " files and directories left in " << dir
                 << " by interrupted saves";
  }
  return removed;
}

std::string CheckpointStateToText(const tensorflow::CheckpointState& state) {
  std::string out;
  if (!state.model_checkpoint_path().empty()) {
    StrAppend(&out, "model_checkpoint_path: \"", CEscape(state.model_checkpoint_path()), "\"\n");
  }
  for (const std::string& path : state.all_model_checkpoint_paths()) {
    StrAppend(&out, "all_model_checkpoint_paths: \"", CEscape(path), "\"\n");
  }
  for (double timestamp : state.all_model_checkpoint_timestamps()) {
    StrAppend(&out, "all_model_checkpoint_timestamps: ", PythonFloatRepr(timestamp), "\n");
  }
  // proto3 has no presence for scalars: zero is the default and is not printed.
  if (state.last_preserved_timestamp() != 0.0) {
    StrAppend(&out, "last_preserved_timestamp: ", PythonFloatRepr(state.last_preserved_timestamp()), "\n");
  }
  return out;
}

tensorflow::CheckpointState GenerateCheckpointStateProto(
    const std::string& save_dir, const std::string& model_checkpoint_path,
    std::vector<std::string> all_model_checkpoint_paths,
    const std::vector<double>& all_model_checkpoint_timestamps,
    std::optional<double> last_preserved_timestamp) {
  if (all_model_checkpoint_paths.empty() || all_model_checkpoint_paths.back() != model_checkpoint_path) {
    FT_LOG(INFO) << model_checkpoint_path << " is not in all_model_checkpoint_paths. Manually adding it.";
    all_model_checkpoint_paths.push_back(model_checkpoint_path);
  }
  if (!all_model_checkpoint_timestamps.empty() &&
      all_model_checkpoint_timestamps.size() != all_model_checkpoint_paths.size()) {
    InvalidArgument("Checkpoint timestamps, if provided, must match checkpoint paths (got ",
                    all_model_checkpoint_paths.size(), " paths and ", all_model_checkpoint_timestamps.size(),
                    " timestamps)");
  }
  std::string model_path = model_checkpoint_path;
  // Relative paths are taken to include a relative save_dir, and are rewritten relative to it.
  if (!IsAbsolutePath(save_dir)) {
    if (!IsAbsolutePath(model_path)) model_path = RelativePath(model_path, save_dir);
    for (std::string& path : all_model_checkpoint_paths) {
      if (!IsAbsolutePath(path)) path = RelativePath(path, save_dir);
    }
  }
  tensorflow::CheckpointState state;
  state.set_model_checkpoint_path(model_path);
  for (std::string& path : all_model_checkpoint_paths) {
    state.add_all_model_checkpoint_paths(std::move(path));
  }
  for (double timestamp : all_model_checkpoint_timestamps) {
    state.add_all_model_checkpoint_timestamps(timestamp);
  }
  if (last_preserved_timestamp) state.set_last_preserved_timestamp(*last_preserved_timestamp);
  return state;
}

void UpdateCheckpointStateInternal(const std::string& save_dir, const std::string& model_checkpoint_path,
                                   const std::vector<std::string>& all_model_checkpoint_paths,
                                   const std::string& latest_filename, bool save_relative_paths,
                                   const std::vector<double>& all_model_checkpoint_timestamps,
                                   std::optional<double> last_preserved_timestamp) {
  const std::string state_path = CheckpointStatePath(save_dir, latest_filename);
  tensorflow::CheckpointState state;
  if (save_relative_paths) {
    auto relative = [&](const std::string& path) {
      return IsAbsolutePath(path) ? RelativePath(path, save_dir) : path;
    };
    std::vector<std::string> relative_paths;
    for (const std::string& path : all_model_checkpoint_paths) {
      relative_paths.push_back(relative(path));
    }
    state = GenerateCheckpointStateProto(save_dir, relative(model_checkpoint_path), std::move(relative_paths),
                                         all_model_checkpoint_timestamps, last_preserved_timestamp);
  } else {
    state = GenerateCheckpointStateProto(save_dir, model_checkpoint_path, all_model_checkpoint_paths,
                                         all_model_checkpoint_timestamps, last_preserved_timestamp);
  }
  if (state_path == state.model_checkpoint_path()) {
    InvalidArgument("Save path '", model_checkpoint_path,
                    "' conflicts with path used for checkpoint state.  Please use a different "
                    "save path.");
  }
  // Readers poll this file while training runs, so it must never be seen half-written.
  WriteFileAtomically(state_path, CheckpointStateToText(state));
}

std::optional<tensorflow::CheckpointState> GetCheckpointState(const std::string& checkpoint_dir,
                                                              const std::string& latest_filename) {
  const std::string state_path = CheckpointStatePath(checkpoint_dir, latest_filename);
  if (!FileExists(state_path)) return std::nullopt;
  std::string text;
  try {
    text = ReadFileToString(state_path);
  } catch (const Error& e) {
    FT_LOG(WARNING) << CodeName(e.code()) << ": " << e.what();
    FT_LOG(WARNING) << state_path << ": Checkpoint ignored";
    return std::nullopt;
  }
  tensorflow::CheckpointState state;
  google::protobuf::TextFormat::Parser parser;
  CollectingErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &state)) {
    FT_LOG(WARNING) << "ParseError: " << errors.errors();
    FT_LOG(WARNING) << state_path << ": Checkpoint ignored";
    return std::nullopt;
  }
  if (state.model_checkpoint_path().empty()) {
    InvalidArgument("Invalid checkpoint state loaded from ", checkpoint_dir);
  }
  if (!IsAbsolutePath(state.model_checkpoint_path())) {
    state.set_model_checkpoint_path(JoinPath(checkpoint_dir, state.model_checkpoint_path()));
  }
  for (std::string& path : *state.mutable_all_model_checkpoint_paths()) {
    if (!IsAbsolutePath(path)) path = JoinPath(checkpoint_dir, path);
  }
  return state;
}

std::optional<std::string> LatestCheckpoint(const std::string& checkpoint_dir,
                                            const std::string& latest_filename) {
  std::optional<tensorflow::CheckpointState> state = GetCheckpointState(checkpoint_dir, latest_filename);
  if (!state) return std::nullopt;
  if (CheckpointExists(state->model_checkpoint_path())) return state->model_checkpoint_path();
  FT_LOG(ERROR) << "Couldn't match files for checkpoint " << state->model_checkpoint_path();
  return std::nullopt;
}

bool CheckpointExists(const std::string& prefix) { return FileExists(prefix + ".index"); }

std::vector<double> GetCheckpointMtimes(const std::vector<std::string>& prefixes) {
  std::vector<double> mtimes;
  for (const std::string& prefix : prefixes) {
    if (std::optional<double> mtime = IndexMtime(prefix)) mtimes.push_back(*mtime);
  }
  return mtimes;
}

std::vector<CheckpointWithMtime> ExistingCheckpoints(const std::vector<std::string>& prefixes) {
  std::vector<CheckpointWithMtime> found;
  for (const std::string& prefix : prefixes) {
    if (std::optional<double> mtime = IndexMtime(prefix)) found.push_back({prefix, *mtime});
  }
  return found;
}

void RemoveCheckpoint(const std::string& prefix, const std::string& meta_graph_suffix) {
  for (const std::string& path : {MetaGraphFilename(prefix, meta_graph_suffix), prefix + ".index"}) {
    if (FileExists(path)) DeleteMatchedFile(path);
  }
  const std::string dir = Dirname(prefix);
  const std::string base = Basename(prefix);
  std::vector<std::string> names;
  try {
    names = ListDirectory(dir.empty() ? "." : dir);
  } catch (const NotFoundError&) {
    return;  // no directory, no data files
  }
  for (const std::string& name : names) {
    if (IsDataFileOf(name, base)) DeleteMatchedFile(JoinPath(dir, name));
  }
}

std::string MetaGraphFilename(const std::string& checkpoint_filename, const std::string& meta_graph_suffix) {
  // TF strips the regex "-[\d\?]+-of-\d+$". Matched by hand: std::regex recurses once a
  // character, and a checkpoint state file naming a path of 100k digits overflowed the stack.
  const std::string_view name = checkpoint_filename;
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t total_start = name.size();
  while (total_start > 0 && is_digit(name[total_start - 1])) --total_start;
  std::string_view base = name;
  if (total_start < name.size() && total_start >= 4 && name.substr(total_start - 4, 4) == "-of-") {
    const size_t shard_end = total_start - 4;
    size_t shard_start = shard_end;
    while (shard_start > 0 && (is_digit(name[shard_start - 1]) || name[shard_start - 1] == '?'))
      --shard_start;
    if (shard_start < shard_end && shard_start > 0 && name[shard_start - 1] == '-') {
      base = name.substr(0, shard_start - 1);
    }
  }
  return StrCat(base, ".", meta_graph_suffix);
}

}  // namespace flowtrain::train
