// The checks on a soft-RoCE host: rxe0 on eth0 of the bed's host0 (ci/testbeds/softroce, `guest.sh run
// --hosts 1`), saved there with `rocebench netcheck --save-capture` (fixtures/rxe-bed; the GID table's zero
// slots past index 3 left out). What applies to rxe is judged; the NIC QoS it does not have is skipped
// with its reason, never unverified; its module and counters are its own driver's.
#include <gtest/gtest.h>

#include "fixture_host.hpp"

using namespace rocebench;
using namespace rocebench::netcheck;
using Set = std::set<std::string>;

namespace {

const std::string kPort = "rxe0/1";
const Set kQosChecks{"roce.trust.dscp", "roce.pfc.enabled_priorities", "roce.dscp.priority_map", "roce.ecn.np_enabled",
                     "roce.ecn.rp_enabled", "roce.cnp.dscp", "roce.cnp.prio"};
const std::string kCounters = "/sys/class/infiniband/rxe0/ports/1/hw_counters/";

// Git keeps no empty folder: the two the guest had empty (no IOMMU groups; rdma_rxe's module folder as
// saved) are made again here.
class RxeHost : public fixture::FixtureHost {
 public:
  RxeHost() : FixtureHost("rxe-bed") {
    for (const char* empty : {"sys/kernel/iommu_groups", "sys/module/rdma_rxe"}) std::filesystem::create_directories(root() / empty);
  }
};

Set checks_with_status(const std::vector<CheckRecord>& records, Status status) { return fixture::with_status(records, status); }

}  // namespace

TEST(RxeHost, ReadsTheSoftRoceDevice) {
  const HostState h = RxeHost().state();
  ASSERT_EQ(h.devices.size(), 1u);
  const RdmaDevice& d = h.devices[0];
  EXPECT_EQ(d.name, "rxe0");
  EXPECT_EQ(d.driver.name, "rxe");
  EXPECT_TRUE(d.driver.known);
  EXPECT_NE(d.driver.found_by.find("/sys/class/infiniband/rxe0/parent (rxe's) names eth0"), std::string::npos) << d.driver.found_by;
  EXPECT_TRUE(d.pci_address.empty());  // no PCI function of its own
  ASSERT_TRUE(d.netdev);
  EXPECT_EQ(d.netdev->name, "eth0");  // from the GID table: rxe has no device/net
  EXPECT_EQ(d.netdev->mtu, 4200);
  ASSERT_EQ(d.ports.size(), 1u);
  EXPECT_EQ(d.ports[0].gids.size(), 2u);
  EXPECT_EQ(d.ports[0].gids[1].type, "RoCE v2");
  EXPECT_EQ(d.ports[0].gids[1].gid, "0000:0000:0000:0000:0000:ffff:0a4e:0001");  // 10.78.0.1
  EXPECT_EQ(d.ports[0].roce_tos.value, 106);
  EXPECT_TRUE(d.ports[0].counters.count("hw_counters/completer_retry_err"));
  EXPECT_TRUE(h.modules.count("rdma_rxe"));
  EXPECT_FALSE(d.netdev->qos.pfc.value || !d.netdev->qos.pfc.missing.empty());  // NIC QoS tools not even asked
  EXPECT_TRUE(d.netdev->qos.ethtool_stats.value);
}

TEST(RxeHost, JudgedWhereItAppliesSkippedWhereNot) {
  const auto records = RxeHost().check();
  EXPECT_EQ(checks_with_status(records, Status::fail), Set{});
  EXPECT_EQ(checks_with_status(records, Status::unverified), Set{});
  EXPECT_EQ(checks_with_status(records, Status::warn), Set{});
  Set skipped;
  for (const auto& check : kQosChecks) {
    const CheckRecord r = fixture::find_record(records, check, kPort);
    EXPECT_EQ(r.status, Status::skip) << check;
    EXPECT_EQ(r.reason.rfind("rxe (soft-RoCE) has no NIC QoS", 0), 0u) << check << ": " << r.reason;
    EXPECT_NE(r.reason.find("rxe0's driver rxe"), std::string::npos) << r.reason;
    skipped.insert(check + " " + kPort);
  }
  // Besides those, only what no GPU, no NCCL setting and virtio's ethtool counters leave out.
  skipped.insert({"gpudirect.peermem_loaded host", "gpudirect.acs_disabled rxe0", "nccl.env host", "counters.rx_discards_phy rxe0/1"});
  EXPECT_EQ(checks_with_status(records, Status::skip), skipped);
  for (const auto& [check, subject] : std::vector<std::pair<std::string, std::string>>{
           {"kernel.module_loaded", "host/rdma_rxe"}, {"roce.gid.v2_present", kPort}, {"link.mtu", kPort},
           {"link.active_mtu", kPort}, {"link.state", kPort}, {"roce.mode.default", kPort}, {"roce.tos.default", kPort},
           {"counters.roce_retransmits", kPort}}) {
    EXPECT_EQ(fixture::find_record(records, check, subject).status, Status::ok) << check << " " << subject;
  }
  // The profile's mlx5 modules are not asked of a host whose RDMA device is rxe.
  for (const auto& r : records) EXPECT_NE(r.subject.rfind("host/mlx5", 0), 0u) << r.check << " " << r.subject;
  EXPECT_EQ(fixture::find_record(records, "roce.gid.v2_present", kPort).observed, (json{{"RoCE v2", {0, 1}}}));
}

