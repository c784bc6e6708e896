#include "tests/tf/tf_test_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "flowtrain/core/error.h"

extern char** environ;

namespace flowtrain::testing {

std::string TfPython() { return FLOWTRAIN_TF_PYTHON; }

std::string TfScript(const std::string& relative) {
  return std::string(FLOWTRAIN_TF_SCRIPTS_DIR) + "/" + relative;
}

std::string TfCorpusDir() { return FLOWTRAIN_TF_CORPUS_DIR; }

PythonRun RunTfPython(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) Internal("pipe: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

  std::vector<std::string> argv_strings = {TfPython()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  // TF_USE_LEGACY_KERAS: tf.compat.v1.layers and the TF1 RNN cells exist only in tf-keras.
  std::vector<std::string> env_strings = {"TF_CPP_MIN_LOG_LEVEL=2", "PYTHONUNBUFFERED=1",
                                          "TF_USE_LEGACY_KERAS=1"};
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with("TF_CPP_MIN_LOG_LEVEL=") && !entry.starts_with("TF_USE_LEGACY_KERAS=")) {
      env_strings.emplace_back(entry);
    }
  }
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  const int spawn_error = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawn_error != 0) {
    ::close(pipe_fds[0]);
    Internal("cannot start ", argv_strings[0], ": ", std::strerror(spawn_error));
  }
  PythonRun run;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n > 0) {
      run.output.append(buffer, n);
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

}  // namespace flowtrain::testing
