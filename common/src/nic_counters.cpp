#include "rocebench/common/nic_counters.hpp"

#include <charconv>
#include <optional>
#include <sstream>

#include <fmt/format.h>

namespace rocebench {

namespace {

// Per driver, where its names are documented. Names below were taken from those files.
const std::vector<KnownDriver> kDrivers = {
    {"mlx5", {"mlx5_core"},
     "hw_counters: Linux drivers/infiniband/hw/mlx5/counters.c and NVIDIA's \"Understanding mlx5 Linux "
     "Counters and Status Parameters\"; counters/: the IB port counters (drivers/infiniband/core/sysfs.c); "
     "ethtool: drivers/net/ethernet/mellanox/mlx5/core/en_stats.c and NVIDIA's \"Understanding mlx5 ethtool "
     "Counters\"",
     {"mlx5_core", "mlx5_ib"}, ""},
    {"bnxt_re", {"bnxt_en"},
     "hw_counters: Linux drivers/infiniband/hw/bnxt_re/hw_counters.c (bnxt_re_stat_descs; newer kernels renamed "
     "the CNP/ECN ones to the mlx5 names); ethtool: drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c "
     "(rx/tx_pfc_ena_frames_pri<N>, pfc_pri<N>_rx/tx_duration_us, rx/tx_bytes_pri<N>)",
     {"bnxt_en", "bnxt_re"}, ""},
    {"rxe", {"rdma_rxe"}, "hw_counters: Linux drivers/infiniband/sw/rxe/rxe_hw_counters.c (rxe_counter_name); no ethtool",
     {"rdma_rxe"},
     "rxe (soft-RoCE) has no NIC QoS: PFC, DSCP trust, ECN marking and CNPs are the hardware's, and rxe sends "
     "through the netdev's ordinary queue"},
};

const std::vector<SharedCounter> kVocabulary = {
    {"tx_packets", "RDMA packets sent by the port", "packets", false, "",
     {{"mlx5", {"counters/port_xmit_packets"}}, {"bnxt_re", {"hw_counters/tx_pkts"}}, {"rxe", {"hw_counters/sent_pkts"}}}},
    {"rx_packets", "RDMA packets received by the port", "packets", false, "",
     {{"mlx5", {"counters/port_rcv_packets"}}, {"bnxt_re", {"hw_counters/rx_pkts"}}, {"rxe", {"hw_counters/rcvd_pkts"}}}},
    {"seq_errors_rx", "requests the responder received out of sequence (a packet before them was lost)", "packets",
     false, "LOSSY",
     {{"mlx5", {"hw_counters/out_of_sequence"}},
      {"bnxt_re", {"hw_counters/oos_drop_count"}},
      {"rxe", {"hw_counters/out_of_seq_request"}}}},
    {"seq_naks_rx", "sequence-error NAKs the requester received (it goes back and resends)", "packets", false, "LOSSY",
     {{"mlx5", {"hw_counters/packet_seq_err"}},
      {"bnxt_re", {"hw_counters/seq_err_naks_rcvd"}},
      {"rxe", {"hw_counters/rcvd_seq_err"}}}},
    {"ack_timeouts",
     "requester retransmissions after no ACK came in time (rxe counts every retry it starts, on a timeout or a "
     "NAK)",
     "events", false, "LOSSY",
     {{"mlx5", {"hw_counters/local_ack_timeout_err"}},
      {"bnxt_re", {"hw_counters/to_retransmits"}},
      {"rxe", {"hw_counters/completer_retry_err"}}}},
    {"retries_exceeded", "requests that ran out of transport retries (the QP went to error)", "events", false, "LOSSY",
     {{"mlx5", {"hw_counters/req_transport_retries_exceeded"}},
      {"bnxt_re", {"hw_counters/max_retry_exceeded"}},
      {"rxe", {"hw_counters/retry_exceeded_err"}}}},
    {"rnr_naks_rx", "receiver-not-ready NAKs the requester received (no receive was posted)", "packets", false, "",
     {{"mlx5", {"hw_counters/rnr_nak_retry_err"}},
      {"bnxt_re", {"hw_counters/rnr_naks_rcvd"}},
      {"rxe", {"hw_counters/rcvd_rnr_err"}}}},
    {"duplicate_requests_rx", "requests the responder received twice (the requester resent them)", "packets", false,
     "LOSSY",
     {{"mlx5", {"hw_counters/duplicate_request"}},
      {"bnxt_re", {"hw_counters/dup_req"}},
      {"rxe", {"hw_counters/duplicate_request"}}}},
    {"ecn_marked_rx", "RoCE packets received with ECN congestion experienced", "packets", false, "",
     {{"mlx5", {"hw_counters/np_ecn_marked_roce_packets"}},
      {"bnxt_re", {"hw_counters/rx_ecn_marked_pkts", "hw_counters/np_ecn_marked_roce_packets"}}}},
    {"cnp_sent", "congestion notification packets sent (as notification point)", "packets", false, "",
     {{"mlx5", {"hw_counters/np_cnp_sent"}}, {"bnxt_re", {"hw_counters/tx_cnp_pkts", "hw_counters/np_cnp_pkts"}}}},
    {"cnp_handled", "congestion notification packets received and acted on (as reaction point)", "packets", false, "",
     {{"mlx5", {"hw_counters/rp_cnp_handled"}}, {"bnxt_re", {"hw_counters/rx_cnp_pkts", "hw_counters/rp_cnp_handled"}}}},
    {"cnp_ignored", "congestion notification packets received and ignored", "packets", false, "CONGESTED",
     {{"mlx5", {"hw_counters/rp_cnp_ignored"}}}},
    {"rx_discards_phy", "packets the port dropped for lack of receive buffer", "packets", false, "LOSSY",
     {{"mlx5", {"ethtool/rx_discards_phy"}}}},
    {"pause_storm_warning_events", "times the port sent pause frames for longer than the storm warning time",
     "events", false, "CONGESTED", {{"mlx5", {"ethtool/tx_pause_storm_warning_events"}}}},
    {"pause_storm_error_events", "pause storms the port stopped by ceasing to send pause frames", "events", false,
     "LOSSY", {{"mlx5", {"ethtool/tx_pause_storm_error_events"}}}},
    {"rx_pause_prio{N}", "PFC pause frames received on priority N", "frames", true, "CONGESTED",
     {{"mlx5", {"ethtool/rx_prio{N}_pause"}}, {"bnxt_re", {"ethtool/rx_pfc_ena_frames_pri{N}"}}}},
    {"tx_pause_prio{N}", "PFC pause frames sent on priority N", "frames", true, "CONGESTED",
     {{"mlx5", {"ethtool/tx_prio{N}_pause"}}, {"bnxt_re", {"ethtool/tx_pfc_ena_frames_pri{N}"}}}},
    {"rx_pause_duration_us_prio{N}", "time priority N was paused by received pause frames", "us", true, "CONGESTED",
     {{"mlx5", {"ethtool/rx_prio{N}_pause_duration"}}, {"bnxt_re", {"ethtool/pfc_pri{N}_rx_duration_us"}}}},
    {"tx_pause_duration_us_prio{N}", "time the port paused its peer on priority N", "us", true, "CONGESTED",
     {{"mlx5", {"ethtool/tx_prio{N}_pause_duration"}}, {"bnxt_re", {"ethtool/pfc_pri{N}_tx_duration_us"}}}},
    {"rx_discards_prio{N}", "packets of priority N dropped on receive", "packets", true, "LOSSY",
     {{"mlx5", {"ethtool/rx_prio{N}_discards"}}}},
    {"rx_bytes_prio{N}", "bytes received on priority N", "bytes", true, "",
     {{"mlx5", {"ethtool/rx_prio{N}_bytes"}}, {"bnxt_re", {"ethtool/rx_bytes_pri{N}"}}}},
    {"tx_bytes_prio{N}", "bytes sent on priority N", "bytes", true, "",
     {{"mlx5", {"ethtool/tx_prio{N}_bytes"}}, {"bnxt_re", {"ethtool/tx_bytes_pri{N}"}}}},
};

constexpr int kPriorities = 8;

std::string with_priority(std::string_view name, int prio) {
  std::string out(name);
  if (const auto at = out.find("{N}"); at != std::string::npos) out.replace(at, 3, std::to_string(prio));
  return out;
}

std::optional<std::uint64_t> to_count(std::string_view text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

const std::vector<SharedCounter>& nic_counter_vocabulary() { return kVocabulary; }
const std::vector<KnownDriver>& nic_counter_drivers() { return kDrivers; }

const KnownDriver* known_driver(std::string_view name) {
  for (const auto& d : kDrivers) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string_view no_nic_qos(std::string_view driver) {
  const KnownDriver* known = known_driver(driver);
  return known ? known->no_nic_qos : std::string_view();
}

RdmaDriver rdma_driver(const HostFs& host, const std::string& device) {
  const std::string dir = "/sys/class/infiniband/" + device;
  const std::string link = dir + "/device/driver";
  std::string kernel;
  if (const auto target = host.resolve(link)) {
    kernel = target->substr(target->rfind('/') + 1);
    for (const auto& d : kDrivers) {
      for (const auto& k : d.kernel_drivers) {
        if (kernel == k) return {std::string(d.name), link + " -> " + kernel, true};
      }
    }
  }
  // Soft RoCE has no PCI function of its own (its device, if any, is the NIC it rides on): rxe gives
  // itself away by its "parent" attribute, else by the name it was created with.
  const std::string why =
      kernel.empty() ? "no " + link : link + " -> " + kernel + ", not an RDMA driver of the vocabulary";
  if (const auto parent = host.read(dir + "/parent")) {
    return {"rxe", why + "; " + dir + "/parent (rxe's) names " + *parent, true};
  }
  for (const auto& d : kDrivers) {
    const std::string prefix(d.name);
    if (device.rfind(prefix, 0) == 0) return {prefix, why + "; the device's name begins with " + prefix, true};
  }
  return {kernel, why + ", and no known name prefix", false};
}

RawCounters read_counter_folder(const HostFs& host, const std::string& folder) {
  RawCounters out;
  for (const auto& name : host.list(folder)) {
    if (const auto value = host.read_int(folder + "/" + name); value && *value >= 0) out[name] = static_cast<std::uint64_t>(*value);
  }
  return out;
}

RawCounters read_port_counters(const HostFs& host, const std::string& device, int port) {
  RawCounters out;
  if (device.empty()) return out;
  const std::string dir = fmt::format("/sys/class/infiniband/{}/ports/{}", device, port);
  for (const char* folder : {"counters", "hw_counters"}) {
    for (const auto& [name, value] : read_counter_folder(host, dir + "/" + folder)) out[std::string(folder) + "/" + name] = value;
  }
  return out;
}

RawCounters parse_ethtool_counters(const std::string& text) {
  RawCounters out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string_view name = trim(std::string_view(line).substr(0, colon));
    if (name.empty()) continue;
    if (const auto v = to_count(trim(std::string_view(line).substr(colon + 1)))) out["ethtool/" + std::string(name)] = *v;
  }
  return out;
}

MappedCounters map_counters(const std::string& driver, const RawCounters& raw) {
  MappedCounters out;
  std::map<std::string, bool> used;
  for (const auto& c : kVocabulary) {
    const CounterSource* source = nullptr;
    for (const auto& s : c.sources) {
      if (s.driver == driver) source = &s;
    }
    bool any = false;
    for (int prio = 0; prio < (c.per_priority ? kPriorities : 1); ++prio) {
      if (!source) break;
      for (const auto& name : source->names) {
        const auto it = raw.find(with_priority(name, prio));
        if (it == raw.end()) continue;
        out.shared[with_priority(c.name, prio)] = {it->first, it->second};
        used[it->first] = true;
        any = true;
        break;
      }
    }
    if (!any) out.unavailable[std::string(c.name)] = std::string(c.evidence_for);
  }
  for (const auto& [name, value] : raw) {
    if (!used.count(name) && name.rfind("ethtool/", 0) != 0) out.unmapped[name] = value;
  }
  return out;
}

}  // namespace rocebench
