// NIC counters in one vocabulary (issue #41): fixture hosts of mlx5, bnxt_re and rxe made from the
// drivers' documented names (microbench/tests/fixtures), an unknown driver, counters going back; and a
// ConnectX host's trees through the incast's record to the lossless verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "process_util.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_fs.hpp"
#include "rocebench/microbench/counters.hpp"
#include "rocebench/microbench/incast.hpp"
#include "rocebench/reports/lossless_verdict.hpp"

using namespace rocebench;
using namespace rocebench::microbench;
namespace fs = std::filesystem;

using rbtest::write_file;

namespace {

const fs::path kFixtures = fs::path(ROCEBENCH_SOURCE_DIR) / "microbench/tests/fixtures";

// A writable copy of a fixture host, so a test can move its counters on.
fs::path copy_of(const std::string& fixture) {
  const fs::path dir = rbtest::temp_dir("counters-" + fixture);
  fs::copy(kFixtures / fixture, dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  return dir;
}

std::string port_of(const fs::path& host, const std::string& device) {
  return (host / "root/sys/class/infiniband" / device / "ports/1").string();
}

// The same counters a ConnectX, a Broadcom and a soft-RoCE host record of one probe.
struct Case {
  std::string fixture, device, driver, found_by;
  std::map<std::string, std::string> sources;  // shared name -> source the fixture must give it from
};

const std::vector<Case> kCases = {
    {"mlx5", "mlx5_0", "mlx5", "/sys/class/infiniband/mlx5_0/device/driver -> mlx5_core",
     {{"tx_packets", "counters/port_xmit_packets"},
      {"rx_packets", "counters/port_rcv_packets"},
      {"seq_errors_rx", "hw_counters/out_of_sequence"},
      {"seq_naks_rx", "hw_counters/packet_seq_err"},
      {"ack_timeouts", "hw_counters/local_ack_timeout_err"},
      {"retries_exceeded", "hw_counters/req_transport_retries_exceeded"},
      {"rnr_naks_rx", "hw_counters/rnr_nak_retry_err"},
      {"duplicate_requests_rx", "hw_counters/duplicate_request"},
      {"ecn_marked_rx", "hw_counters/np_ecn_marked_roce_packets"},
      {"cnp_sent", "hw_counters/np_cnp_sent"},
      {"cnp_handled", "hw_counters/rp_cnp_handled"},
      {"cnp_ignored", "hw_counters/rp_cnp_ignored"},
      {"rx_discards_phy", "ethtool/rx_discards_phy"},
      {"pause_storm_warning_events", "ethtool/tx_pause_storm_warning_events"},
      {"pause_storm_error_events", "ethtool/tx_pause_storm_error_events"},
      {"rx_pause_prio3", "ethtool/rx_prio3_pause"},
      {"tx_pause_prio3", "ethtool/tx_prio3_pause"},
      {"rx_pause_duration_us_prio3", "ethtool/rx_prio3_pause_duration"},
      {"tx_pause_duration_us_prio3", "ethtool/tx_prio3_pause_duration"},
      {"rx_discards_prio3", "ethtool/rx_prio3_discards"},
      {"rx_discards_prio0", "ethtool/rx_prio0_discards"},
      {"rx_bytes_prio0", "ethtool/rx_prio0_bytes"},
      {"tx_bytes_prio0", "ethtool/tx_prio0_bytes"},
      {"rx_bytes_prio3", "ethtool/rx_prio3_bytes"},
      {"tx_bytes_prio3", "ethtool/tx_prio3_bytes"}}},
    {"bnxt_re", "bnxt_re0", "bnxt_re", "/sys/class/infiniband/bnxt_re0/device/driver -> bnxt_en",
     {{"tx_packets", "hw_counters/tx_pkts"},
      {"rx_packets", "hw_counters/rx_pkts"},
      {"seq_errors_rx", "hw_counters/oos_drop_count"},
      {"seq_naks_rx", "hw_counters/seq_err_naks_rcvd"},
      {"ack_timeouts", "hw_counters/to_retransmits"},
      {"retries_exceeded", "hw_counters/max_retry_exceeded"},
      {"rnr_naks_rx", "hw_counters/rnr_naks_rcvd"},
      {"duplicate_requests_rx", "hw_counters/dup_req"},
      {"ecn_marked_rx", "hw_counters/rx_ecn_marked_pkts"},
      {"cnp_sent", "hw_counters/tx_cnp_pkts"},
      {"cnp_handled", "hw_counters/rx_cnp_pkts"},
      {"rx_pause_prio0", "ethtool/rx_pfc_ena_frames_pri0"},
      {"rx_pause_prio3", "ethtool/rx_pfc_ena_frames_pri3"},
      {"tx_pause_prio3", "ethtool/tx_pfc_ena_frames_pri3"},
      {"rx_pause_duration_us_prio3", "ethtool/pfc_pri3_rx_duration_us"},
      {"tx_pause_duration_us_prio3", "ethtool/pfc_pri3_tx_duration_us"},
      {"rx_bytes_prio0", "ethtool/rx_bytes_pri0"},
      {"rx_bytes_prio3", "ethtool/rx_bytes_pri3"},
      {"tx_bytes_prio3", "ethtool/tx_bytes_pri3"}}},
    {"rxe", "rxe0", "rxe", "no /sys/class/infiniband/rxe0/device/driver; /sys/class/infiniband/rxe0/parent (rxe's) names eth0",
     {{"tx_packets", "hw_counters/sent_pkts"},
      {"rx_packets", "hw_counters/rcvd_pkts"},
      {"seq_errors_rx", "hw_counters/out_of_seq_request"},
      {"seq_naks_rx", "hw_counters/rcvd_seq_err"},
      {"ack_timeouts", "hw_counters/completer_retry_err"},
      {"retries_exceeded", "hw_counters/retry_exceeded_err"},
      {"rnr_naks_rx", "hw_counters/rcvd_rnr_err"},
      {"duplicate_requests_rx", "hw_counters/duplicate_request"}}},
};

CounterSnapshot read_fixture(const fs::path& host, const std::string& device) {
  return read_counters((host / "root").string(), device, 1, (host / "capture").string());
}

}  // namespace

TEST(Counters, EachDriversNamesMapToTheSharedOnes) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.fixture);
    const CounterSnapshot s = read_fixture(kFixtures / c.fixture, c.device);
    EXPECT_EQ(s.driver.name, c.driver);
    EXPECT_TRUE(s.driver.known);
    EXPECT_EQ(s.driver.found_by, c.found_by);
    const MappedCounters m = map_counters(s.driver.name, s.raw);
    for (const auto& [shared, source] : c.sources) {
      ASSERT_TRUE(m.shared.count(shared)) << shared;
      EXPECT_EQ(m.shared.at(shared).source, source) << shared;
      EXPECT_EQ(m.shared.at(shared).value, s.raw.at(source)) << shared;
    }
    // Nothing else maps: the cases above are the whole of what each fixture can give.
    EXPECT_EQ(m.shared.size(), c.sources.size());
    // A mapped counter is not also kept under its raw name; ethtool lines outside the vocabulary are dropped.
    for (const auto& [shared, source] : c.sources) EXPECT_FALSE(m.unmapped.count(source)) << source;
    for (const auto& [source, v] : m.unmapped) EXPECT_NE(source.rfind("ethtool/", 0), 0u) << source;
  }
}

