// The TCP twin of the lossless verdict (issue #41) on microbench.incast records as the step writes them:
// the lossy host named alone, ECN marks without loss OK, a stall CONGESTED, unread counters unverified.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "rocebench/reports/lossless_verdict.hpp"
#include "rocebench/reports/report.hpp"

using namespace rocebench;
using namespace rocebench::reports;

namespace {

const std::vector<std::string> kHosts{"h0", "h1", "h2", "h3"};

json incast_record(const std::string& host, json params, json metrics) {
  params["transport"] = "tcp";
  params["test"] = "bw";
  return {{"kind", "result"}, {"step", "microbench.incast"}, {"status", "ok"}, {"host", host},
          {"params", params}, {"metrics", metrics}};
}

// Every host receives once; `retransmits(sender, receiver)` and `ce(host)` give the counter deltas,
// `p1` each receiver's 100 ms goodput p1 (p50 is 0.48 Gb/s).
template <typename Retransmits>
std::vector<json> incast_run(Retransmits retransmits, std::map<std::string, int> ce = {},
                             std::map<std::string, double> p1 = {}) {
  std::vector<json> out;
  for (const auto& receiver : kHosts) {
    out.push_back(incast_record("h0", {{"receiver", receiver}},
                                {{"goodput_Gbps", 0.47},
                                 {"interval_goodput_Gbps_p1", p1.count(receiver) ? p1[receiver] : 0.45},
                                 {"interval_goodput_Gbps_p50", 0.48}}));
    for (const auto& host : kHosts) {
      const bool receives = host == receiver;
      out.push_back(incast_record(host, {{"receiver", receiver}, {"role", receives ? "receiver" : "sender"}, {"counters", "kernel_tcp"}},
                                  {{"tcp_RetransSegs", receives ? 0 : retransmits(host, receiver)},
                                   {"tcp_OutSegs", 20000},
                                   {"ipext_InCEPkts", receives && ce.count(host) ? ce[host] : 0}}));
    }
  }
  return out;
}

std::vector<LosslessHost> judge_tcp(const std::vector<json>& records, const LosslessRule& rule = {}) {
  return judge_incast(records, "tcp", rule);
}

std::map<std::string, LosslessHost> by_host(const std::vector<LosslessHost>& verdicts) {
  std::map<std::string, LosslessHost> out;
  for (const auto& v : verdicts) out[v.host] = v;
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

TEST(Lossless, TheHostOnALossyLinkIsNamedAloneWithItsCounters) {
  // h3's link drops both ways: h3 retransmits to everyone, everyone retransmits to h3.
  const auto v = by_host(judge_tcp(incast_run([](const std::string& s, const std::string& r) {
    return s == "h3" ? 40 : r == "h3" ? 25 : 0;
  })));
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v.at("h3").verdict, "LOSSY");
  for (const char* fine : {"h0", "h1", "h2"}) EXPECT_EQ(v.at(fine).verdict, "OK") << joined(v.at(fine).evidence);
  const std::string evidence = joined(v.at("h3").evidence);
  EXPECT_NE(evidence.find("h3: tcp_RetransSegs rose by 40 of 20000 tcp_OutSegs while h3 sent to h0"), std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find("h1: tcp_RetransSegs rose by 25 of 20000 tcp_OutSegs while h1 sent to h3"), std::string::npos)
      << evidence;
  EXPECT_EQ(v.at("h3").evidence.size(), 6u);  // its 6 pairs
}

TEST(Lossless, AReceiverWhoseEverySenderLostIsNamedAlone) {
  // Only h3's link in drops (its queue overflows under incast); h3 itself sends without loss.
  const auto v = by_host(judge_tcp(incast_run([](const std::string&, const std::string& r) {
    return r == "h3" ? 300 : 0;
  })));
  EXPECT_EQ(v.at("h3").verdict, "LOSSY");
  EXPECT_EQ(v.at("h3").evidence.size(), 3u);
  for (const char* fine : {"h0", "h1", "h2"}) EXPECT_EQ(v.at(fine).verdict, "OK") << joined(v.at(fine).evidence);
}

TEST(Lossless, AShapersFewTailDropsAreWithinTheShareTheNextOneIsNot) {
  // 3 of 20,000 segments again on every pair: what the bed's tbf drops under incast, within 0.1%.
  auto v = by_host(judge_tcp(incast_run([](const std::string&, const std::string&) { return 3; })));
  for (const auto& h : kHosts) EXPECT_EQ(v.at(h).verdict, "OK") << h;
  // The limit is the rule's: 20 of 20,000 is 0.1%, not above it; 21 is.
  v = by_host(judge_tcp(incast_run([](const std::string& s, const std::string&) { return s == "h2" ? 20 : 0; })));
  EXPECT_EQ(v.at("h2").verdict, "OK");
  v = by_host(judge_tcp(incast_run([](const std::string& s, const std::string&) { return s == "h2" ? 21 : 0; })));
  EXPECT_EQ(v.at("h2").verdict, "LOSSY");
  v = by_host(judge_tcp(incast_run([](const std::string&, const std::string&) { return 3; }), {.retransmit_share = 0}));
  EXPECT_EQ(v.at("h1").verdict, "LOSSY");
}

TEST(Lossless, LossEverywhereNamesEveryHostItWasSeenOn) {
  // Drops in every turn (a shared queue too short): no one host explains them, so none is left OK.
  const auto v = by_host(judge_tcp(incast_run([](const std::string&, const std::string&) { return 300; })));
  for (const auto& h : kHosts) EXPECT_EQ(v.at(h).verdict, "LOSSY") << h;
}

TEST(Lossless, EcnMarksWithoutRetransmissionsAreCongestionControlAtWork) {
  const auto v = by_host(judge_tcp(
      incast_run([](const std::string&, const std::string&) { return 0; }, {{"h0", 900}, {"h2", 15}})));
  for (const auto& h : kHosts) EXPECT_EQ(v.at(h).verdict, "OK") << h;
  EXPECT_NE(joined(v.at("h0").evidence).find("h0: ECN marked (ipext_InCEPkts +900) and tcp_RetransSegs did not rise"),
            std::string::npos)
      << joined(v.at("h0").evidence);
  EXPECT_NE(joined(v.at("h1").evidence).find("h1: tcp_RetransSegs did not rise"), std::string::npos);
}

TEST(Lossless, AStalledReceiverIsCongestedWithItsFigures) {
  const auto none = [](const std::string&, const std::string&) { return 0; };
  auto v = by_host(judge_tcp(incast_run(none, {}, {{"h1", 0.2}})));
  EXPECT_EQ(v.at("h1").verdict, "CONGESTED");
  EXPECT_NE(joined(v.at("h1").evidence).find("h1 as receiver: 100 ms goodput p1 0.200 Gb/s is below 0.5 of its p50 0.480"),
            std::string::npos)
      << joined(v.at("h1").evidence);
  EXPECT_EQ(v.at("h0").verdict, "OK");
  // The share is the rule's: at 0.3 the same stall is within it.
  v = by_host(judge_tcp(incast_run(none, {}, {{"h1", 0.2}}), {.stall_share = 0.3}));
  EXPECT_EQ(v.at("h1").verdict, "OK");
  // Loss outranks a stall.
  v = by_host(judge_tcp(incast_run([](const std::string& s, const std::string&) { return s == "h1" ? 90 : 0; },
                                          {}, {{"h1", 0.2}})));
  EXPECT_EQ(v.at("h1").verdict, "LOSSY");
}

TEST(Lossless, CountersNotReadAreUnverifiedNeverOk) {
  auto records = incast_run([](const std::string&, const std::string&) { return 0; });
  for (auto& r : records) {  // h2 could not read its counters as h0's sender
    if (r["host"] == "h2" && r["params"].value("receiver", "") == "h0" && r["params"].contains("role")) {
      r["metrics"].erase("tcp_RetransSegs");
    }
  }
  const auto v = by_host(judge_tcp(records));
  EXPECT_EQ(v.at("h2").verdict, "unverified");
  EXPECT_NE(joined(v.at("h2").evidence).find("h2: tcp_RetransSegs was not read in the turn(s) of receiver h0"),
            std::string::npos)
      << joined(v.at("h2").evidence);
  EXPECT_EQ(v.at("h1").verdict, "OK");
  // Records of other steps, transports, or that did not end ok, judge nothing.
  EXPECT_TRUE(judge_tcp({json{{"kind", "result"}, {"step", "microbench.probe"}, {"status", "ok"}}}).empty());
}

// ---- over verbs: the NIC's counters in the shared vocabulary ----------------------------------

namespace {

// A verbs incast as microbench.incast records it on rxe: every host receives once; `nic(host, receiver)`
// gives the host's counter deltas in that turn (nic_tx_packets 50000 unless it says otherwise).
template <typename Nic>
std::vector<json> verbs_run(Nic nic) {
  std::vector<json> out;
  for (const auto& receiver : kHosts) {
    json receiver_record = incast_record("h0", {{"receiver", receiver}},
                                         {{"goodput_Gbps", 0.47}, {"interval_goodput_Gbps_p1", 0.45}, {"interval_goodput_Gbps_p50", 0.48}});
    receiver_record["params"]["transport"] = "verbs";
    receiver_record["params"]["test"] = "write_bw";
    receiver_record["params"]["duration_s"] = 2;
    out.push_back(receiver_record);
    for (const auto& host : kHosts) {
      json metrics = {{"nic_tx_packets", 50000}};
      metrics.update(nic(host, receiver));
      json r = incast_record(host, {{"receiver", receiver}, {"role", host == receiver ? "receiver" : "sender"}, {"counters", "nic"}}, metrics);
      r["params"]["transport"] = "verbs";
      r["params"]["test"] = "write_bw";
      r["params"]["duration_s"] = 2;
      r["samples"] = {{"counter_sources", {{"seq_naks_rx", "hw_counters/rcvd_seq_err"}, {"ack_timeouts", "hw_counters/completer_retry_err"}}}};
      out.push_back(r);
    }
  }
  return out;
}

json no_loss() { return {{"nic_seq_naks_rx", 0}, {"nic_ack_timeouts", 0}, {"nic_retries_exceeded", 0}}; }

json with(json deltas, const json& more) {
  deltas.update(more);
  return deltas;
}

}  // namespace

TEST(LosslessVerbs, TheHostOnALossyLinkIsNamedAloneByItsSendersSequenceNaksAndTimeouts) {
  // h3's link drops both ways: h3's requests draw sequence NAKs, everyone's requests to h3 time out.
  const auto v = by_host(judge_incast(verbs_run([](const std::string& host, const std::string& receiver) {
                                        if (host == receiver) return no_loss();
                                        if (host == "h3") return with(no_loss(), {{"nic_seq_naks_rx", 140}});
                                        return receiver == "h3" ? with(no_loss(), {{"nic_ack_timeouts", 90}}) : no_loss();
                                      }),
                                      "verbs"));
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v.at("h3").verdict, "LOSSY");
  for (const char* fine : {"h0", "h1", "h2"}) EXPECT_EQ(v.at(fine).verdict, "OK") << joined(v.at(fine).evidence);
  const std::string evidence = joined(v.at("h3").evidence);
  EXPECT_NE(evidence.find("h3: nic_seq_naks_rx (hw_counters/rcvd_seq_err) rose by 140 of 50000 nic_tx_packets while h3 sent to h0 "
                          "(packets lost: the requester went back and resent them)"),
            std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find("h1: nic_ack_timeouts (hw_counters/completer_retry_err) rose by 90 of 50000"), std::string::npos) << evidence;
  EXPECT_NE(joined(v.at("h0").evidence).find("h0: nic_seq_naks_rx, nic_ack_timeouts, nic_retries_exceeded did not rise in any turn"),
            std::string::npos)
      << joined(v.at("h0").evidence);
  // The same counters within the rule's share (0.1% of 50000 packets) are not loss.
  const auto within = by_host(judge_incast(verbs_run([](const std::string& host, const std::string& receiver) {
                                             return host != receiver && host == "h3" ? with(no_loss(), {{"nic_seq_naks_rx", 50}}) : no_loss();
                                           }),
                                           "verbs"));
  EXPECT_EQ(within.at("h3").verdict, "OK");
  // TCP records are not verbs evidence, and the other way round.
  EXPECT_TRUE(judge_incast(verbs_run([](const std::string&, const std::string&) { return no_loss(); }), "tcp").empty());
}

