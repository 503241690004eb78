#pragma once
// Runs the real rocebench binary (or any program) as a child, with its output captured in files.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rocebench/common/temp_dir.hpp"

// The sanitized unit tests (built beside the fuzz targets, ROCEBENCH_FUZZ) have no rocebench binary:
// a test that starts it says so and skips there.
#define RBTEST_NEEDS_ROCEBENCH()                  \
  if (std::string_view(ROCEBENCH_BINARY).empty()) \
  GTEST_SKIP() << "no rocebench binary in this build (the sanitized unit tests)"

namespace rbtest {

namespace fs = std::filesystem;

// Removed when the test process exits (rocebench/common/temp_dir.hpp).
inline fs::path temp_dir(const std::string& tag) { return rocebench::make_temp_dir(tag); }

// Writes a fixture file (one line), making its folders.
inline void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

inline std::string slurp(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The results.jsonl of the one run that `--results DIR` put in DIR (DIR/<run-id>/results.jsonl);
// an empty path when DIR holds no run or more than one.
inline fs::path results_of_only_run(const fs::path& dir) {
  std::vector<fs::path> runs;
  if (fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) runs.push_back(entry.path());
  }
  return runs.size() == 1 ? runs.front() / "results.jsonl" : fs::path();
}

struct Process {
  pid_t pid = -1;
  fs::path out, err;
  int status = -1;

  // Waits up to `seconds`; kills it past that. Returns the exit code (128+signal if signalled).
  int wait(double seconds = 120) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1000));
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return -1;  // timed out: a hang
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string stdout_text() const { return slurp(out); }
  std::string stderr_text() const { return slurp(err); }
};

inline Process start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                     const fs::path& dir, const std::string& name) {
  Process p;
  p.out = dir / (name + ".out");
  p.err = dir / (name + ".err");
  p.pid = ::fork();
  if (p.pid == 0) {
    const int o = ::open(p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    std::vector<std::string> copy = argv;
    for (auto& s : copy) args.push_back(s.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::_Exit(127);
  }
  return p;
}

inline int run(const std::vector<std::string>& argv, const fs::path& dir, const std::string& name,
               const std::map<std::string, std::string>& env = {}, double seconds = 120) {
  Process p = start(argv, env, dir, name);
  return p.wait(seconds);
}

}  // namespace rbtest