TEST(Counters, WhatADriverCannotGiveIsNamedWithTheVerdictItFeeds) {
  const CounterSnapshot rxe = read_fixture(kFixtures / "rxe", "rxe0");
  const MappedCounters m = map_counters(rxe.driver.name, rxe.raw);
  // rxe keeps no CNP/ECN counters, and its virtio netdev has no capture here: no pause counters either.
  EXPECT_EQ(m.unavailable.at("cnp_ignored"), "CONGESTED");
  EXPECT_EQ(m.unavailable.at("rx_discards_prio{N}"), "LOSSY");
  EXPECT_EQ(m.unavailable.at("rx_pause_prio{N}"), "CONGESTED");
  EXPECT_EQ(m.unavailable.at("ecn_marked_rx"), "");
  EXPECT_FALSE(m.unavailable.count("seq_naks_rx"));
  // The mlx5 fixture gives every shared counter.
  const CounterSnapshot mlx5 = read_fixture(kFixtures / "mlx5", "mlx5_0");
  EXPECT_TRUE(map_counters(mlx5.driver.name, mlx5.raw).unavailable.empty());
}

TEST(Counters, EveryDriverOfTheVocabularyIsDeclaredWithItsSource) {
  std::set<std::string> drivers;
  for (const auto& d : nic_counter_drivers()) {
    EXPECT_FALSE(d.documented_in.empty()) << d.name;
    drivers.insert(std::string(d.name));
  }
  std::set<std::string> names;
  for (const auto& c : nic_counter_vocabulary()) {
    EXPECT_TRUE(names.insert(std::string(c.name)).second) << "declared twice: " << c.name;
    EXPECT_EQ(c.per_priority, std::string_view(c.name).find("{N}") != std::string_view::npos) << c.name;
    for (const auto& s : c.sources) {
      EXPECT_TRUE(drivers.count(std::string(s.driver))) << c.name << ": " << s.driver;
      for (const auto& n : s.names) {
        EXPECT_EQ(c.per_priority, n.find("{N}") != std::string_view::npos) << n;
        const bool placed = n.rfind("counters/", 0) == 0 || n.rfind("hw_counters/", 0) == 0 || n.rfind("ethtool/", 0) == 0;
        EXPECT_TRUE(placed) << n;
      }
    }
  }
}

