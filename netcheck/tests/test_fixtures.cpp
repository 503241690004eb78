// The checks on fixture hosts: a well-configured ConnectX-6 Dx host (two ports, a GPU behind the
// same PCIe switch) and variants, each misconfigured in one way and failing exactly its checks.
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "fixture_host.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/netcheck/report.hpp"

using namespace rocebench;
using namespace rocebench::netcheck;
using fixture::FixtureHost;
using Set = std::set<std::string>;

namespace {

const std::string kIf0 = "/sys/class/net/ens1f0np0";

void expect_valid_records(const std::vector<CheckRecord>& records) {
  for (const auto& r : records) {
    const json j = to_json(r, "run-1");
    const auto errors = result_schema().validate(j);
    EXPECT_TRUE(errors.empty()) << j.dump() << "\n" << (errors.empty() ? "" : errors.front().pointer + ": " + errors.front().message);
  }
}

Set failing(const FixtureHost& host) {
  const auto records = host.check();
  expect_valid_records(records);
  return fixture::with_status(records, Status::fail);
}

}  // namespace

TEST(GoodHost, ReadsLikeTheRealThing) {
  const HostState h = FixtureHost().state();
  ASSERT_EQ(h.devices.size(), 2u);
  const RdmaDevice& d = h.devices[0];
  EXPECT_EQ(d.name, "mlx5_0");
  EXPECT_EQ(d.fw_ver, "22.41.1000");
  EXPECT_EQ(d.pci_address, "0000:18:00.0");
  EXPECT_EQ(d.pci_path, (std::vector<std::string>{"0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"}));
  ASSERT_TRUE(d.netdev);
  EXPECT_EQ(d.netdev->name, "ens1f0np0");
  EXPECT_EQ(d.netdev->mtu, 9000);
  EXPECT_TRUE(d.netdev->qos.ofed);
  EXPECT_EQ(d.netdev->qos.trust.value, "dscp");
  EXPECT_EQ(d.netdev->qos.trust.source, kIf0 + "/qos/trust");
  EXPECT_EQ(d.netdev->qos.pfc.value, std::vector<int>{3});
  EXPECT_NE(d.netdev->qos.pfc.source.find("dcb-pfc-ens1f0np0.txt"), std::string::npos);
  EXPECT_EQ(d.netdev->qos.ecn_np.value, std::vector<int>{3});
  EXPECT_EQ(d.netdev->qos.cnp_dscp.value, 48);
  ASSERT_EQ(d.ports.size(), 1u);
  EXPECT_EQ(d.ports[0].state, "ACTIVE");
  EXPECT_EQ(d.ports[0].gids.size(), 4u);  // the zero GIDs are empty slots
  EXPECT_EQ(d.ports[0].roce_tos.value, 106);
  EXPECT_EQ(h.driver_version, "24.10-1.1.4");
  EXPECT_EQ(h.gpus.size(), 1u);
  EXPECT_EQ(h.acs.size(), 3u);
}

TEST(GoodHost, EveryCheckPasses) {
  const auto records = FixtureHost().check();
  expect_valid_records(records);
  EXPECT_EQ(fixture::with_status(records, Status::fail), Set{});
  EXPECT_EQ(fixture::with_status(records, Status::warn), Set{});
  EXPECT_EQ(fixture::with_status(records, Status::skip), Set{});
  std::set<std::string> ids;
  for (const auto& r : records) ids.insert(r.check);
  EXPECT_EQ(ids, std::set<std::string>(kCheckIds.begin(), kCheckIds.end()));  // every check ran
}

