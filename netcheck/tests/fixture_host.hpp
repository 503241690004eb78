#pragma once
#include <algorithm>
// A copy of a fixture host (tests/fixtures/<name>/{root,capture}) in a temp folder, for a test to
// misconfigure one setting at a time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/netcheck/checks.hpp"
#include "rocebench/netcheck/host_state.hpp"
#include "rocebench/netcheck/module.hpp"
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

  HostState state(const Profile& profile = load_profile("lossless-roce"), const NcclSources& nccl = {}) const {
    std::vector<std::string> modules;
    for (const char* list : {"/rdma/modules", "/gpudirect/peermem_modules"}) {
      for (const auto& m : profile.at(list)) modules.push_back(m.get<std::string>());
    }
    return read_host(HostFs(root()), ToolSource::captured(capture()), "node01", modules, nccl);
  }
  std::vector<CheckRecord> check(const Profile& profile = load_profile("lossless-roce"), const NcclSources& nccl = {}) const {
    return run_checks(state(profile, nccl), profile);
  }

 private:
  TempDir dir_;
};

// A saved host of fixtures/fleet/<name>, as --save-capture lays one out, in `to`: the good host's
// tree, minus the host paths its REMOVE file lists, with its overlay/ files written over it
// (through the tree's symlinks, as on the host), and its capture/ folder (tool outputs under the
// names an operator gave them, found through COMMANDS.tsv).
inline void compose_fleet_host(const std::string& name, const fs::path& to) {
  const fs::path from = fixture_dir("fleet") / name;
  fs::create_directories(to);
  fs::copy(fixture_dir("mlx5-good") / "root", to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::ifstream removals(from / "REMOVE");
  for (std::string path; std::getline(removals, path);) fs::remove_all(to / path.substr(1));
  if (fs::exists(from / "overlay")) {
    for (const auto& entry : fs::recursive_directory_iterator(from / "overlay")) {
      if (entry.is_regular_file()) write_file(to / entry.path().lexically_relative(from / "overlay"), read_file(entry.path()));
    }
  }
  if (fs::exists(from / "capture")) fs::copy(from / "capture", to / "capture", fs::copy_options::recursive);
}

// `rocebench netcheck ARGS` as the harness runs it, with what it printed.
struct Outcome {
  int code;
  std::string out, err;
};

inline Outcome run_netcheck(const Args& args) {
  const auto commands = subcommands();
  EXPECT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands.front().name, "netcheck");
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = commands.front().main(args);
  std::string out = ::testing::internal::GetCapturedStdout();
  return {code, out, ::testing::internal::GetCapturedStderr()};
}

// Every line of a results file is a valid check record. A folder (`--results DIR`): the records of
// every run in it, DIR/<run-id>/results.jsonl, runs in name order.
inline std::vector<json> records_in(const fs::path& file) {
  if (fs::is_directory(file)) {
    std::vector<fs::path> runs;
    for (const auto& entry : fs::directory_iterator(file)) runs.push_back(entry.path() / "results.jsonl");
    std::sort(runs.begin(), runs.end());
    EXPECT_FALSE(runs.empty()) << "no run in " << file;
    std::vector<json> all;
    for (const auto& run : runs) {
      const auto more = records_in(run);
      all.insert(all.end(), more.begin(), more.end());
    }
    return all;
  }
  const RecordFile read = read_records(file, &result_schema());
  EXPECT_TRUE(read.issues.empty()) << read.issues.front().message;
  return read.records;
}

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