TEST(Counters, DeltasCarrySharedNamesAndTheirSources) {
  const fs::path host = copy_of("mlx5");
  const std::string port = port_of(host, "mlx5_0");
  const CounterSnapshot before = read_fixture(host, "mlx5_0");
  write_file(fs::path(port) / "hw_counters/packet_seq_err", "6");      // 1 -> 6
  write_file(fs::path(port) / "counters/port_xmit_packets", "251000");  // 1000 -> 251000
  write_file(fs::path(port) / "hw_counters/out_of_buffer", "9");        // outside the vocabulary: raw name
  const fs::path ethtool = host / "capture/ethtool-S-ens1f0np0.txt";
  std::string text = rbtest::slurp(ethtool);
  text.replace(text.find("rx_prio3_pause: 12"), 18, "rx_prio3_pause: 20");
  write_file(ethtool, text);
  const auto d = counter_deltas(before, read_fixture(host, "mlx5_0"));
  EXPECT_EQ(d["nic_seq_naks_rx"], 5);
  EXPECT_EQ(d["nic_tx_packets"], 250000);
  EXPECT_EQ(d["nic_rx_pause_prio3"], 8);
  EXPECT_EQ(d["nic_seq_errors_rx"], 0);
  EXPECT_EQ(d["nic_out_of_buffer"], 9);
  EXPECT_FALSE(d.contains("nic_packet_seq_err"));
  EXPECT_FALSE(d.contains("nic_port_xmit_packets"));
  EXPECT_EQ(d["samples"]["counter_sources"]["seq_naks_rx"], "hw_counters/packet_seq_err");
  EXPECT_EQ(d["samples"]["counter_sources"]["rx_pause_prio3"], "ethtool/rx_prio3_pause");
  EXPECT_EQ(d["samples"]["nic_driver"]["name"], "mlx5");
  EXPECT_FALSE(d["samples"].contains("counters_reset"));
  EXPECT_FALSE(d["samples"].contains("counters_unavailable"));
  fs::remove_all(host);
}