TEST(LosslessVerbs, StreamsThatStalledAndWereGivenUpAreLossOnTheHostTheyShare) {
  // h3's link drops so much that its senders' RC streams to it stop completing: each was given up after
  // 5 s without a completion (the receiver's record names them), while the counters stay within the share.
  std::vector<json> records = verbs_run([](const std::string&, const std::string&) { return no_loss(); });
  for (json& r : records) {
    if (!r["params"].contains("role") && r["params"]["receiver"] == "h3") {
      r["samples"] = {{"abandoned_messages", {{"h0", 128}, {"h1", 96}, {"h2", 128}}}, {"drain_s", 5.0}};
    }
  }
  const auto v = by_host(judge_incast(records, "verbs"));
  EXPECT_EQ(v.at("h3").verdict, "LOSSY");
  for (const char* fine : {"h0", "h1", "h2"}) EXPECT_EQ(v.at(fine).verdict, "OK") << joined(v.at(fine).evidence);
  const std::string evidence = joined(v.at("h3").evidence);
  EXPECT_NE(evidence.find("h1: 96 message(s) to h3 given up, none acknowledged for 5 s after the turn: the stream stalled (its "
                          "resends did not get through)"),
            std::string::npos)
      << evidence;
  EXPECT_EQ(v.at("h3").evidence.size(), 3u) << evidence;  // its three stalled pairs, no counter line
}

