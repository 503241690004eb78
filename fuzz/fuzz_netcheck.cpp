// What netcheck reads from a host: dcb, mlnx_qos, ethtool -S, lspci -vvv and sysfs values, and a
// profile (located JSON against the profile schema).
#include "fuzz_input.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/netcheck/parsers.hpp"
#include "rocebench/netcheck/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace nc = rocebench::netcheck;
  const std::string text = rbfuzz::text_of(data, size);
  (void)nc::parse_dcb_pfc(text);
  (void)nc::parse_dcb_app_dscp(text);
  (void)nc::parse_dscp_name(text);
  (void)nc::parse_mlnx_qos(text);
  (void)nc::parse_sysfs_dscp2prio(text);
  (void)nc::parse_ethtool_stats(text);
  (void)nc::parse_lspci_acs(text);
  (void)nc::acs_from_config(text);
  (void)nc::after_colon(text);
  (void)nc::parse_rate_gbps(text);
  try {
    (void)nc::parse_profile(text, "profile.json");
  } catch (const rocebench::InputError&) {
  }
  return 0;
}
