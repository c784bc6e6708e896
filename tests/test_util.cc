#include "tests/test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/proto/event.pb.h"

namespace flowtrain::testing {
namespace {

std::vector<std::string>& TempDirs() {
  static auto* dirs = new std::vector<std::string>();
  return *dirs;
}

void RemoveTempDirs() {
  for (const std::string& dir : TempDirs()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

}  // namespace

std::string FixturesDir() {
  const char* env = std::getenv("FLOWTRAIN_FIXTURES_DIR");
  return env != nullptr ? env : FLOWTRAIN_FIXTURES_DIR;
}

std::string FixturePath(const std::string& relative) { return FixturesDir() + "/" + relative; }

std::string AbsentFixtures(std::initializer_list<std::string_view> fixtures) {
  std::string absent;
  int count = 0;
  for (std::string_view fixture : fixtures) {
    std::error_code ec;
    if (std::filesystem::exists(FixturePath(std::string(fixture)), ec)) continue;
    absent += (absent.empty() ? "" : ", ") + std::string(fixture);
    ++count;
  }
  if (absent.empty()) return absent;
  return (count == 1 ? "fixture " : "fixtures ") + absent + (count == 1 ? " is" : " are") + " absent from " +
         FixturesDir() + " (FLOWTRAIN_FIXTURES_DIR names the folder of TF-written fixtures)";
}

std::string MakeTempDir(const std::string& prefix) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/" + prefix + "_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) std::abort();
  if (TempDirs().empty()) std::atexit(RemoveTempDirs);
  TempDirs().push_back(buffer.data());
  return buffer.data();
}

std::string BinaryDir() { return FLOWTRAIN_BINARY_DIR; }

std::string FlowtrainCliPath() { return BinaryDir() + "/tools/flowtrain"; }

CliResult RunFlowtrainCli(const std::string& args) {
  return RunShellCommand("'" + FlowtrainCliPath() + "' " + args);
}

CliResult RunShellCommand(const std::string& command) {
  CliResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TlsTestFiles MakeTlsTestFiles(std::string* why_not) {
  const std::string dir = MakeTempDir("tls");
  {
    std::ofstream ext(dir + "/ext.cnf");
    ext << "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
           "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n";
  }
  // A CA, then a key and certificate it signs, for `ca` and `name`.
  auto make = [&](const std::string& ca, const std::string& name) {
    const std::string curve = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
    const std::string commands =
        "cd '" + dir + "' && openssl req -x509" + curve + "-keyout " + ca + ".key -out " + ca +
        ".pem -days 2 -subj /CN=" + ca + " && openssl req" + curve + "-keyout " + name + ".key -out " + name +
        ".csr -subj /CN=localhost && openssl x509 -req -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
        ".key -set_serial 1 -days 2 -extfile ext.cnf -out " + name + ".pem";
    return std::system(("(" + commands + ") > '" + dir + "/openssl.log' 2>&1").c_str()) == 0;
  };
  if (std::system("openssl version > /dev/null 2>&1") != 0) {
    *why_not = "the openssl command is not installed (it makes the test certificates)";
    return {};
  }
  if (!make("ca", "task") || !make("rogue_ca", "rogue")) {
    *why_not = "openssl failed to make test certificates, see " + dir + "/openssl.log";
    return {};
  }
  return TlsTestFiles{.ca = dir + "/ca.pem",
                      .cert = dir + "/task.pem",
                      .key = dir + "/task.key",
                      .rogue_ca = dir + "/rogue_ca.pem",
                      .rogue_cert = dir + "/rogue.pem",
                      .rogue_key = dir + "/rogue.key"};
}

std::vector<uint64_t> RecordOffsets(const std::string& event_file) {
  io::EventFileReader reader(event_file);
  std::vector<uint64_t> offsets;
  tensorflow::Event event;
  for (uint64_t at = reader.offset(); reader.ReadEvent(&event); at = reader.offset()) offsets.push_back(at);
  return offsets;
}

}  // namespace flowtrain::testing
