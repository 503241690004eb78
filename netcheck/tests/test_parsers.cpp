// Parsers of tool outputs and sysfs text, on outputs in the formats the tools print.
#include <gtest/gtest.h>

#include "rocebench/netcheck/host_state.hpp"
#include "rocebench/netcheck/parsers.hpp"

using namespace rocebench::netcheck;

TEST(DcbPfc, EnabledPrioritiesFromShow) {
  // dcb-pfc(8), "Show what was set".
  const auto pfc = parse_dcb_pfc("pfc-cap 8 macsec-bypass off delay 4096\nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:on 7:on\n");
  ASSERT_TRUE(pfc);
  EXPECT_EQ(*pfc, (std::vector<int>{6, 7}));
  EXPECT_EQ(*parse_dcb_pfc("prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off"), std::vector<int>{});
}

TEST(DcbPfc, WithStatisticsAndGarbage) {
  const auto pfc = parse_dcb_pfc(
      "pfc-cap 8 macsec-bypass off delay 7\nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"
      "requests 0:0 1:0 2:0 3:1234 4:0 5:0 6:0 7:0\nindications 0:0 1:0 2:0 3:98 4:0 5:0 6:0 7:0\n");
  ASSERT_TRUE(pfc);
  EXPECT_EQ(*pfc, std::vector<int>{3});
  EXPECT_FALSE(parse_dcb_pfc("Error: Attribute not supported\n"));
  EXPECT_FALSE(parse_dcb_pfc("prio-pfc 3:maybe"));
  EXPECT_FALSE(parse_dcb_pfc("prio-pfc 9:on"));
}

TEST(DcbApp, NumericAndSymbolicDscp) {
  // dcb-app(8): the same table printed with names and with -N.
  const auto named = parse_dcb_app_dscp("dscp-prio 0:0 CS3:2 CS3:3 CS6:6\n");
  const auto numeric = parse_dcb_app_dscp("dscp-prio 0:0 24:2 24:3 48:6\n");
  ASSERT_TRUE(named);
  ASSERT_TRUE(numeric);
  EXPECT_EQ(*named, *numeric);
  EXPECT_EQ(numeric->at(24), (std::vector<int>{2, 3}));
  EXPECT_EQ(parse_dcb_app_dscp("dscp-prio AF31:3 EF:5")->at(26), std::vector<int>{3});
  EXPECT_EQ(parse_dcb_app_dscp("dscp-prio AF31:3 EF:5")->at(46), std::vector<int>{5});
  // dcb prints nothing for an empty table.
  ASSERT_TRUE(parse_dcb_app_dscp(""));
  EXPECT_TRUE(parse_dcb_app_dscp("")->empty());
  EXPECT_FALSE(parse_dcb_app_dscp("dscp-prio 26:9"));
  EXPECT_FALSE(parse_dcb_app_dscp("Error: Failed to get APP table\n"));
}

TEST(DscpNames, RfcNames) {
  EXPECT_EQ(parse_dscp_name("CS0"), 0);
  EXPECT_EQ(parse_dscp_name("cs6"), 48);
  EXPECT_EQ(parse_dscp_name("AF11"), 10);
  EXPECT_EQ(parse_dscp_name("AF43"), 38);
  EXPECT_EQ(parse_dscp_name("EF"), 46);
  EXPECT_EQ(parse_dscp_name("0x68"), 26);  // a whole DS field
  EXPECT_EQ(parse_dscp_name("63"), 63);
  EXPECT_FALSE(parse_dscp_name("64"));
  EXPECT_FALSE(parse_dscp_name("AF51"));
  EXPECT_FALSE(parse_dscp_name("CS8"));
}

