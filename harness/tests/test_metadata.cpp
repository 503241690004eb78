// The run record's host description read from a fixture tree (netcheck's mlx5-good host plus the
// /proc files the metadata reads), not from the machine running the test.
#include <gtest/gtest.h>

#include "metadata.hpp"
#include "process_util.hpp"

using namespace rocebench;
namespace fs = std::filesystem;

namespace {

fs::path fake_host() {
  const fs::path root = rbtest::temp_dir("metadata") / "root";
  fs::copy(fs::path(ROCEBENCH_SOURCE_DIR) / "netcheck/tests/fixtures/mlx5-good/root", root,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  rbtest::write_file(root / "proc/sys/kernel/ostype", "Linux");
  rbtest::write_file(root / "proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+");
  rbtest::write_file(root / "proc/meminfo", "MemTotal:       2113303548 kB\nMemFree:        2000000000 kB");
  rbtest::write_file(root / "sys/devices/system/cpu/online", "0-55,112-167");
  return root;
}

}  // namespace

TEST(Metadata, DescribesTheHostOfTheTreeItIsGiven) {
  const json host = collect_host_info("node01", HostFs(fake_host()));
  EXPECT_EQ(host["hostname"], "node01");
  EXPECT_EQ(host["kernel"], "Linux 5.15.0-119-generic");
  EXPECT_EQ(host["cpu"], json({{"model", "Intel(R) Xeon(R) Platinum 8480+"}, {"cores", 112}}));
  EXPECT_EQ(host["memory_bytes"], 2113303548LL * 1024);

  const json& rdma = host["rdma"];
  EXPECT_FALSE(rdma.contains("reason")) << rdma.dump();
  ASSERT_EQ(rdma["devices"].size(), 2u) << rdma.dump();
  const json& nic = rdma["devices"][0];
  EXPECT_EQ(nic["name"], "mlx5_0");
  EXPECT_EQ(nic["fw_ver"], "22.41.1000");
  EXPECT_EQ(nic["node_guid"], "0c42:a103:005e:7a10");
  EXPECT_EQ(nic["hca_type"], "MT4125");  // the NIC model: ConnectX-6 Dx
  EXPECT_EQ(nic["board_id"], "MT_0000000359");
  EXPECT_EQ(nic["ports"], json::parse(R"([{"port": 1, "state": "ACTIVE", "link_layer": "Ethernet",
                                            "gid_table_len": 8, "netdev": "ens1f0np0"}])"));

  ASSERT_EQ(host["netdevs"].size(), 2u) << host["netdevs"].dump();
  EXPECT_EQ(host["netdevs"][0], json::parse(R"({"name": "ens1f0np0", "mtu": 9000, "operstate": "up",
                                                "address": "0c:42:a1:5e:7a:10", "speed_mbps": 200000})"));
}

TEST(Metadata, AnEmptyTreeHasNoRdmaDeviceAndSaysWhere) {
  const fs::path root = rbtest::temp_dir("metadata-empty");
  const json host = collect_host_info("bare", HostFs(root));
  EXPECT_EQ(host["kernel"], "");
  EXPECT_EQ(host["memory_bytes"], 0);
  EXPECT_EQ(host["netdevs"], json::array());
  EXPECT_EQ(host["rdma"]["devices"], json::array());
  EXPECT_EQ(host["rdma"]["reason"], "no RDMA device: " + (root / "sys/class/infiniband").string() + " lists none");
}

TEST(Metadata, CpuPressureIsTheKernelsCountOfTimeSomeTaskWaitedForACpu) {
  const fs::path root = rbtest::temp_dir("pressure");
  EXPECT_EQ(cpu_pressure_total_us(HostFs(root)), std::nullopt) << "a kernel without pressure stall information";
  rbtest::write_file(root / "proc/pressure/cpu", "some avg10=86.71 avg60=78.39 avg300=87.56 total=44969113208\n"
                                                 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  EXPECT_EQ(cpu_pressure_total_us(HostFs(root)), 44969113208u);
  rbtest::write_file(root / "proc/pressure/cpu", "some avg10=1.00 total=\n");
  EXPECT_EQ(cpu_pressure_total_us(HostFs(root)), std::nullopt);
  rbtest::write_file(root / "proc/pressure/cpu", "full avg10=0.00 total=5\n");
  EXPECT_EQ(cpu_pressure_total_us(HostFs(root)), std::nullopt) << "only 'some' counts a task waiting";
}