TEST(Counters, ACounterThatWentBackIsNamedNotTurnedIntoADelta) {
  const fs::path host = copy_of("bnxt_re");
  const std::string port = port_of(host, "bnxt_re0");
  const CounterSnapshot before = read_fixture(host, "bnxt_re0");
  write_file(fs::path(port) / "hw_counters/to_retransmits", "0");  // 3 -> 0: the driver was reloaded
  write_file(fs::path(port) / "hw_counters/active_qps", "1");      // 2 -> 1: outside the vocabulary, same rule
  write_file(fs::path(port) / "hw_counters/seq_err_naks_rcvd", "4");
  const auto d = counter_deltas(before, read_fixture(host, "bnxt_re0"));
  EXPECT_FALSE(d.contains("nic_ack_timeouts"));
  EXPECT_FALSE(d.contains("nic_active_qps"));
  EXPECT_EQ(d["samples"]["counters_reset"], (nlohmann::json{"hw_counters/to_retransmits", "hw_counters/active_qps"}));
  EXPECT_EQ(d["nic_seq_naks_rx"], 3);
  // Wrapped looks the same as reset from two reads: named, never 2^64 minus a little.
  CounterSnapshot high = before, low = before;
  high.raw["hw_counters/rx_pkts"] = 0xFFFFFFF0u;
  low.raw["hw_counters/rx_pkts"] = 5;
  const auto w = counter_deltas(high, low);
  EXPECT_FALSE(w.contains("nic_rx_packets"));
  EXPECT_EQ(w["samples"]["counters_reset"], nlohmann::json{"hw_counters/rx_pkts"});
  fs::remove_all(host);
}

TEST(Counters, AnUnknownDriverRecordsRawNamesAndSaysWhatItCannotGive) {
  const fs::path root = rbtest::temp_dir("counters-unknown");
  const fs::path pci = root / "sys/devices/pci0000:00/0000:00:03.0";
  const fs::path port = pci / "infiniband/irdma0/ports/1";
  write_file(port / "hw_counters/ip4InDiscards", "2");
  write_file(port / "hw_counters/tcpRetransSegs", "1");
  write_file(port / "hw_counters/lifespan", "not-a-number");  // skipped, not fatal
  write_file(root / "sys/bus/pci/drivers/ice/uevent", "");
  fs::create_directories(root / "sys/class/infiniband");
  fs::create_symlink("../../../bus/pci/drivers/ice", pci / "driver");
  fs::create_symlink("../../../0000:00:03.0", pci / "infiniband/irdma0/device");
  fs::create_symlink("../../devices/pci0000:00/0000:00:03.0/infiniband/irdma0", root / "sys/class/infiniband/irdma0");
  const CounterSnapshot before = read_counters(root, "irdma0", 1);
  EXPECT_EQ(before.driver.name, "ice");
  EXPECT_FALSE(before.driver.known);
  EXPECT_EQ(before.raw.size(), 2u);
  write_file(port / "hw_counters/tcpRetransSegs", "4");
  const auto d = counter_deltas(before, read_counters(root, "irdma0", 1));
  EXPECT_EQ(d["nic_tcpRetransSegs"], 3);
  EXPECT_EQ(d["nic_ip4InDiscards"], 0);
  EXPECT_EQ(d["samples"]["nic_driver"]["name"], "ice");
  EXPECT_FALSE(d["samples"].contains("counter_sources"));
  // Every shared counter is unavailable, each with the verdict it would have fed.
  EXPECT_EQ(d["samples"]["counters_unavailable"].size(), nic_counter_vocabulary().size());
  EXPECT_EQ(d["samples"]["counters_unavailable"]["seq_naks_rx"], "LOSSY");
  EXPECT_EQ(d["samples"]["counters_unavailable"]["cnp_ignored"], "CONGESTED");
  // No device link and no known name: the driver is not guessed.
  EXPECT_EQ(rdma_driver(HostFs(root), "qedr0").name, "");
  EXPECT_TRUE(read_counters(root, "mlx5_9", 1).raw.empty());
  fs::remove_all(root);
}