TEST(MlnxQos, CurrentFormat) {
  const std::string text =
      "DCBX mode: OS controlled\n"
      "Priority trust state: dscp\n"
      "dscp2prio mapping:\n"
      "\tprio:0 dscp:07,06,05,04,03,02,01,00,\n"
      "\tprio:3 dscp:31,30,29,28,27,26,25,24,\n"
      "\tprio:6 dscp:55,54,53,52,51,50,49,48,\n"
      "default priority:\n"
      "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=1048320\n"
      "Cable len: 7\n"
      "PFC configuration:\n"
      "\tpriority    0   1   2   3   4   5   6   7\n"
      "\tenabled     0   0   0   1   0   0   0   0   \n"
      "\tbuffer      0   0   0   1   0   0   0   0   \n"
      "tc: 0 ratelimit: unlimited, tsa: vendor\n"
      "\t priority:  1\n"
      "tc: 3 ratelimit: unlimited, tsa: vendor\n"
      "\t priority:  3\n";
  const MlnxQos q = parse_mlnx_qos(text);
  EXPECT_EQ(q.trust, "dscp");
  ASSERT_TRUE(q.pfc);
  EXPECT_EQ(*q.pfc, std::vector<int>{3});
  ASSERT_TRUE(q.dscp2prio);
  EXPECT_EQ(q.dscp2prio->at(26), std::vector<int>{3});
  EXPECT_EQ(q.dscp2prio->at(48), std::vector<int>{6});
  EXPECT_EQ(q.dscp2prio->count(40), 0u);
}

TEST(MlnxQos, OlderFormatPcpTrustAndWrappedLists) {
  // MLNX_OFED 4.x: no tabs, several priorities enabled, no buffer row; a long DSCP list wraps.
  const std::string text =
      "DCBX mode: OS controlled\nPriority trust state: pcp\nCable len: 10\nPFC configuration:\n"
      "priority 0 1 2 3 4 5 6 7\nenabled 1 0 1 0 0 0 1 1\n\ntc: 0 ratelimit: unlimited, tsa: ets, bw: 10%\n"
      "\tprio:2 dscp:23,22,21,20,19,18,17,16,\n\tprio:2 dscp:26,\n";
  const MlnxQos q = parse_mlnx_qos(text);
  EXPECT_EQ(q.trust, "pcp");
  EXPECT_EQ(*q.pfc, (std::vector<int>{0, 2, 6, 7}));
  EXPECT_EQ(q.dscp2prio->at(26), std::vector<int>{2});
  EXPECT_FALSE(parse_mlnx_qos("Priority trust state is not supported on your system\n").trust);
}

TEST(SysfsDscp2Prio, HeaderThenPairs) {
  const auto map = parse_sysfs_dscp2prio("dscp: prio\n0 0\n26 3\n48 6\n");
  ASSERT_TRUE(map);
  EXPECT_EQ(map->at(26), std::vector<int>{3});
  EXPECT_EQ(parse_sysfs_dscp2prio("dscp: prio\n26: 3\n")->at(26), std::vector<int>{3});
  EXPECT_FALSE(parse_sysfs_dscp2prio("dscp: prio\n"));
  EXPECT_FALSE(parse_sysfs_dscp2prio("dscp: prio\n70 3\n"));
}

TEST(Ethtool, Statistics) {
  const auto stats = parse_ethtool_stats(
      "NIC statistics:\n     rx_packets: 3920311\n     rx_discards_phy: 17\n     rx_prio3_pause: 12\n     tx_queue_0: 5\n");
  EXPECT_EQ(stats.at("rx_discards_phy"), 17);
  EXPECT_EQ(stats.at("rx_prio3_pause"), 12);
  EXPECT_EQ(stats.count("NIC statistics"), 0u);
  EXPECT_EQ(stats.size(), 4u);
}

TEST(Lspci, AcsControlPerFunction) {
  const std::string text =
      "0000:17:00.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])\n"
      "\tCapabilities: [148 v1] Access Control Services\n"
      "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+\n"
      "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n\n"
      "17:01.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)\n"
      "\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\n\n"
      "0000:16:00.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)\n"
      "\tCapabilities: [68] Express (v2) Upstream Port, MSI 00\n\n"
      "0000:15:01.0 PCI bridge: Intel Corporation Root Port\n"
      "\tCapabilities: <access denied>\n";
  const AcsMap acs = parse_lspci_acs(text);
  EXPECT_EQ(acs.at("0000:17:00.0"), true);  // SrcValid+ in ACSCtl, not ACSCap
  EXPECT_EQ(acs.at("0000:17:01.0"), false);
  EXPECT_EQ(acs.at("0000:16:00.0"), false);  // no ACS capability
  EXPECT_EQ(acs.at("0000:15:01.0"), std::nullopt);
}

