#ifndef GCPSTREAM_TESTS_E2E_CHILD_PROCESS_H_
#define GCPSTREAM_TESTS_E2E_CHILD_PROCESS_H_

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

// Running a job as a separate process, for the end-to-end tests that kill it.
namespace gcpstream::e2e {

// Starts `args[0]` with `args`. Its stdout goes to `log` (appended; "/dev/null" keeps it out of
// the test output), and its stderr too when `with_stderr`.
inline pid_t Spawn(const std::vector<std::string>& args, const std::string& log = "/dev/null",
                   bool with_stderr = false) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (std::freopen(log.c_str(), "a", stdout) == nullptr) _exit(126);
    if (with_stderr && std::freopen(log.c_str(), "a", stderr) == nullptr) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for the child up to `timeout`; returns its exit status (128 + the signal when a signal
// ended it), or -1 on timeout.
inline int WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

// The whole text of a file (a job's log); empty when it cannot be read.
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Whether a job checkpointing under `dir` completed a checkpoint (a folder with _metadata).
inline bool HasCompletedCheckpoint(const std::filesystem::path& dir) {
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().filename() == "_metadata") return true;
  }
  return false;
}

}  // namespace gcpstream::e2e

#endif  // GCPSTREAM_TESTS_E2E_CHILD_PROCESS_H_