TEST(LosslessVerbs, DiscardsOrAStoppedPauseStormAreLossOnTheHostThatCountsThem) {
  // A ConnectX receiver drops for lack of buffer (PFC not holding the senders back): no sender resent
  // more than the share, yet the discards are loss.
  const auto v = by_host(judge_incast(verbs_run([](const std::string& host, const std::string& receiver) {
                                        return host == "h2" && receiver == "h2" ? with(no_loss(), {{"nic_rx_discards_phy", 310}}) : no_loss();
                                      }),
                                      "verbs"));
  EXPECT_EQ(v.at("h2").verdict, "LOSSY");
  EXPECT_NE(joined(v.at("h2").evidence).find("h2: nic_rx_discards_phy rose by 310 over the incast (packets dropped)"), std::string::npos)
      << joined(v.at("h2").evidence);
  EXPECT_EQ(v.at("h1").verdict, "OK");
  const auto storm = by_host(judge_incast(verbs_run([](const std::string& host, const std::string&) {
                                            return host == "h1" ? with(no_loss(), {{"nic_pause_storm_error_events", 1}}) : no_loss();
                                          }),
                                          "verbs"));
  EXPECT_EQ(storm.at("h1").verdict, "LOSSY");
}

TEST(LosslessVerbs, IgnoredCnpsAreCongestedAndMarksWithoutLossAreCongestionControlAtWork) {
  const auto v = by_host(judge_incast(verbs_run([](const std::string& host, const std::string& receiver) {
                                        if (host == "h1") return with(no_loss(), {{"nic_cnp_ignored", 12}});
                                        if (host == receiver) return with(no_loss(), {{"nic_ecn_marked_rx", 800}, {"nic_cnp_sent", 800}});
                                        return with(no_loss(), {{"nic_cnp_handled", 260}});
                                      }),
                                      "verbs"));
  EXPECT_EQ(v.at("h1").verdict, "CONGESTED");
  EXPECT_NE(joined(v.at("h1").evidence).find("h1: nic_cnp_ignored rose by 48 over the incast"), std::string::npos)
      << joined(v.at("h1").evidence);
  EXPECT_EQ(v.at("h0").verdict, "OK");
  EXPECT_NE(joined(v.at("h0").evidence).find("h0: ECN marked (nic_cnp_handled +780, nic_cnp_sent +800, nic_ecn_marked_rx +800) and"),
            std::string::npos)
      << joined(v.at("h0").evidence);
}

