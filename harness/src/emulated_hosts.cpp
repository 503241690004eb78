#include "emulated_hosts.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "rocebench/common/atomic_write.hpp"
#include "rocebench/reports/plots.hpp"

namespace rocebench {

namespace fs = std::filesystem;

namespace {

constexpr auto kScriptDeadline = std::chrono::seconds(60);

// Namespace names are the script's prefix and an index; interface names cap the prefix at 6
// characters. The launcher's pid, in base 36, keeps two runs at once apart.
std::string prefix_for_this_run() {
  const char* digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  unsigned pid = static_cast<unsigned>(::getpid()) % (36 * 36 * 36);
  std::string p = "rbr";
  for (int i = 0; i < 3; ++i, pid /= 36) p.insert(3, 1, digits[pid % 36]);
  return p;
}

std::string last_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

EmulatedHosts::EmulatedHosts(int count, const std::string& link_rate) : prefix_(prefix_for_this_run()), link_rate_(link_rate) {
  if (::geteuid() != 0) throw std::runtime_error("emulated hosts need root (network namespaces), and this run is not root");
  char dir_template[] = "/tmp/rocebench-hosts-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) throw std::runtime_error("cannot make a folder for the emulated hosts' state in /tmp");
  dir_ = dir_template;
  // The bed's scripts as they lie in ci/testbeds: netns.sh sources ../link.sh.
  fs::create_directories(dir_ / "netns");
  write_file_atomically(dir_ / "netns" / "netns.sh", netns_script_text());
  write_file_atomically(dir_ / "link.sh", link_script_text());
  const reports::ProcessResult up =
      reports::run_process({"bash", (dir_ / "netns" / "netns.sh").string(), "up", std::to_string(count), "--prefix", prefix_, "--rate", link_rate},
                           {"ROCEBENCH_NETNS_STATE=" + dir_.string()}, kScriptDeadline, dir_ / "up.log");
  if (up.exit_code != 0) {
    const std::string why = up.timed_out ? fmt::format("it did not finish within {} s", kScriptDeadline.count())
                                         : last_line(dir_ / "up.log");
    take_down();
    throw std::runtime_error("the emulated hosts could not be brought up: " + why);
  }
  hosts_ = load_emulated_hosts(dir_ / prefix_ / "hosts");
  // Named by place, not by namespace (whose name holds this launcher's pid), so that two runs of
  // one plan name the same series alike.
  for (std::size_t i = 0; i < hosts_.size(); ++i) hosts_[i].hostname = "host" + std::to_string(i);
}

EmulatedHosts::~EmulatedHosts() { take_down(); }

void EmulatedHosts::take_down() {
  if (dir_.empty()) return;
  reports::run_process({"bash", (dir_ / "netns" / "netns.sh").string(), "down", "--prefix", prefix_},
                       {"ROCEBENCH_NETNS_STATE=" + dir_.string()}, kScriptDeadline);
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
  dir_.clear();
}

std::string EmulatedHosts::describe() const {
  return fmt::format("{} emulated hosts {}..{} (network namespaces {}..{} on this machine), links at {}", hosts_.size(),
                     hosts_.front().name(), hosts_.back().name(), hosts_.front().netns, hosts_.back().netns, link_rate_);
}

}  // namespace rocebench