namespace {

// One misconfiguration: what a test does to the good host, the exact checks that must then fail,
// and the fix one of them must offer.
struct Misconfiguration {
  std::string name;
  std::function<void(const FixtureHost&)> apply;
  Set failing;
  std::string hint_of;  // "check subject"
  std::string hint;
  std::function<void(const std::vector<CheckRecord>&)> also = [](const auto&) {};
};

// Test names show the case, not its bytes.
void PrintTo(const Misconfiguration& m, std::ostream* os) { *os << m.name; }

std::string acs_enabled_on_switch_port(const FixtureHost& host) {
  std::string lspci = fixture::read_file(host.capture() / "lspci-vvv.txt");
  const std::string off = "ACSCtl:\tSrcValid-";
  lspci.replace(lspci.find(off, lspci.find("0000:17:00.0 PCI bridge")), off.size(), "ACSCtl:\tSrcValid+");
  return lspci;
}

const std::vector<Misconfiguration> kMisconfigurations{
    {"PfcOnTheWrongPriority",
     [](const FixtureHost& h) {
       h.write_capture("dcb-pfc-ens1f0np0.txt", "pfc-cap 8 macsec-bypass off delay 7\nprio-pfc 0:off 1:off 2:off 3:off 4:on 5:off 6:off 7:off\n");
     },
     {"roce.pfc.enabled_priorities mlx5_0/1"}, "roce.pfc.enabled_priorities mlx5_0/1",
     "mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0",
     [](const auto& records) {
       EXPECT_EQ(fixture::find_record(records, "roce.pfc.enabled_priorities", "mlx5_0/1").observed, json::array({4}));
     }},
    {"PfcOnAnExtraPriority",  // lossless traffic other than RoCE's pauses the link too
     [](const FixtureHost& h) {
       h.write_capture("dcb-pfc-ens1f0np0.txt", "pfc-cap 8 macsec-bypass off delay 7\nprio-pfc 0:off 1:off 2:off 3:on 4:on 5:off 6:off 7:off\n");
     },
     {"roce.pfc.enabled_priorities mlx5_0/1"}, "roce.pfc.enabled_priorities mlx5_0/1",
     "mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0",
     [](const auto& records) {
       EXPECT_EQ(fixture::find_record(records, "roce.pfc.enabled_priorities", "mlx5_0/1").observed, json::array({3, 4}));
     }},
    {"EcnOff",
     [](const FixtureHost& h) {
       h.write(kIf0 + "/ecn/roce_np/enable/3", "0");
       h.write(kIf0 + "/ecn/roce_rp/enable/3", "0");
     },
     {"roce.ecn.np_enabled mlx5_0/1", "roce.ecn.rp_enabled mlx5_0/1"}, "roce.ecn.np_enabled mlx5_0/1",
     "echo 1 > /sys/class/net/ens1f0np0/ecn/roce_np/enable/3"},
    {"TrustPcp", [](const FixtureHost& h) { h.write(kIf0 + "/qos/trust", "pcp"); }, {"roce.trust.dscp mlx5_0/1"},
     "roce.trust.dscp mlx5_0/1", "mlnx_qos -i ens1f0np0 --trust dscp",
     [](const auto& records) {
       EXPECT_EQ(fixture::find_record(records, "roce.dscp.priority_map", "mlx5_0/1").status, Status::skip);
     }},
    {"RoceV1DefaultMode",
     [](const FixtureHost& h) { h.write("/sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_mode", "IB/RoCE v1"); },
     {"roce.mode.default mlx5_1/1"}, "roce.mode.default mlx5_1/1",
     "mkdir -p /sys/kernel/config/rdma_cm/mlx5_1 && echo 'RoCE v2' > /sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_mode"},
    {"Mtu1500", [](const FixtureHost& h) { h.write(kIf0 + "/mtu", "1500"); },
     {"link.mtu mlx5_0/1", "link.active_mtu mlx5_0/1"}, "link.mtu mlx5_0/1", "ip link set dev ens1f0np0 mtu 4200",
     [](const auto& records) { EXPECT_EQ(fixture::find_record(records, "link.active_mtu", "mlx5_0/1").observed, 1024); }},
    {"AcsOnTheSwitchPort",
     [](const FixtureHost& h) { h.write_capture("lspci-vvv.txt", acs_enabled_on_switch_port(h)); },
     {"gpudirect.acs_disabled mlx5_0", "gpudirect.acs_disabled mlx5_1"}, "gpudirect.acs_disabled mlx5_0",
     "setpci -s 0000:17:00.0 ECAP_ACS+0x6.w=0000",
     [](const auto& records) {
       EXPECT_EQ(fixture::find_record(records, "gpudirect.acs_disabled", "mlx5_0").observed,
                 json({{"acs_enabled_on", {"0000:17:00.0"}}}));
     }},
    {"PortDown",
     [](const FixtureHost& h) {
       h.write("/sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN");
       h.write("/sys/class/infiniband/mlx5_1/ports/1/phys_state", "3: Disabled");
       h.write("/sys/class/net/ens1f1np1/operstate", "down");
     },
     // NCCL_IB_HCA in the host's nccl.conf names the port that is down: NCCL would try to use it.
     {"link.state mlx5_1/1", "nccl.ib_hca host"}, "link.state mlx5_1/1", "ip link set dev ens1f1np1 up",
     [](const auto& records) { EXPECT_EQ(fixture::find_record(records, "link.rate", "mlx5_1/1").status, Status::skip); }},
    {"DegradedRate", [](const FixtureHost& h) { h.write("/sys/class/infiniband/mlx5_1/ports/1/rate", "100 Gb/sec (2X HDR)"); },
     {"link.rate mlx5_1/1"}, "link.rate mlx5_1/1",
     "ethtool ens1f1np1  # compare Speed with Supported link modes; reseat or replace the cable",
     [](const auto& records) { EXPECT_EQ(fixture::find_record(records, "link.rate", "mlx5_1/1").expected, 200.0); }},
    {"CnpOnTheWrongDscpAndPriority",
     [](const FixtureHost& h) {
       h.write(kIf0 + "/ecn/roce_np/cnp_dscp", "46");
       h.write(kIf0 + "/ecn/roce_np/cnp_802p_prio", "7");
     },
     {"roce.cnp.dscp mlx5_0/1", "roce.cnp.prio mlx5_0/1"}, "roce.cnp.prio mlx5_0/1",
     "echo 6 > /sys/class/net/ens1f0np0/ecn/roce_np/cnp_802p_prio"},
    {"PeerMemoryModuleMissingAndIommuTranslated",
     [](const FixtureHost& h) {
       h.remove("/sys/module/nvidia_peermem");
       h.write("/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro intel_iommu=on");
     },
     {"gpudirect.peermem_loaded host", "host.iommu host"}, "gpudirect.peermem_loaded host", "modprobe nvidia_peermem"},
};

}  // namespace