TEST(ConfigSpace, AcsExtendedCapability) {
  std::string config(4096, '\0');
  auto put16 = [&](std::size_t at, unsigned v) {
    config[at] = static_cast<char>(v & 0xff);
    config[at + 1] = static_cast<char>(v >> 8);
  };
  // 0x100: AER (id 1) -> next 0x148; 0x148: ACS (id 0xd), control at +6.
  put16(0x100, 0x0001);
  put16(0x102, 0x148 << 4 | 1);
  put16(0x148, 0x000d);
  put16(0x14a, 0x000 << 4 | 1);
  put16(0x14e, 0x001d);  // SrcValid + ReqRedir + CmpltRedir + UpstreamFwd
  EXPECT_EQ(acs_from_config(config), true);
  put16(0x14e, 0x0000);
  EXPECT_EQ(acs_from_config(config), false);
  EXPECT_EQ(acs_from_config(config.substr(0, 256)), std::nullopt);  // non-root reads stop at 256 bytes
  put16(0x148, 0x0002);
  EXPECT_EQ(acs_from_config(config), false);  // no ACS capability at all
}

TEST(Sysfs, PortTextAndRate) {
  EXPECT_EQ(after_colon("4: ACTIVE"), "ACTIVE");
  EXPECT_EQ(after_colon("5: LinkUp"), "LinkUp");
  EXPECT_EQ(parse_rate_gbps("200 Gb/sec (4X HDR)"), 200.0);
  EXPECT_EQ(parse_rate_gbps("2.5 Gb/sec (1X SDR)"), 2.5);
  EXPECT_FALSE(parse_rate_gbps("invalid"));
}

TEST(RoceMtu, AsTheKernelDerivesIt) {
  EXPECT_EQ(roce_active_mtu(9000), 4096);
  EXPECT_EQ(roce_active_mtu(4200), 4096);
  EXPECT_EQ(roce_active_mtu(4191), 2048);
  EXPECT_EQ(roce_active_mtu(1500), 1024);
  EXPECT_EQ(roce_active_mtu(576), 256);
}

TEST(PciPath, FunctionsBetweenNicAndGpu) {
  const std::vector<std::string> nic{"0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"};
  const std::vector<std::string> gpu{"0000:15:01.0", "0000:16:00.0", "0000:17:01.0", "0000:19:00.0"};
  EXPECT_EQ(path_between(nic, gpu), (std::vector<std::string>{"0000:16:00.0", "0000:17:00.0", "0000:17:01.0"}));
  // Under different root ports: every bridge up to the root complex.
  const std::vector<std::string> far{"0000:a0:01.0", "0000:a1:00.0"};
  EXPECT_EQ(path_between(nic, far), (std::vector<std::string>{"0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:a0:01.0"}));
  EXPECT_EQ(pci_chain("/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0"),
            (std::vector<std::string>{"0000:15:01.0", "0000:16:00.0"}));
}

// fuzz_netcheck: a "prio:" line whose second word is not "dscp:..." threw std::out_of_range.
TEST(MlnxQos, APrioLineWithoutItsDscpListIsIgnored) {
  const auto q = parse_mlnx_qos("DSCP2prio mapping:\n  prio:3 x dscp:\n  prio:4 dscp:32,33,\n");
  ASSERT_TRUE(q.dscp2prio);
  EXPECT_NO_THROW(parse_mlnx_qos("prio:3 xy dscp:\n"));
  EXPECT_NO_THROW(parse_mlnx_qos("prio:3 dscp:\n"));
}