TEST(Counters, SoftRoceIsFoundByItsParentAttributeWhateverItsDeviceLinkSays) {
  // rxe created as "roce0" on a virtio NIC: its device link leads to virtio_net, not to an RDMA driver.
  const fs::path root = rbtest::temp_dir("counters-rxe-virtio");
  const fs::path virtio = root / "sys/devices/pci0000:00/0000:00:04.0/virtio1";
  write_file(virtio / "infiniband/roce0/parent", "enp0s4");
  write_file(root / "sys/bus/virtio/drivers/virtio_net/uevent", "");
  fs::create_directories(root / "sys/class/infiniband");
  fs::create_symlink("../../../../bus/virtio/drivers/virtio_net", virtio / "driver");
  fs::create_symlink("../../../virtio1", virtio / "infiniband/roce0/device");
  fs::create_symlink("../../devices/pci0000:00/0000:00:04.0/virtio1/infiniband/roce0", root / "sys/class/infiniband/roce0");
  const RdmaDriver d = rdma_driver(HostFs(root), "roce0");
  EXPECT_EQ(d.name, "rxe");
  EXPECT_TRUE(d.known);
  EXPECT_EQ(d.found_by,
            "/sys/class/infiniband/roce0/device/driver -> virtio_net, not an RDMA driver of the vocabulary; "
            "/sys/class/infiniband/roce0/parent (rxe's) names enp0s4");
  // Without the attribute (a saved tree that left it out), the name is the last evidence.
  write_file(root / "sys/devices/virtual/infiniband/rxe1/ports/1/hw_counters/sent_pkts", "1");
  fs::create_symlink("../../devices/virtual/infiniband/rxe1", root / "sys/class/infiniband/rxe1");
  EXPECT_EQ(rdma_driver(HostFs(root), "rxe1").name, "rxe");
  fs::remove_all(root);
}

TEST(Counters, EthtoolLinesAreReadByName) {
  const std::string text =
      "NIC statistics:\n     rx_packets: 12\n     rx_prio3_pause: 42\n     tx_prio3_pause: 7\n"
      "     rx_prio3_pause_duration: 99\n     tx_pause_storm_error_events: 1\n     [0]: rx_ucast_packets: 5\n"
      "     bogus: -3\n     junk line\n";
  const auto c = parse_ethtool_counters(text);
  EXPECT_EQ(c.at("ethtool/rx_prio3_pause"), 42u);
  EXPECT_EQ(c.at("ethtool/rx_prio3_pause_duration"), 99u);
  EXPECT_EQ(c.at("ethtool/tx_pause_storm_error_events"), 1u);
  EXPECT_EQ(c.at("ethtool/rx_packets"), 12u);
  EXPECT_FALSE(c.count("ethtool/bogus"));
  EXPECT_EQ(c.size(), 6u);  // with "[0]: rx_ucast_packets", which maps to nothing
}

namespace {

// A step's declared metrics: every shared NIC counter with its unit and direction, and no other nic_ name.
void expect_every_shared_counter_declared(const nlohmann::json& metrics) {
  std::size_t declared = 0;
  for (const auto& c : nic_counter_vocabulary()) {
    for (int prio = 0; prio < (c.per_priority ? 8 : 1); ++prio) {
      std::string name = "nic_" + std::string(c.name);
      if (c.per_priority) name.replace(name.find("{N}"), 3, std::to_string(prio));
      ASSERT_TRUE(metrics.contains(name)) << name;
      EXPECT_EQ(metrics[name]["unit"], std::string(c.unit)) << name;
      // Evidence of a lossy or congested fabric is better lower; the rest is context.
      EXPECT_EQ(metrics[name]["better"], c.evidence_for.empty() ? "none" : "lower") << name;
      ++declared;
    }
  }
  std::size_t nic = 0;
  for (const auto& [name, m] : metrics.items()) nic += name.rfind("nic_", 0) == 0;
  EXPECT_EQ(nic, declared);  // and no shared name the vocabulary lost
}

nlohmann::json shape_of(const std::string& step) {
  std::ifstream in(fs::path(ROCEBENCH_SOURCE_DIR) / "microbench/shape.json");
  for (const auto& d : nlohmann::json::parse(in)) {
    if (d.at("steps").at(0) == step) return d;
  }
  ADD_FAILURE() << step << " is not declared in microbench/shape.json";
  return nlohmann::json::object({{"metrics", nlohmann::json::object()}});
}

}  // namespace

