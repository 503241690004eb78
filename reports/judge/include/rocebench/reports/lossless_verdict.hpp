#pragma once
// The lossless-under-load verdict (issue #41), from microbench.incast records alone, so a saved run
// re-judges the same; over tcp from the kernel's TCP counters, over verbs from the NIC's (the shared
// vocabulary of common/nic_counters.hpp). Per host: LOSSY (fail) when it is the host that explains the
// turns in which senders sent again (tcp: retransmitted segments; verbs: sequence NAKs, ACK timeouts,
// retries exhausted) more than the rule's share of what they sent: the all-pairs matrix's bad-host rule
// over every turn's (receiver, sender) pairs, each host seen as its link in and its link out, so a
// receiver whose every sender lost is named alone; or every host of a lossy pair when no one host
// explains them; or when a drop no pair needs rose on it (receive discards, a pause storm stopped).
// CONGESTED (warn) when, as the receiver, its 100 ms goodput p1 fell below a share of its p50 (goodput
// stalled), or CNPs were ignored or pause storms warned of, or a priority was paused longer than a share
// of the incast; per priority, LOSSY for RDMA bytes on a priority without PFC (with the fix: map the
// traffic class's DSCP to the PFC priority) and for discards on a PFC priority. unverified when its loss counters were not
// read for every turn, or one of them went back (a driver reload: never OK); OK otherwise, saying when ECN marks or CNPs rose without loss
// (congestion control at work).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/verdict.hpp"

namespace rocebench::reports {

struct LosslessRule {
  // CONGESTED below this share of the median interval (p1 / p50 of a receiver's 100 ms goodput).
  double stall_share = 0.5;
  // A turn's sender is lossy when it retransmitted more than this share of the segments it sent. Measured
  // on the netns bed (4 hosts, 200-500 Mbit/s tbf): the shaper's own tail drops under incast cost 0-3
  // segments of ~20,000 (up to 0.02%), 1% netem loss on one link 0.9-1.9%.
  double retransmit_share = 0.001;
  // Over verbs, per priority: CONGESTED when a priority was paused (either way) longer than this share of
  // the incast's time; LOSSY when more than `off_pfc_share` of the RDMA bytes went on a priority without
  // PFC while the host has PFC on another (its traffic class is not mapped to the lossless priority).
  double pause_share = 0.1;
  double off_pfc_share = 0.01;
};

// What a host's NIC counted on one priority, both ways (verbs; a counter its driver lacks counts 0).
struct PriorityCounts {
  std::int64_t bytes = 0, discards = 0, paused_us = 0;
};

struct LosslessHost {
  std::string host;
  std::string verdict;                // "LOSSY", "CONGESTED", "unverified" or "OK"
  std::vector<std::string> evidence;  // in words, each naming the host, the counter and its delta
  std::int64_t resent = -1;           // what it sent again as a sender, over every turn (-1: not read)
  double paused_s = 0;                // its priorities' pause time, both ways, over the incast (verbs)
  bool marked = false;                // ECN marks or CNPs rose on it
  std::map<int, PriorityCounts> priorities;  // what its NIC counted on each priority it counted anything on (verbs)
};

// Adds one incast record's per-priority counters (nic_*_prio{N}) to `into`, priorities 0-7.
void add_priority_counts(std::map<int, PriorityCounts>& into, const json& metrics);

// The priorities each host has PFC on (netcheck's roce.pfc.enabled_priorities), where known.
using PfcPriorities = std::map<std::string, std::set<int>>;

// Whether a host's bytes on priority `n` went without PFC: it has PFC on another priority (`pfc`), and
// they are more than the rule's share of all its bytes (its traffic class is not mapped to the lossless one).
bool off_pfc(const std::map<int, PriorityCounts>& counts, int n, const std::set<int>& pfc, const LosslessRule& rule = {});

// Those priorities, from netcheck's roce.pfc.enabled_priorities check records (other records are left out).
PfcPriorities pfc_priorities(const std::vector<json>& records);

// Every host of the incast records over `transport` (microbench.incast: tcp or verbs), in the order the
// records first name them. With `pfc`, a host's RDMA bytes on a priority without PFC, and its discards on
// one with it, are judged too.
std::vector<LosslessHost> judge_incast(const std::vector<json>& records, const std::string& transport, const LosslessRule& rule = {},
                                       const PfcPriorities& pfc = {});

// A run's incast records judged as a report judges (suite "lossless"), one verdict per host and transport:
// LOSSY fails, unverified is missing (never a pass), CONGESTED and OK pass; each message is the verdict
// and its evidence, a line each.
std::vector<Verdict> lossless_verdicts(const std::vector<json>& incast, const PfcPriorities& pfc = {});

}  // namespace rocebench::reports