class Misconfigured : public ::testing::TestWithParam<Misconfiguration> {};

TEST_P(Misconfigured, FailsExactlyItsChecks) {
  const Misconfiguration& m = GetParam();
  FixtureHost host;
  m.apply(host);
  const auto records = host.check();
  expect_valid_records(records);
  EXPECT_EQ(fixture::with_status(records, Status::fail), m.failing);
  const auto space = m.hint_of.find(' ');
  EXPECT_EQ(fixture::find_record(records, m.hint_of.substr(0, space), m.hint_of.substr(space + 1)).hint, m.hint);
  m.also(records);
}

INSTANTIATE_TEST_SUITE_P(Variant, Misconfigured, ::testing::ValuesIn(kMisconfigurations),
                         [](const auto& variant) { return variant.param.name; });

TEST(Variant, AnMtuOfExactlyTheMinimumPassesOneLessFails) {
  for (const auto& [mtu, status] : {std::pair{"4200", Status::ok}, std::pair{"4199", Status::fail}}) {
    FixtureHost host;
    host.write(kIf0 + "/mtu", mtu);
    EXPECT_EQ(fixture::find_record(host.check(), "link.mtu", "mlx5_0/1").status, status) << "MTU " << mtu << ", profile 4200";
  }
}

TEST(Variant, NoGpuSkipsGpuDirect) {
  FixtureHost host;
  host.remove("/sys/bus/pci/devices/0000:19:00.0");
  const auto records = host.check();
  EXPECT_EQ(fixture::with_status(records, Status::fail), Set{});
  EXPECT_EQ(fixture::with_status(records, Status::skip),
            (Set{"gpudirect.peermem_loaded host", "gpudirect.acs_disabled mlx5_0", "gpudirect.acs_disabled mlx5_1"}));
}

