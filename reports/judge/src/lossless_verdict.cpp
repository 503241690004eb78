#include "rocebench/reports/lossless_verdict.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/reports/links.hpp"

namespace rocebench::reports {

namespace {

// What each transport's counters say of loss, declared once. A turn's sender is lossy when its
// `sender_loss` counters rose by more than the rule's share of `sent`: it went back and sent again.
struct LossCounters {
  std::vector<std::string> sender_loss;
  std::string sent;
  std::string meaning;                     // of sender_loss rising, in words
  std::vector<std::string> marks;          // congestion signalled without loss (ECN, CNPs)
  std::vector<std::string> host_loss;      // loss that needs no pair: on whichever host counts it
  std::vector<std::string> host_congested; // congestion that needs no pair
};

const LossCounters& loss_counters(const std::string& transport) {
  static const LossCounters tcp{{"tcp_RetransSegs"}, "tcp_OutSegs", "segments lost and sent again",
                                {"ipext_InCEPkts", "tcpext_TCPDeliveredCE"}, {}, {}};
  // The NIC's, in the shared vocabulary (common/nic_counters.hpp), as microbench.incast records them.
  static const LossCounters nic{{"nic_seq_naks_rx", "nic_ack_timeouts", "nic_retries_exceeded"},
                                "nic_tx_packets",
                                "packets lost: the requester went back and resent them",
                                {"nic_ecn_marked_rx", "nic_cnp_sent", "nic_cnp_handled"},
                                {"nic_rx_discards_phy", "nic_pause_storm_error_events"},
                                {"nic_cnp_ignored", "nic_pause_storm_warning_events"}};
  return transport == "tcp" ? tcp : nic;
}

bool is_incast(const json& r, const std::string& transport) {
  return r.value("kind", "") == "result" && r.value("step", "") == "microbench.incast" &&
         r.value("status", "") == "ok" && r.contains("params") && r["params"].value("transport", "") == transport;
}

// "nic_seq_naks_rx (hw_counters/rcvd_seq_err)": a NIC counter with the driver's own name it was read from.
std::string labelled(const json& record, const std::string& metric) {
  const std::string shared = metric.starts_with("nic_") ? metric.substr(4) : "";
  const json sources = record.value("samples", json::object()).value("counter_sources", json::object());
  return sources.contains(shared) ? fmt::format("{} ({})", metric, sources[shared].get<std::string>()) : metric;
}

// The loss counters of `record` that went back over its turn (a driver reload or a wrap), which the
// probe recorded no delta for, each with its source name.
std::vector<std::string> went_back(const json& record, const std::vector<std::string>& loss) {
  const json samples = record.value("samples", json::object());
  const json reset = samples.value("counters_reset", json::array());
  const json sources = samples.value("counter_sources", json::object());
  std::vector<std::string> out;
  for (const std::string& metric : loss) {
    const std::string shared = metric.starts_with("nic_") ? metric.substr(4) : metric;
    const std::string source = sources.contains(shared) ? sources[shared].get<std::string>() : metric;
    if (std::find(reset.begin(), reset.end(), source) != reset.end()) out.push_back(labelled(record, metric));
  }
  return out;
}

// The per-priority findings of one host: LOSSY ones (`lossy`), CONGESTED ones (`congested`). `netdev`
// names the host's RoCE interface in the fix, where the records give it.
void judge_priorities(const std::string& host, const std::string& netdev, const std::map<int, PriorityCounts>& p,
                      const std::set<int>* pfc, double incast_us, int dscp, const LosslessRule& rule,
                      std::vector<std::string>& lossy, std::vector<std::string>& congested) {
  std::int64_t all = 0;
  for (const auto& [n, c] : p) all += c.bytes;
  if (pfc && !pfc->empty()) {
    const std::string on = fmt::format("{}", fmt::join(*pfc, ","));
    for (const auto& [n, c] : p) {
      const std::int64_t bytes = c.bytes;
      if (!off_pfc(p, n, *pfc, rule)) continue;
      lossy.push_back(fmt::format("{}: RoCE traffic on priority {} ({} of {} bytes), PFC is on {}: DSCP {} is not mapped to a "
                                  "lossless priority; `mlnx_qos -i {} --dscp2prio set,{},{}`",
                                  host, n, bytes, all, on, dscp, netdev.empty() ? "<netdev>" : netdev, dscp, *pfc->begin()));
    }
    for (const auto& [n, c] : p) {
      if (const std::int64_t dropped = c.discards; pfc->count(n) && dropped > 0) {
        lossy.push_back(fmt::format("{}: nic_rx_discards_prio{} rose by {} on lossless priority {} (PFC did not hold the senders back)",
                                    host, n, dropped, n));
      }
    }
  }
  for (const auto& [n, c] : p) {
    if (const auto us = c.paused_us; incast_us > 0 && static_cast<double>(us) > rule.pause_share * incast_us) {
      congested.push_back(fmt::format("{}: priority {} paused {:.0f} ms of the incast's {:.0f} ms (above {} of it)", host, n, us / 1e3,
                                      incast_us / 1e3, rule.pause_share));
    }
  }
}

}  // namespace

bool off_pfc(const std::map<int, PriorityCounts>& counts, int n, const std::set<int>& pfc, const LosslessRule& rule) {
  const auto it = counts.find(n);
  if (pfc.empty() || pfc.count(n) || it == counts.end() || it->second.bytes <= 0) return false;
  std::int64_t all = 0;
  for (const auto& [priority, c] : counts) all += c.bytes;
  return static_cast<double>(it->second.bytes) > rule.off_pfc_share * static_cast<double>(all);
}

void add_priority_counts(std::map<int, PriorityCounts>& into, const json& metrics) {
  for (int n = 0; n < 8; ++n) {
    auto value = [&](const char* name) { return metrics.value(fmt::format(fmt::runtime(name), n), std::int64_t{0}); };
    PriorityCounts& c = into[n];
    c.bytes += value("nic_tx_bytes_prio{}") + value("nic_rx_bytes_prio{}");
    c.discards += value("nic_rx_discards_prio{}");
    c.paused_us += value("nic_rx_pause_duration_us_prio{}") + value("nic_tx_pause_duration_us_prio{}");
  }
}

std::vector<LosslessHost> judge_incast(const std::vector<json>& records, const std::string& transport, const LosslessRule& rule,
                                       const PfcPriorities& pfc) {
  const LossCounters& c = loss_counters(transport);
  std::vector<std::string> hosts;  // first named first
  auto index_of = [&](const std::string& host) {
    const auto it = std::find(hosts.begin(), hosts.end(), host);
    if (it != hosts.end()) return static_cast<int>(it - hosts.begin());
    hosts.push_back(host);
    return static_cast<int>(hosts.size() - 1);
  };
  using Deltas = std::map<std::string, std::int64_t>;                // counter -> delta
  std::set<std::string> receivers;                                    // every turn of the run
  std::map<int, std::map<std::string, Deltas>> lost;                  // sender -> receiver -> its sender_loss deltas
  std::map<int, std::map<std::string, std::int64_t>> sent;            // sender -> receiver -> c.sent
  std::map<int, std::set<std::string>> counted;                       // host -> turns its counters were read
  std::map<int, Deltas> marks, host_loss, host_congested;             // host -> counter -> delta over the turns
  std::map<std::string, std::string> labels;                          // counter -> with its source name
  std::map<int, std::vector<std::string>> stalls;                     // receiver -> evidence
  std::map<int, std::map<std::string, std::int64_t>> abandoned;       // sender -> receiver -> messages given up
  double drain_s = 0;                                                 // how long after its turn a sender gave up
  std::map<int, std::map<int, PriorityCounts>> priorities;           // host -> its NIC's per-priority counts
  std::map<std::string, double> turn_s;                               // receiver -> its turn's duration
  std::map<int, std::string> netdevs;                                 // host -> its RoCE interface (verbs)
  std::map<int, std::map<std::string, std::vector<std::string>>> reset;  // host -> receiver -> loss counters that went back
  int dscp = 26;                                                      // the traffic class's, where the records give it
  for (const json& r : records) {
    if (!is_incast(r, transport)) continue;
    const json& p = r["params"];
    const json metrics = r.value("metrics", json::object());
    const std::string receiver = p.value("receiver", "");
    receivers.insert(receiver);
    turn_s[receiver] = p.value("duration_s", 0.0);
    if (p.contains("tos")) dscp = p["tos"].get<int>() >> 2;
    if (!p.contains("role")) {  // the receiver's own record of its turn
      const int host = index_of(receiver);
      const json samples = r.value("samples", json::object());
      const json given_up = samples.value("abandoned_messages", json::object());  // named: items() of a temporary would dangle
      for (const auto& [sender, left] : given_up.items()) {
        abandoned[index_of(sender)][receiver] += left.get<std::int64_t>();
        drain_s = samples.value("drain_s", drain_s);
      }
      const double p1 = metrics.value("interval_goodput_Gbps_p1", -1.0), p50 = metrics.value("interval_goodput_Gbps_p50", -1.0);
      if (p1 >= 0 && p50 > 0 && p1 < rule.stall_share * p50) {
        stalls[host].push_back(fmt::format("{} as receiver: 100 ms goodput p1 {:.3f} Gb/s is below {} of its p50 "
                                           "{:.3f} Gb/s (goodput stalled under incast)",
                                           receiver, p1, rule.stall_share, p50));
      }
      continue;
    }
    const int host = index_of(r.value("host", ""));
    const json driver = r.value("samples", json::object()).value("nic_driver", json::object());
    if (driver.contains("netdev")) netdevs[host] = driver["netdev"].get<std::string>();
    const bool read = std::any_of(c.sender_loss.begin(), c.sender_loss.end(), [&](const std::string& m) { return metrics.contains(m); });
    const std::vector<std::string> back = went_back(r, c.sender_loss);
    if (!back.empty()) reset[host][receiver] = back;
    if (!read || !back.empty()) continue;  // not read, or not all of it: the host stays unverified for this turn
    counted[host].insert(receiver);
    auto add = [&](Deltas& into, const std::vector<std::string>& names) {
      for (const auto& m : names) {
        if (!metrics.contains(m)) continue;
        into[m] += metrics[m].get<std::int64_t>();
        labels.emplace(m, labelled(r, m));
      }
    };
    if (p.value("role", "") == "sender") {
      add(lost[host][receiver], c.sender_loss);
      sent[host][receiver] += metrics.value(c.sent, std::int64_t{0});
    }
    add(marks[host], c.marks);
    add(host_loss[host], c.host_loss);
    add(host_congested[host], c.host_congested);
    add_priority_counts(priorities[host], metrics);
  }
  double incast_us = 0;
  for (const auto& [receiver, s] : turn_s) incast_us += s * 1e6;
  for (const std::string& receiver : receivers) index_of(receiver);
  auto total = [](const Deltas& d) {
    std::int64_t sum = 0;
    for (const auto& [name, value] : d) sum += value;
    return sum;
  };
  // "nic_rx_discards_phy (ethtool/rx_discards_phy) rose by 12 and …": the counters of `d` that rose.
  auto rises = [&](const Deltas& d) {
    std::vector<std::string> out;
    for (const auto& [name, value] : d) {
      if (value > 0) out.push_back(fmt::format("{} rose by {}", labels[name], value));
    }
    return fmt::format("{}", fmt::join(out, " and "));
  };

  // The turns' (receiver, sender) pairs, and those in which the sender sent again. A pair's loss is on
  // the receiver's link in or the sender's link out, so the bad-host rule sees each host twice, as its
  // link in (index h) and its link out (h + n): a receiver whose every sender lost is named even when it
  // sent without loss (an incast overflows the receiver's queue, not the senders').
  const int n = static_cast<int>(hosts.size());
  std::vector<HostPair> measured, lossy, lossy_hosts;
  for (const std::string& receiver : receivers) {
    const int r = index_of(receiver);
    for (int sender = 0; sender < n; ++sender) {
      const bool stalled = abandoned[sender].count(receiver) > 0;
      if (sender == r || (!counted[sender].count(receiver) && !stalled)) continue;
      measured.emplace_back(r, sender + n);
      const auto again = static_cast<double>(total(lost[sender][receiver]));
      if (stalled || (again > 0 && again > rule.retransmit_share * static_cast<double>(sent[sender][receiver]))) {
        lossy.emplace_back(r, sender + n);
        lossy_hosts.emplace_back(r, sender);
      }
    }
  }
  std::vector<int> named;
  for (const int link : bad_hosts(measured, lossy)) named.push_back(link % n);
  if (named.empty()) {  // no one host explains the loss: every host of a lossy pair is evidence of it
    for (const auto& [a, b] : lossy_hosts) named.insert(named.end(), {a, b});
  }

  std::vector<LosslessHost> out;
  for (int h = 0; h < static_cast<int>(hosts.size()); ++h) {
    LosslessHost v;
    v.host = hosts[static_cast<std::size_t>(h)];
    v.verdict = "OK";
    if (!counted[h].empty()) {
      v.resent = 0;
      for (const auto& [receiver, deltas] : lost[h]) v.resent += total(deltas);
    }
    for (const auto& [priority, counts] : priorities[h]) {
      v.paused_s += static_cast<double>(counts.paused_us) / 1e6;
      if (counts.bytes || counts.paused_us || counts.discards) v.priorities[priority] = counts;
    }
    v.marked = total(marks[h]) > 0;
    if (std::find(named.begin(), named.end(), h) != named.end()) {
      v.verdict = "LOSSY";
      for (const auto& [a, b] : lossy_hosts) {
        if (a != h && b != h) continue;
        const std::string& sender = hosts[static_cast<std::size_t>(b)];
        const std::string& receiver = hosts[static_cast<std::size_t>(a)];
        if (total(lost[b][receiver]) > 0) {
          v.evidence.push_back(fmt::format("{}: {} of {} {} while {} sent to {} ({})", sender, rises(lost[b][receiver]),
                                           sent[b][receiver], c.sent, sender, receiver, c.meaning));
        }
        if (const auto left = abandoned[b].find(receiver); left != abandoned[b].end()) {
          v.evidence.push_back(fmt::format("{}: {} message(s) to {} given up, none acknowledged for {} s after the turn: the "
                                           "stream stalled (its resends did not get through)",
                                           sender, left->second, receiver, drain_s));
        }
      }
    }
    if (total(host_loss[h]) > 0) {
      v.verdict = "LOSSY";
      v.evidence.push_back(fmt::format("{}: {} over the incast (packets dropped)", v.host, rises(host_loss[h])));
    }
    std::vector<std::string> priority_loss, paused;
    const auto known = pfc.find(v.host);
    judge_priorities(v.host, netdevs[h], priorities[h], known == pfc.end() ? nullptr : &known->second, incast_us, dscp, rule,
                     priority_loss, paused);
    if (!priority_loss.empty()) {
      v.verdict = "LOSSY";
      v.evidence.insert(v.evidence.end(), priority_loss.begin(), priority_loss.end());
    }
    std::vector<std::string> unread;
    for (const std::string& receiver : receivers) {
      if (!counted[h].count(receiver)) unread.push_back(receiver);
    }
    if (v.verdict != "LOSSY" && !unread.empty()) {
      v.verdict = "unverified";
      for (const auto& [receiver, counters] : reset[h]) {
        v.evidence.push_back(fmt::format("{}: {} went back in the turn of receiver {} (a driver reload or a counter wrap): no "
                                         "delta to judge",
                                         v.host, fmt::join(counters, ", "), receiver));
      }
      std::vector<std::string> missing;
      for (const std::string& receiver : unread) {
        if (!reset[h].count(receiver)) missing.push_back(receiver);
      }
      if (!missing.empty()) {
        v.evidence.push_back(fmt::format("{}: {} {} not read in the turn(s) of receiver {}: no loss verdict without it", v.host,
                                         fmt::join(c.sender_loss, ", "), c.sender_loss.size() == 1 ? "was" : "were",
                                         fmt::join(missing, ", ")));
      }
    }
    if (v.verdict == "OK" && (stalls.count(h) || total(host_congested[h]) > 0 || !paused.empty())) {
      v.verdict = "CONGESTED";
      v.evidence = stalls[h];
      if (total(host_congested[h]) > 0) v.evidence.push_back(fmt::format("{}: {} over the incast", v.host, rises(host_congested[h])));
      v.evidence.insert(v.evidence.end(), paused.begin(), paused.end());
    }
    if (v.verdict == "OK") {
      std::vector<std::string> seen;
      for (const auto& [name, value] : marks[h]) {
        if (value > 0) seen.push_back(fmt::format("{} +{}", name, value));
      }
      const std::string loss = fmt::format("{}", fmt::join(c.sender_loss, ", "));
      v.evidence.push_back(seen.empty() ? fmt::format("{}: {} did not rise in any turn", v.host, loss)
                                        : fmt::format("{}: ECN marked ({}) and {} did not rise: congestion control at work",
                                                      v.host, fmt::join(seen, ", "), loss));
    }
    out.push_back(std::move(v));
  }
  return out;
}

PfcPriorities pfc_priorities(const std::vector<json>& records) {
  PfcPriorities out;
  for (const auto& r : records) {
    if (r.value("kind", "") != "check" || r.value("check", "") != "roce.pfc.enabled_priorities") continue;
    const json observed = r.value("observed", json());
    if (!observed.is_array()) continue;  // not read: the priority is not judged
    auto& on = out[r.value("host", "")];
    for (const auto& n : observed) {
      if (n.is_number_integer()) on.insert(n.get<int>());
    }
  }
  return out;
}

std::vector<Verdict> lossless_verdicts(const std::vector<json>& incast, const PfcPriorities& pfc) {
  std::vector<Verdict> out;
  for (const char* transport : {"tcp", "verbs"}) {
    for (const LosslessHost& h : judge_incast(incast, transport, {}, pfc)) {
      const Outcome outcome = h.verdict == "LOSSY" ? Outcome::fail : h.verdict == "unverified" ? Outcome::missing : Outcome::pass;
      out.push_back({"lossless", fmt::format("{} under {} incast", h.host, transport), outcome,
                     fmt::format("{}\n{}", h.verdict, fmt::join(h.evidence, "\n"))});
    }
  }
  return out;
}

}  // namespace rocebench::reports
