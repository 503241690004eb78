#pragma once
// A copy of a fixture host (tests/fixtures/<name>/{root,capture}) in a temp folder, for a test to
// misconfigure one setting at a time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/netcheck/checks.hpp"
#include "rocebench/netcheck/host_state.hpp"
#include "rocebench/netcheck/profile.hpp"

namespace rocebench::netcheck::fixture {

namespace fs = std::filesystem;

inline fs::path fixture_dir(const std::string& name) {
  return fs::path(ROCEBENCH_SOURCE_DIR) / "netcheck" / "tests" / "fixtures" / name;
}

// A fresh, empty temp folder, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "netcheck-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::trunc) << text;
}

inline std::string read_file(const fs::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class FixtureHost {
 public:
  explicit FixtureHost(const std::string& name = "mlx5-good") {
    fs::copy(fixture_dir(name), dir_.path(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  fs::path root() const { return dir_.path() / "root"; }
  fs::path capture() const { return dir_.path() / "capture"; }

  // Writes a host file (through sysfs symlinks, as `echo > /sys/...` would).
  void write(const std::string& host_path, const std::string& text) const { write_file(root() / host_path.substr(1), text + "\n"); }
  void write_capture(const std::string& name, const std::string& text) const { write_file(capture() / name, text); }
  void remove(const std::string& host_path) const { fs::remove_all(root() / host_path.substr(1)); }
  void remove_capture(const std::string& name) const { fs::remove(capture() / name); }

  HostState state(const Profile& profile = load_profile("lossless-roce")) const {
    std::vector<std::string> modules;
    for (const char* list : {"/rdma/modules", "/gpudirect/peermem_modules"}) {
      for (const auto& m : profile.at(list)) modules.push_back(m.get<std::string>());
    }
    return read_host(HostFs(root()), ToolSource::captured(capture()), "node01", modules);
  }
  std::vector<CheckRecord> check(const Profile& profile = load_profile("lossless-roce")) const {
    return run_checks(state(profile), profile);
  }

 private:
  TempDir dir_;
};

// "check subject" of every record with the given status.
inline std::set<std::string> with_status(const std::vector<CheckRecord>& records, Status status) {
  std::set<std::string> out;
  for (const auto& r : records) {
    if (r.status == status) out.insert(r.check + " " + r.subject);
  }
  return out;
}

inline CheckRecord find_record(const std::vector<CheckRecord>& records, const std::string& check,
                                      const std::string& subject) {
  for (const auto& r : records) {
    if (r.check == check && r.subject == subject) return r;
  }
  throw std::runtime_error("no record " + check + " " + subject);
}

}  // namespace rocebench::netcheck::fixture