TEST(Variant, UpstreamDriverWithDcb) {
  // An inbox mlx5 host: no OFED qos/ecn sysfs, no mlnx_qos; DSCP mapping in the DCB APP table,
  // CNP marking in debugfs. ECN enables are not exposed, so those checks are unverified.
  FixtureHost host;
  for (const char* netdev : {"ens1f0np0", "ens1f1np1"}) {
    const std::string dir = std::string("/sys/class/net/") + netdev;
    host.remove(dir + "/qos");
    host.remove(dir + "/ecn");
    host.remove_capture(std::string("mlnx_qos-") + netdev + ".txt");
    host.write_capture(std::string("dcb-app-") + netdev + ".txt", "dscp-prio 26:3 48:6\n");
  }
  host.remove("/sys/module/mlx5_core/version");
  for (const char* pci : {"0000:18:00.0", "0000:18:00.1"}) {
    const std::string cc = std::string("/sys/kernel/debug/mlx5/") + pci + "/cc_params";
    host.write(cc + "/np_cnp_dscp", "48");
    host.write(cc + "/np_cnp_prio", "6");
    host.write(cc + "/np_cnp_prio_mode", "0");
  }
  const auto records = host.check();
  expect_valid_records(records);
  EXPECT_EQ(fixture::with_status(records, Status::fail), Set{});
  EXPECT_EQ(fixture::with_status(records, Status::skip), Set{});
  EXPECT_EQ(fixture::with_status(records, Status::unverified),
            (Set{"roce.ecn.np_enabled mlx5_0/1", "roce.ecn.rp_enabled mlx5_0/1", "roce.ecn.np_enabled mlx5_1/1",
                 "roce.ecn.rp_enabled mlx5_1/1"}));
  EXPECT_NE(fixture::find_record(records, "roce.ecn.np_enabled", "mlx5_0/1").hint.find("MLNX_OFED"), std::string::npos);
  EXPECT_EQ(fixture::find_record(records, "host.driver", "host").observed, "inbox 5.15.0-119-generic");

  // The same host with PFC off and no DSCP mapping: fixes in dcb's dialect.
  host.write_capture("dcb-pfc-ens1f0np0.txt", "prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off\n");
  host.write_capture("dcb-app-ens1f0np0.txt", "");
  host.write("/sys/kernel/debug/mlx5/0000:18:00.0/cc_params/np_cnp_dscp", "0");
  const auto broken = host.check();
  EXPECT_EQ(fixture::with_status(broken, Status::fail),
            (Set{"roce.pfc.enabled_priorities mlx5_0/1", "roce.trust.dscp mlx5_0/1", "roce.cnp.dscp mlx5_0/1"}));
  EXPECT_EQ(fixture::find_record(broken, "roce.pfc.enabled_priorities", "mlx5_0/1").hint,
            "dcb pfc set dev ens1f0np0 prio-pfc all:off 3:on");
  EXPECT_EQ(fixture::find_record(broken, "roce.trust.dscp", "mlx5_0/1").hint, "dcb app replace dev ens1f0np0 dscp-prio 26:3 48:6");
  EXPECT_EQ(fixture::find_record(broken, "roce.cnp.dscp", "mlx5_0/1").hint,
            "echo 48 > /sys/kernel/debug/mlx5/0000:18:00.0/cc_params/np_cnp_dscp");
}

TEST(Variant, NothingCapturedIsUnverifiedWithReasons) {
  FixtureHost host;
  std::filesystem::remove_all(host.capture());
  std::filesystem::create_directories(host.capture());
  const auto records = host.check();
  expect_valid_records(records);
  EXPECT_EQ(fixture::with_status(records, Status::fail), Set{});
  const CheckRecord pfc = fixture::find_record(records, "roce.pfc.enabled_priorities", "mlx5_0/1");
  EXPECT_EQ(pfc.status, Status::unverified);  // an RDMA host: what cannot be read is not a pass
  EXPECT_NE(pfc.reason.find("dcb-pfc-ens1f0np0.txt"), std::string::npos) << pfc.reason;
  EXPECT_NE(pfc.hint.find("install mlnx-tools for mlnx_qos, or iproute2 >= 5.11 for dcb"), std::string::npos) << pfc.hint;
  EXPECT_EQ(fixture::find_record(records, "gpudirect.acs_disabled", "mlx5_0").status, Status::unverified);
  // Settings sysfs shows are still judged.
  EXPECT_EQ(fixture::find_record(records, "roce.trust.dscp", "mlx5_0/1").status, Status::ok);
}

TEST(Variant, ConfigfsEntryNotCreated) {
  FixtureHost host;
  host.remove("/sys/kernel/config/rdma_cm/mlx5_0");
  const auto records = host.check();
  EXPECT_EQ(fixture::with_status(records, Status::fail), Set{});
  EXPECT_EQ(fixture::with_status(records, Status::warn), (Set{"roce.mode.default mlx5_0/1", "roce.tos.default mlx5_0/1"}));
  EXPECT_NE(fixture::find_record(records, "roce.tos.default", "mlx5_0/1").reason.find("kernel's default"), std::string::npos);
}