TEST(LosslessVerbs, ADriverThatCountsNoLossIsUnverifiedNamingTheCounters) {
  const auto v = by_host(judge_incast(verbs_run([](const std::string& host, const std::string&) {
                                        return host == "h2" ? json::object() : no_loss();
                                      }),
                                      "verbs"));
  EXPECT_EQ(v.at("h2").verdict, "unverified");
  EXPECT_NE(joined(v.at("h2").evidence)
                .find("h2: nic_seq_naks_rx, nic_ack_timeouts, nic_retries_exceeded were not read in the turn(s) of receiver h0, h1, h2, h3"),
            std::string::npos)
      << joined(v.at("h2").evidence);
  EXPECT_EQ(v.at("h0").verdict, "OK");
}

TEST(LosslessVerbs, RoceOnAPriorityWithoutPfcIsLossyWithTheFixAndDiscardsOnThePfcPriorityToo) {
  // ConnectX hosts with PFC on priority 3; h2's traffic class lands on priority 0 (DSCP 26 not mapped).
  const PfcPriorities pfc{{"h0", {3}}, {"h1", {3}}, {"h2", {3}}, {"h3", {3}}};
  const auto run = verbs_run([](const std::string& host, const std::string&) {
    return with(no_loss(), host == "h2" ? json{{"nic_tx_bytes_prio0", 9000000}, {"nic_tx_bytes_prio3", 1000}}
                                        : json{{"nic_tx_bytes_prio3", 9000000}, {"nic_rx_bytes_prio3", 3000000}});
  });
  const auto v = by_host(judge_incast(run, "verbs", {}, pfc));
  EXPECT_EQ(v.at("h2").verdict, "LOSSY");
  EXPECT_NE(joined(v.at("h2").evidence)
                .find("h2: RoCE traffic on priority 0 (36000000 of 36004000 bytes), PFC is on 3: DSCP 26 is not mapped to a lossless "
                      "priority; `mlnx_qos -i <netdev> --dscp2prio set,26,3`"),
            std::string::npos)
      << joined(v.at("h2").evidence);
  for (const char* fine : {"h0", "h1", "h3"}) EXPECT_EQ(v.at(fine).verdict, "OK") << joined(v.at(fine).evidence);
  // Each host keeps what its NIC counted on the priorities it counted anything on (accept's metrics give them).
  EXPECT_EQ(v.at("h2").priorities.at(0).bytes, 36000000);
  EXPECT_EQ(v.at("h2").priorities.at(3).bytes, 4000);
  EXPECT_FALSE(v.at("h2").priorities.count(5));
  // Where the PFC setup is not known, the priority is not judged.
  EXPECT_EQ(by_host(judge_incast(run, "verbs")).at("h2").verdict, "OK");
  // Discards on the lossless priority: PFC did not hold the senders back.
  const auto dropped = by_host(judge_incast(verbs_run([](const std::string& host, const std::string& receiver) {
                                              return host == "h1" && receiver == "h1" ? with(no_loss(), {{"nic_rx_discards_prio3", 77}}) : no_loss();
                                            }),
                                            "verbs", {}, pfc));
  EXPECT_EQ(dropped.at("h1").verdict, "LOSSY");
  EXPECT_NE(joined(dropped.at("h1").evidence).find("h1: nic_rx_discards_prio3 rose by 77 on lossless priority 3"), std::string::npos)
      << joined(dropped.at("h1").evidence);
}

