// NIC counters on a fixture sysfs tree, and the ethtool pause-frame parser.
#include <gtest/gtest.h>

#include <fstream>

#include "process_util.hpp"
#include "rocebench/microbench/counters.hpp"

using namespace rocebench::microbench;
namespace fs = std::filesystem;

using rbtest::write_file;

TEST(Counters, DeltasOfPortAndHwCountersAroundAProbe) {
  const fs::path root = rbtest::temp_dir("counters");
  const fs::path port = root / "sys/class/infiniband/mlx5_0/ports/1";
  write_file(port / "counters/port_xmit_data", "1000");
  write_file(port / "hw_counters/out_of_buffer", "7");
  write_file(port / "hw_counters/np_cnp_sent", "0");
  write_file(port / "hw_counters/rp_cnp_handled", "3");
  write_file(port / "hw_counters/lifespan", "not-a-number");  // skipped, not fatal
  const CounterSnapshot before = read_counters(root, "mlx5_0", 1);
  EXPECT_EQ(before.size(), 4u);
  EXPECT_EQ(before.at("out_of_buffer"), 7u);

  write_file(port / "counters/port_xmit_data", "251000");
  write_file(port / "hw_counters/np_cnp_sent", "12");
  write_file(port / "hw_counters/rp_cnp_handled", "1");  // went back (reset): no delta
  const auto d = counter_deltas(before, read_counters(root, "mlx5_0", 1));
  EXPECT_EQ(d["nic_port_xmit_data"], 250000);
  EXPECT_EQ(d["nic_np_cnp_sent"], 12);
  EXPECT_EQ(d["nic_out_of_buffer"], 0);
  EXPECT_FALSE(d.contains("nic_rp_cnp_handled"));
  EXPECT_TRUE(read_counters(root, "mlx5_9", 1).empty());
  fs::remove_all(root);
}

TEST(Counters, EthtoolPauseFramesPerPriority) {
  const std::string text =
      "NIC statistics:\n     rx_packets: 12\n     rx_prio3_pause: 42\n     tx_prio3_pause: 7\n"
      "     rx_prio3_pause_duration: 99\n     tx_prio0_pause: 0\n";
  const auto c = parse_ethtool_pause(text);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.at("rx_prio3_pause"), 42u);
  EXPECT_EQ(c.at("tx_prio3_pause"), 7u);
  EXPECT_EQ(c.at("tx_prio0_pause"), 0u);
}
