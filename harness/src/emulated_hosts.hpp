#pragma once
// Emulated hosts for a local run (a plan's launcher.emulated_hosts): ci/testbeds/netns/netns.sh,
// compiled in, brings up one network namespace per rank on a private bridge, each link shaped to
// the plan's rate, so that the ranks of one machine talk over links instead of loopback.
#include <filesystem>
#include <string>
#include <vector>

#include "launch.hpp"

namespace rocebench {

// ci/testbeds/netns/netns.sh as it was when this binary was built.
std::string netns_script_text();
std::string link_script_text();  // the link model netns.sh sources (../link.sh)

class EmulatedHosts {
 public:
  // Brings up `count` hosts with links at `link_rate` (tc's units: 100mbit, 1gbit), or throws
  // std::runtime_error saying why they cannot be made here (not root, no iproute2, the script's error).
  EmulatedHosts(int count, const std::string& link_rate);
  ~EmulatedHosts();  // takes them down, with anything still running in them
  EmulatedHosts(const EmulatedHosts&) = delete;
  EmulatedHosts& operator=(const EmulatedHosts&) = delete;

  const std::vector<EmulatedHost>& hosts() const { return hosts_; }
  // "4 emulated hosts host0..host3 (network namespaces rbr1a0..rbr1a3 on this machine), links at 100mbit"
  std::string describe() const;

 private:
  void take_down();

  std::filesystem::path dir_;  // the script and its state, removed on the way out
  std::string prefix_, link_rate_;
  std::vector<EmulatedHost> hosts_;
};

}  // namespace rocebench
