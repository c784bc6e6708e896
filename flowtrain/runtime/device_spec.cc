#include "flowtrain/runtime/device_spec.h"

#include <cctype>
#include <charconv>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {
namespace {

int ParseIndex(std::string_view text, std::string_view full) {
  int value = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || value < 0) {
    InvalidArgument("Malformed device name '", full, "': bad index '", text, "'");
  }
  return value;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

DeviceSpec DeviceSpec::Parse(std::string_view name) {
  DeviceSpec spec;
  std::string_view rest = name;
  while (!rest.empty()) {
    if (rest.front() != '/') InvalidArgument("Malformed device name '", name, "'");
    rest.remove_prefix(1);
    const size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    if (part.empty()) continue;
    const size_t colon = part.find(':');
    if (colon == std::string_view::npos) InvalidArgument("Malformed device name '", name, "'");
    std::string_view key = part.substr(0, colon);
    std::string_view value = part.substr(colon + 1);
    if (key == "job") {
      spec.job = std::string(value);
    } else if (key == "replica") {
      spec.replica = ParseIndex(value, name);
    } else if (key == "task") {
      spec.task = ParseIndex(value, name);
    } else if (key == "device") {
      const size_t c2 = value.find(':');
      spec.device_type = Upper(value.substr(0, c2));
      if (c2 != std::string_view::npos && value.substr(c2 + 1) != "*") {
        spec.device_index = ParseIndex(value.substr(c2 + 1), name);
      }
    } else if (Upper(key) == "CPU" || Upper(key) == "GPU") {
      spec.device_type = Upper(key);
      if (value != "*") spec.device_index = ParseIndex(value, name);
    } else {
      InvalidArgument("Malformed device name '", name, "': unknown field '", key, "'");
    }
  }
  return spec;
}

void DeviceSpec::MergeFrom(const DeviceSpec& other) {
  if (!other.job.empty()) job = other.job;
  if (other.replica) replica = other.replica;
  if (other.task) task = other.task;
  if (!other.device_type.empty()) device_type = other.device_type;
  if (other.device_index) device_index = other.device_index;
}

std::string DeviceSpec::ToString() const {
  std::string out;
  if (!job.empty()) StrAppend(&out, "/job:", job);
  if (replica) StrAppend(&out, "/replica:", *replica);
  if (task) StrAppend(&out, "/task:", *task);
  if (!device_type.empty()) {
    StrAppend(&out, "/device:", device_type, ":");
    if (device_index) {
      StrAppend(&out, *device_index);
    } else {
      out += "*";
    }
  }
  return out;
}

}  // namespace flowtrain