TEST(Variant, CountersWarn) {
  FixtureHost host;
  std::string stats = fixture::read_file(host.capture() / "ethtool-S-ens1f1np1.txt");
  stats.replace(stats.find("rx_discards_phy: 0"), std::string("rx_discards_phy: 0").size(), "rx_discards_phy: 1234");
  host.write_capture("ethtool-S-ens1f1np1.txt", stats);
  host.write("/sys/class/infiniband/mlx5_0/ports/1/hw_counters/local_ack_timeout_err", "3");
  const auto records = host.check();
  EXPECT_EQ(fixture::with_status(records, Status::fail), Set{});
  EXPECT_EQ(fixture::with_status(records, Status::warn), (Set{"counters.rx_discards_phy mlx5_1/1", "counters.roce_retransmits mlx5_0/1"}));
}

TEST(Variant, ProfileOverrides) {
  FixtureHost host;
  const Profile pinned = parse_profile(R"({"link": {"rate_gbps": 400}, "rdma": {"firmware": "22.43.2026"}})", "site.json");
  EXPECT_EQ(fixture::with_status(host.check(pinned), Status::fail),
            (Set{"link.rate mlx5_0/1", "link.rate mlx5_1/1", "nic.firmware mlx5_0", "nic.firmware mlx5_1"}));
}

TEST(NoRdma, EmptyHostSaysSo) {
  fixture::TempDir empty;
  const Profile p = load_profile("lossless-roce");
  const auto records = run_checks(read_host(HostFs(empty.path()), ToolSource::none("test"), "bare", {"mlx5_core"}), p);
  expect_valid_records(records);
  const CheckRecord r = fixture::find_record(records, "rdma.device_present", "host");
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.reason.find("no RDMA device"), std::string::npos);
  EXPECT_EQ(fixture::with_status(records, Status::fail),
            (Set{"rdma.device_present host", "kernel.module_loaded host/mlx5_core", "kernel.module_loaded host/mlx5_ib"}));
  EXPECT_EQ(fixture::with_status(records, Status::warn), Set{"host.iommu host"});  // nothing says which mode
  const Profile optional = parse_profile(R"({"rdma": {"required": false, "modules": []}})", "p.json");
  EXPECT_EQ(fixture::with_status(run_checks(read_host(HostFs(empty.path()), ToolSource::none("test"), "bare", {}), optional),
                                 Status::fail),
            Set{});
  // RDMA optional but the modules still listed: absent modules are skipped with the device, not failed.
  const Profile optional_modules = parse_profile(R"({"rdma": {"required": false}})", "p.json");
  const auto skipped = run_checks(read_host(HostFs(empty.path()), ToolSource::none("test"), "bare", {}), optional_modules);
  EXPECT_EQ(fixture::with_status(skipped, Status::fail), Set{});
  EXPECT_EQ(fixture::with_status(skipped, Status::skip),
            (Set{"rdma.device_present host", "kernel.module_loaded host/mlx5_core", "kernel.module_loaded host/mlx5_ib",
                 "gpudirect.peermem_loaded host"}));
}

TEST(Table, GroupedByHostAndDevice) {
  FixtureHost host;
  host.write(kIf0 + "/mtu", "1500");
  std::vector<json> records;
  for (const auto& r : host.check()) records.push_back(to_json(r, "run-1"));
  std::ostringstream out;
  print_table(out, records);
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("== node01 ==\nhost\n", 0), 0u) << text;
  EXPECT_LT(text.find("\nmlx5_0\n"), text.find("\nmlx5_1\n"));
  EXPECT_NE(text.find("  FAIL  link.mtu"), std::string::npos);
  EXPECT_NE(text.find("        fix: ip link set dev ens1f0np0 mtu 4200\n"), std::string::npos);
  EXPECT_NE(text.find("node01: " + std::to_string(records.size()) + " checks, "), std::string::npos);
  EXPECT_NE(text.find(" 2 fail, 0 warn, 0 skip"), std::string::npos) << text;
}

TEST(Variant, IommuModeFromIommuGroups) {
  FixtureHost host;
  host.write("/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro");
  host.write("/sys/kernel/iommu_groups/0/type", "identity");
  EXPECT_EQ(failing(host), Set{});
  host.write("/sys/kernel/iommu_groups/0/type", "DMA-FQ");
  EXPECT_EQ(failing(host), Set{"host.iommu host"});
}
