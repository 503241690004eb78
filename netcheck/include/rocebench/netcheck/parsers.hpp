#pragma once
// Parsers of the text formats netcheck reads: tool outputs and the odd sysfs file. Each returns
// nullopt when the text does not hold what it looks for, never throws on odd input.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rocebench::netcheck {

// DSCP -> priorities it is mapped to (dcb may map one DSCP to several; hardware then uses one).
using DscpMap = std::map<int, std::vector<int>>;

// `dcb pfc show dev IF`: "prio-pfc 0:off 1:off 2:off 3:on ..." -> enabled priorities.
std::optional<std::vector<int>> parse_dcb_pfc(const std::string& text);
// `dcb [-N] app show dev IF dscp-prio`: "dscp-prio 0:0 CS3:3 26:3 48:6"; empty table -> empty map.
std::optional<DscpMap> parse_dcb_app_dscp(const std::string& text);
// "26", "CS6", "AF31", "EF" -> DSCP value.
std::optional<int> parse_dscp_name(const std::string& token);

// `mlnx_qos -i IF` (MLNX_OFED mlnx-tools).
struct MlnxQos {
  std::optional<std::string> trust;          // "Priority trust state: dscp"
  std::optional<std::vector<int>> pfc;       // the "enabled" row under "PFC configuration:"
  std::optional<DscpMap> dscp2prio;          // "prio:3 dscp:31,30,29,28,27,26,25,24,"
};
MlnxQos parse_mlnx_qos(const std::string& text);

// MLNX_OFED /sys/class/net/IF/qos/dscp2prio: a header line, then "dscp prio" per line.
std::optional<DscpMap> parse_sysfs_dscp2prio(const std::string& text);

// `ethtool -S IF`: "     rx_discards_phy: 12" -> counters.
std::map<std::string, long long> parse_ethtool_stats(const std::string& text);

// ACS Source Validation per PCI function: true = SrcValid+ (enabled), false = SrcValid- or no ACS
// capability, nullopt = unknown (lspci without root prints "<access denied>").
using AcsMap = std::map<std::string, std::optional<bool>>;
// `lspci -D -vvv` (or without -D: domain 0000 is assumed).
AcsMap parse_lspci_acs(const std::string& text);
// PCI config space bytes (sysfs "config"): the ACS extended capability's control register;
// nullopt when the extended space is not readable (non-root reads get 64 or 256 bytes).
std::optional<bool> acs_from_config(const std::string& bytes);

// sysfs "4: ACTIVE" -> "ACTIVE"; "100 Gb/sec (4X EDR)" -> 100.
std::string after_colon(const std::string& text);
std::optional<double> parse_rate_gbps(const std::string& text);

}  // namespace rocebench::netcheck