TEST(Counters, TheProbeShapeDeclaresEverySharedCounterWithItsUnit) {
  expect_every_shared_counter_declared(shape_of("microbench.probe").at("metrics"));
}

TEST(Counters, TheIncastShapeDeclaresEveryCounterItRecords) {
  const nlohmann::json metrics = shape_of("microbench.incast").at("metrics");
  expect_every_shared_counter_declared(metrics);
  std::size_t tcp = 0;
  for (const auto& name : tcp_counter_names()) {
    EXPECT_TRUE(metrics.contains(name)) << name;
    ++tcp;
  }
  std::size_t declared = 0;
  for (const auto& [name, m] : metrics.items()) {
    declared += name.starts_with("tcp_") || name.starts_with("tcpext_") || name.starts_with("ipext_");
  }
  EXPECT_EQ(declared, tcp);  // and none the reader no longer records
}

// The two files' layout as Linux 6.x writes them (cut to a few columns).
constexpr const char* kSnmp =
    "Ip: Forwarding DefaultTTL InReceives\n"
    "Ip: 1 64 1000\n"
    "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens InSegs OutSegs RetransSegs InErrs OutRsts\n"
    "Tcp: 1 200 120000 -1 10 5000 6000 12 0 3\n";
constexpr const char* kNetstat =
    "TcpExt: SyncookiesSent TCPLostRetransmit TCPTimeouts TCPDeliveredCE\n"
    "TcpExt: 0 4 2 100\n"
    "IpExt: InNoECTPkts InECT0Pkts InCEPkts\n"
    "IpExt: 900 50 7\n";

TEST(TcpCounters, ReadsTheKernelTablesUnderTheirOwnNames) {
  TcpCounterSnapshot s;
  parse_proc_net_counters("snmp", kSnmp, s);
  parse_proc_net_counters("netstat", kNetstat, s);
  EXPECT_EQ(s.values.at("tcp_RetransSegs"), 12u);
  EXPECT_EQ(s.values.at("tcp_OutRsts"), 3u);
  EXPECT_EQ(s.values.at("tcpext_TCPTimeouts"), 2u);
  EXPECT_EQ(s.values.at("tcpext_TCPDeliveredCE"), 100u);
  EXPECT_EQ(s.values.at("ipext_InCEPkts"), 7u);
  EXPECT_FALSE(s.values.count("tcp_MaxConn"));  // -1: a setting, not a counter
  EXPECT_FALSE(s.values.count("ip_InReceives"));  // not a TCP table
}

