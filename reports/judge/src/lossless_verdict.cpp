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

constexpr const char* kRetransmitted = "tcp_RetransSegs";
constexpr const char* kSent = "tcp_OutSegs";
// The kernel's ECN evidence: CE-marked packets in, and segments delivered with CE.
constexpr const char* kEcnCounters[] = {"ipext_InCEPkts", "tcpext_TCPDeliveredCE"};

bool is_tcp_incast(const json& r) {
  return r.value("kind", "") == "result" && r.value("step", "") == "microbench.incast" &&
         r.value("status", "") == "ok" && r.contains("params") && r["params"].value("transport", "") == "tcp";
}

}  // namespace

std::vector<LosslessHost> judge_tcp_incast(const std::vector<json>& records, const LosslessRule& rule) {
  std::vector<std::string> hosts;  // first named first
  auto index_of = [&](const std::string& host) {
    const auto it = std::find(hosts.begin(), hosts.end(), host);
    if (it != hosts.end()) return static_cast<int>(it - hosts.begin());
    hosts.push_back(host);
    return static_cast<int>(hosts.size() - 1);
  };
  std::set<std::string> receivers;                                    // every turn of the run
  std::map<int, std::map<std::string, std::int64_t>> retransmitted;   // sender -> receiver -> delta
  std::map<int, std::map<std::string, std::int64_t>> sent;            // sender -> receiver -> tcp_OutSegs
  std::map<int, std::set<std::string>> counted;                       // host -> turns its counters were read
  std::map<int, std::map<std::string, std::int64_t>> ecn;             // host -> counter -> delta
  std::map<int, std::vector<std::string>> stalls;                     // receiver -> evidence
  for (const json& r : records) {
    if (!is_tcp_incast(r)) continue;
    const json& p = r["params"];
    const json metrics = r.value("metrics", json::object());
    const std::string receiver = p.value("receiver", "");
    receivers.insert(receiver);
    if (!p.contains("role")) {  // the receiver's own record of its turn
      const int host = index_of(receiver);
      const double p1 = metrics.value("interval_goodput_Gbps_p1", -1.0), p50 = metrics.value("interval_goodput_Gbps_p50", -1.0);
      if (p1 >= 0 && p50 > 0 && p1 < rule.stall_share * p50) {
        stalls[host].push_back(fmt::format("{} as receiver: 100 ms goodput p1 {:.3f} Gb/s is below {} of its p50 "
                                           "{:.3f} Gb/s (goodput stalled under incast)",
                                           receiver, p1, rule.stall_share, p50));
      }
      continue;
    }
    const int host = index_of(r.value("host", ""));
    if (!metrics.contains(kRetransmitted)) continue;  // not read: the host stays unverified for this turn
    counted[host].insert(receiver);
    if (p.value("role", "") == "sender") {
      retransmitted[host][receiver] += metrics[kRetransmitted].get<std::int64_t>();
      sent[host][receiver] += metrics.value(kSent, std::int64_t{0});
    }
    for (const char* name : kEcnCounters) ecn[host][name] += metrics.value(name, std::int64_t{0});
  }
  for (const std::string& receiver : receivers) index_of(receiver);

  // The turns' (receiver, sender) pairs, and those in which the sender retransmitted. A pair's loss is on
  // the receiver's link in or the sender's link out, so the bad-host rule sees each host twice, as its
  // link in (index h) and its link out (h + n): a receiver whose every sender lost is named even when it
  // sent without loss (an incast overflows the receiver's queue, not the senders').
  const int n = static_cast<int>(hosts.size());
  std::vector<HostPair> measured, lossy, lossy_hosts;
  for (const std::string& receiver : receivers) {
    const int r = index_of(receiver);
    for (int sender = 0; sender < n; ++sender) {
      if (sender == r || !counted[sender].count(receiver)) continue;
      measured.emplace_back(r, sender + n);
      const auto again = static_cast<double>(retransmitted[sender][receiver]);
      if (again > 0 && again > rule.retransmit_share * static_cast<double>(sent[sender][receiver])) {
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
    LosslessHost v{hosts[static_cast<std::size_t>(h)], "OK", {}};
    const bool is_lossy = std::find(named.begin(), named.end(), h) != named.end();
    if (is_lossy) {
      v.verdict = "LOSSY";
      for (const auto& [a, b] : lossy_hosts) {
        if (a != h && b != h) continue;
        const std::string& sender = hosts[static_cast<std::size_t>(b)];
        const std::string& receiver = hosts[static_cast<std::size_t>(a)];
        v.evidence.push_back(fmt::format("{}: {} rose by {} of {} {} while {} sent to {} (segments lost and sent again)",
                                         sender, kRetransmitted, retransmitted[b][receiver], sent[b][receiver], kSent,
                                         sender, receiver));
      }
    }
    std::vector<std::string> unread;
    for (const std::string& receiver : receivers) {
      if (!counted[h].count(receiver)) unread.push_back(receiver);
    }
    if (!is_lossy && !unread.empty()) {
      v.verdict = "unverified";
      v.evidence.push_back(fmt::format("{}: {} was not read in the turn(s) of receiver {}: no loss verdict without it",
                                       v.host, kRetransmitted, fmt::join(unread, ", ")));
    }
    if (v.verdict == "OK" && stalls.count(h)) {
      v.verdict = "CONGESTED";
      v.evidence = stalls[h];
    }
    if (v.verdict == "OK") {
      std::vector<std::string> marks;
      for (const char* name : kEcnCounters) {
        if (ecn[h][name] > 0) marks.push_back(fmt::format("{} +{}", name, ecn[h][name]));
      }
      v.evidence.push_back(marks.empty()
                               ? fmt::format("{}: {} did not rise in any turn", v.host, kRetransmitted)
                               : fmt::format("{}: ECN marked ({}) and {} did not rise: congestion control at work",
                                             v.host, fmt::join(marks, ", "), kRetransmitted));
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace rocebench::reports