TEST(LosslessVerbs, APriorityPausedBeyondTheShareOfTheIncastIsCongested) {
  // 4 turns of 2 s: 8 s of incast; h3 paused 300 ms in each turn (1.2 s, 15%), h0 50 ms each (2.5%).
  const auto v = by_host(judge_incast(verbs_run([](const std::string& host, const std::string&) {
                                        return with(no_loss(), {{"nic_rx_pause_duration_us_prio3", host == "h3" ? 300000 : host == "h0" ? 50000 : 0}});
                                      }),
                                      "verbs"));
  EXPECT_EQ(v.at("h3").verdict, "CONGESTED");
  EXPECT_NE(joined(v.at("h3").evidence).find("h3: priority 3 paused 1200 ms of the incast's 8000 ms (above 0.1 of it)"), std::string::npos)
      << joined(v.at("h3").evidence);
  EXPECT_EQ(v.at("h0").verdict, "OK");
}

TEST(LosslessReport, ARunsReportJudgesItsIncastAndShowsTheReceiversAndTheHostByPriorityTable) {
  // A ConnectX run as `rocebench run` leaves it: h2's traffic class on priority 0 while PFC is on 3.
  auto run = verbs_run([](const std::string& host, const std::string&) {
    return with(no_loss(), host == "h2" ? json{{"nic_tx_bytes_prio0", 9000000}, {"nic_tx_bytes_prio3", 1000}}
                                        : json{{"nic_tx_bytes_prio3", 9000000}, {"nic_rx_pause_duration_us_prio3", 1500}});
  });
  for (const auto& host : kHosts) {
    run.push_back({{"kind", "check"}, {"host", host}, {"check", "roce.pfc.enabled_priorities"}, {"subject", "mlx5_0/1"},
                   {"status", "ok"}, {"observed", json::array({3})}, {"expected", json::array({3})}});
  }
  run.front()["samples"] = {{"abandoned_messages", {{"h3", 7}}}, {"drain_s", 5.0}};  // h0's turn: a stalled pair, LOSSY both
  const auto dir = std::filesystem::path(::testing::TempDir()) / ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "results.jsonl");
    int rank = 0;
    for (json r : run) {
      r.update({{"schema", "rocebench.result/1"}, {"run", "r1"}, {"time", "2026-12-05T02:00:00Z"}});
      if (r["kind"] == "result") r.update({{"rank", rank++ % 4}, {"world", 4}, {"samples", r.value("samples", json::object())}});
      out << r.dump() << "\n";
    }
  }
  ReportRequest request;
  request.inputs = {(dir / "results.jsonl").string()};
  request.out_dir = dir / "report";
  request.plots = false;
  const ReportResult result = write_report(request);
  EXPECT_EQ(result.exit_code, 1);  // a LOSSY host fails the run
  std::map<std::string, Verdict> lossless;
  for (const auto& v : result.verdicts) {
    if (v.suite == "lossless") lossless[v.name] = v;
  }
  ASSERT_EQ(lossless.size(), 4u);
  EXPECT_EQ(lossless["h2 under verbs incast"].outcome, Outcome::fail);
  EXPECT_NE(lossless["h2 under verbs incast"].message.find("LOSSY\nh2: RoCE traffic on priority 0"), std::string::npos)
      << lossless["h2 under verbs incast"].message;
  EXPECT_EQ(lossless["h1 under verbs incast"].outcome, Outcome::pass);
  EXPECT_NE(result.summary.find("fail: h2 under verbs incast: LOSSY\n    h2: RoCE traffic on priority 0"), std::string::npos)
      << result.summary;
  std::ifstream md(dir / "report" / "report.md");
  const std::string report((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(report.find("## Lossless under load (incast)"), std::string::npos) << report;
  EXPECT_NE(report.find("| h0 | verbs | 0.47 |"), std::string::npos) << report;
  EXPECT_NE(report.find("**h3 (7 messages)**"), std::string::npos) << report;
  EXPECT_NE(report.find("| host | priority 0 | priority 3 |"), std::string::npos) << report;
  // h2's bytes on priority 0 went without PFC (it has PFC on 3): marked as the verdict judges them.
  EXPECT_NE(report.find("| h2 | **36 MB, no PFC** | 0.004 MB |"), std::string::npos) << report;
  EXPECT_NE(report.find("paused 6 ms"), std::string::npos) << report;
}