TEST(TcpCounters, JunkIsBadInputNamingFileAndLine) {
  TcpCounterSnapshot s;
  try {
    parse_proc_net_counters("/x/proc/net/netstat", "TcpExt: A B\nTcpExt: 1 x2\n", s);
    FAIL() << "junk value accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/x/proc/net/netstat"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("x2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_proc_net_counters("f", "TcpExt: A B\nTcpExt: 1\n", s), InputError);  // a value short
  EXPECT_THROW(parse_proc_net_counters("f", "no colon here\n", s), InputError);
  EXPECT_THROW(parse_proc_net_counters("f", "TcpExt: A B\n", s), InputError);  // names without values
  try {  // a table's values line lost between two tables: named at the names line it belonged to
    parse_proc_net_counters("f", "TcpExt: A B\nIpExt: C\nIpExt: 1\n", s);
    FAIL() << "names without values accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("f:1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_proc_net_counters("f", "Tcp: MaxConn\nTcp: -x\n", s), InputError);  // not a number
  EXPECT_THROW(parse_proc_net_counters("f", "Tcp: A\nTcp: 12x\n", s), InputError);
}

TEST(TcpCounters, ASavedTreeWithJunkNamesItsFileAndLine) {
  const fs::path root = fs::temp_directory_path() / ("rb-tcp-counters-" + std::to_string(::getpid()));
  fs::create_directories(root / "proc/net");
  std::ofstream(root / "proc/net/snmp") << kSnmp;
  std::ofstream(root / "proc/net/netstat") << "TcpExt: TCPTimeouts\nTcpExt: 3\nIpExt: InCEPkts\nIpExt: lots\n";
  try {
    read_tcp_counters(HostFs(root.string()));
    FAIL() << "junk in a saved tree accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((root / "proc/net/netstat").string() + ":4"), std::string::npos) << what;
    EXPECT_NE(what.find("InCEPkts"), std::string::npos) << what;
  }
  std::ofstream(root / "proc/net/netstat") << "TcpExt: TCPTimeouts\nTcpExt: 3\n";
  const auto s = read_tcp_counters(HostFs(root.string()));
  EXPECT_EQ(s.values.at("tcp_RetransSegs"), 12u);
  EXPECT_EQ(s.values.at("tcpext_TCPTimeouts"), 3u);
  fs::remove_all(root);
}

TEST(TcpCounters, DeltasNameWrapsAndWhatTheKernelDoesNotCount) {
  TcpCounterSnapshot before, after;
  parse_proc_net_counters("snmp", kSnmp, before);
  parse_proc_net_counters("netstat", kNetstat, before);
  after = before;
  after.values["tcp_RetransSegs"] = 20;
  after.values["tcpext_TCPTimeouts"] = 1;  // went back: a wrap, no delta
  const auto d = tcp_counter_deltas(before, after);
  EXPECT_EQ(d["tcp_RetransSegs"], 8);
  EXPECT_EQ(d["tcp_InErrs"], 0);
  EXPECT_FALSE(d.contains("tcpext_TCPTimeouts"));
  EXPECT_EQ(d["samples"]["counters_reset"], nlohmann::json::array({"tcpext_TCPTimeouts"}));
  const auto& missing = d["samples"]["counters_unavailable"];
  EXPECT_NE(std::find(missing.begin(), missing.end(), "tcpext_TCPOFODrop"), missing.end());  // not in the fixture
  EXPECT_EQ(std::find(missing.begin(), missing.end(), "tcp_RetransSegs"), missing.end());
}

TEST(TcpCounters, ReadsThisHostsProcThroughTheHostReader) {
  const auto s = read_tcp_counters(HostFs("/"));
  if (!HostFs("/").exists("/proc/net/netstat")) GTEST_SKIP() << "no /proc/net/netstat here";
  EXPECT_TRUE(s.values.count("tcp_RetransSegs"));
  EXPECT_TRUE(s.values.count("tcpext_TCPTimeouts"));
  EXPECT_TRUE(s.values.count("ipext_InCEPkts"));
}

// ---- from a ConnectX host's trees to its lossless verdict --------------------------------------

namespace {

// One ConnectX host's turn of a verbs incast, as the step records it: the mlx5 fixture read, `moves`
// written over it ("hw_counters/NAME" or "counters/NAME" files, "ethtool/NAME" lines of the capture),
// read again; the record as the run's results hold it.
nlohmann::json connectx_turn(const std::string& host, const std::string& receiver, const std::map<std::string, std::uint64_t>& moves) {
  const fs::path tree = copy_of("mlx5");
  const CounterSnapshot before = read_fixture(tree, "mlx5_0");
  const fs::path ethtool = tree / "capture/ethtool-S-ens1f0np0.txt";
  for (const auto& [source, value] : moves) {
    const std::string name = source.substr(source.find('/') + 1);
    if (source.starts_with("ethtool/")) {
      std::string text = rbtest::slurp(ethtool);
      const auto at = text.find(" " + name + ": ");
      if (at == std::string::npos) throw std::logic_error("the mlx5 fixture's capture has no " + name);
      text.replace(at, text.find('\n', at) - at, fmt::format(" {}: {}", name, value));
      write_file(ethtool, text);
    } else {
      write_file(fs::path(port_of(tree, "mlx5_0")) / source, std::to_string(value));
    }
  }
  const nlohmann::json series = {{"transport", "verbs"}, {"test", "write_bw"}, {"bytes", 65536}, {"duration_s", 2},
                                 {"qps", 1},            {"senders", 4},        {"tos", 106}};
  const ResultRecord r =
      incast_counter_record(series, receiver, host == receiver, host, counter_deltas(before, read_fixture(tree, "mlx5_0")));
  fs::remove_all(tree);
  return to_json(r, "run-1");
}

std::string joined(const std::vector<std::string>& lines) { return fmt::format("{}", fmt::join(lines, "\n")); }

}  // namespace

TEST(CountersToVerdict, ConnectXTreesGiveEachHostItsLosslessVerdictAndTheFix) {
  // Five ConnectX hosts with PFC on priority 3; h0 receives from the others. The fixture counts 1 on
  // packet_seq_err, 4,096 / 2,048 bytes on priority 0 and ~1.8 GB on priority 3 before the turn.
  const std::vector<nlohmann::json> run = {
      // The receiver: its reaction point ignored CNPs.
      connectx_turn("h0", "h0", {{"ethtool/rx_prio3_bytes", 3855000000}, {"hw_counters/rp_cnp_ignored", 40}}),
      // Clean, on the lossless priority.
      connectx_turn("h1", "h0", {{"ethtool/tx_prio3_bytes", 2811000000}, {"counters/port_xmit_packets", 700000}}),
      // Its traffic class lands on priority 0 (DSCP 26 is not mapped to 3).
      connectx_turn("h2", "h0", {{"ethtool/tx_prio0_bytes", 1000002048}, {"counters/port_xmit_packets", 700000}}),
      // A pause storm the NIC stopped: it dropped what it held.
      connectx_turn("h3", "h0", {{"ethtool/tx_prio3_bytes", 2811000000}, {"ethtool/tx_pause_storm_error_events", 1}}),
      // The driver was reloaded during the turn: packet_seq_err went back from 1 to 0.
      connectx_turn("h4", "h0", {{"ethtool/tx_prio3_bytes", 2811000000}, {"hw_counters/packet_seq_err", 0}}),
  };
  const reports::PfcPriorities pfc{{"h0", {3}}, {"h1", {3}}, {"h2", {3}}, {"h3", {3}}, {"h4", {3}}};
  std::map<std::string, reports::LosslessHost> v;
  for (auto& h : reports::judge_incast(run, "verbs", {}, pfc)) v[h.host] = h;
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v["h0"].verdict, "CONGESTED") << joined(v["h0"].evidence);
  EXPECT_EQ(joined(v["h0"].evidence), "h0: nic_cnp_ignored (hw_counters/rp_cnp_ignored) rose by 40 over the incast");
  EXPECT_EQ(v["h1"].verdict, "OK") << joined(v["h1"].evidence);
  EXPECT_EQ(v["h2"].verdict, "LOSSY");
  EXPECT_EQ(joined(v["h2"].evidence),
            "h2: RoCE traffic on priority 0 (1000000000 of 1000000000 bytes), PFC is on 3: DSCP 26 is not mapped to a lossless "
            "priority; `mlnx_qos -i ens1f0np0 --dscp2prio set,26,3`");
  EXPECT_EQ(v["h3"].verdict, "LOSSY");
  EXPECT_EQ(joined(v["h3"].evidence),
            "h3: nic_pause_storm_error_events (ethtool/tx_pause_storm_error_events) rose by 1 over the incast (packets dropped)");
  EXPECT_EQ(v["h4"].verdict, "unverified");
  EXPECT_EQ(joined(v["h4"].evidence),
            "h4: nic_seq_naks_rx (hw_counters/packet_seq_err) went back in the turn of receiver h0 (a driver reload or a counter "
            "wrap): no delta to judge");
}