TEST(RxeHost, ItsOwnModuleIsExpected) {
  RxeHost host;
  host.remove("/sys/module/rdma_rxe");
  const auto records = host.check();
  EXPECT_EQ(checks_with_status(records, Status::fail), Set{"kernel.module_loaded host/rdma_rxe"});
  const CheckRecord r = fixture::find_record(records, "kernel.module_loaded", "host/rdma_rxe");
  EXPECT_EQ(r.hint, "modprobe rdma_rxe");
  EXPECT_NE(r.reason.find("rxe0's driver is rxe"), std::string::npos) << r.reason;
}

TEST(RxeHost, RetriesAreCountedUnderTheSharedNames) {
  RxeHost host;
  host.write(kCounters + "completer_retry_err", "5");
  host.write(kCounters + "rcvd_seq_err", "2");
  const auto records = host.check();
  const CheckRecord r = fixture::find_record(records, "counters.roce_retransmits", kPort);
  EXPECT_EQ(r.status, Status::warn);
  EXPECT_EQ(r.observed, (json{{"ack_timeouts", 5}, {"seq_errors_rx", 0}, {"seq_naks_rx", 2}}));
  EXPECT_NE(r.reason.find("ack_timeouts = hw_counters/completer_retry_err"), std::string::npos) << r.reason;
}

TEST(RxeHost, SmallMtuFailsWithTheFix) {
  RxeHost host;
  host.write("/sys/class/net/eth0/mtu", "1500");
  const auto records = host.check();
  EXPECT_EQ(checks_with_status(records, Status::fail), (Set{"link.mtu rxe0/1", "link.active_mtu rxe0/1"}));
  EXPECT_EQ(fixture::find_record(records, "link.mtu", kPort).hint, "ip link set dev eth0 mtu 4200");
}

TEST(RxeHost, ConfigfsNotMountedIsSaid) {
  RxeHost host;
  host.remove("/sys/kernel/config/rdma_cm");
  const auto records = host.check();
  EXPECT_EQ(checks_with_status(records, Status::warn), (Set{"roce.mode.default rxe0/1", "roce.tos.default rxe0/1"}));
  const std::string why = fixture::find_record(records, "roce.tos.default", kPort).reason;
  EXPECT_NE(why.find("configfs is not mounted at /sys/kernel/config (mount -t configfs none /sys/kernel/config)"),
            std::string::npos) << why;
  std::filesystem::create_directories(host.root() / "sys/kernel/config/rdma_cm");
  const std::string no_folder = fixture::find_record(host.check(), "roce.tos.default", kPort).reason;
  EXPECT_NE(no_folder.find("no /sys/kernel/config/rdma_cm/rxe0: rdma_cm uses the kernel's default"), std::string::npos) << no_folder;
}

TEST(DriverTable, QosAndModulesDeclaredPerDriver) {
  // mlx5 keeps its NIC QoS checks (GoodHost.EveryCheckPasses judges them); rxe declares why it has none.
  ASSERT_NE(known_driver("mlx5"), nullptr);
  EXPECT_TRUE(known_driver("mlx5")->no_nic_qos.empty());
  EXPECT_EQ(known_driver("rxe")->modules, std::vector<std::string_view>{"rdma_rxe"});
  EXPECT_FALSE(known_driver("rxe")->no_nic_qos.empty());
  EXPECT_EQ(known_driver("no-such-driver"), nullptr);
}
