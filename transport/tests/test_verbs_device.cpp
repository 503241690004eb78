// GID choice and device checks on a fixture sysfs tree shaped like a real host's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "process_util.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/transport/verbs/device.hpp"

using namespace rocebench;
using namespace rocebench::verbs;
namespace fs = std::filesystem;

namespace {

using rbtest::write_file;

// mlx5_0 port 1: GIDs 0/1 link-local (v1, v2), 2/3 for 192.168.1.10 (v1, v2), 4 for 10.0.0.7 (v2),
// 5 unused (zeros, no type: reading the type fails on a real host, here the file is absent).
fs::path fixture() {
  const fs::path root = rbtest::temp_dir("gid");
  const fs::path port = root / "sys/class/infiniband/mlx5_0/ports/1";
  const std::vector<std::tuple<int, std::string, std::string>> gids{
      {0, "fe80:0000:0000:0000:0a5c:19ff:fe3a:1b2c", "IB/RoCE v1"},
      {1, "fe80:0000:0000:0000:0a5c:19ff:fe3a:1b2c", "RoCE v2"},
      {2, "0000:0000:0000:0000:0000:ffff:c0a8:010a", "IB/RoCE v1"},
      {3, "0000:0000:0000:0000:0000:ffff:c0a8:010a", "RoCE v2"},
      {4, "0000:0000:0000:0000:0000:ffff:0a00:0007", "RoCE v2"}};
  for (const auto& [i, gid, type] : gids) {
    write_file(port / "gids" / std::to_string(i), gid);
    write_file(port / "gid_attrs/types" / std::to_string(i), type);
    write_file(port / "gid_attrs/ndevs" / std::to_string(i), "ens1f0np0");
  }
  write_file(port / "gids/5", "0000:0000:0000:0000:0000:0000:0000:0000");
  fs::create_directories(root / "sys/class/infiniband/mlx5_1/ports/1");
  return root;
}

}  // namespace

TEST(Gid, IpMapsToTheSysfsSpelling) {
  EXPECT_EQ(gid_of_ip("192.168.1.10"), "0000:0000:0000:0000:0000:ffff:c0a8:010a");
  EXPECT_EQ(gid_of_ip("fe80::a5c:19ff:fe3a:1b2c"), "fe80:0000:0000:0000:0a5c:19ff:fe3a:1b2c");
  EXPECT_EQ(gid_of_ip("not-an-ip"), "");
}

TEST(Gid, ReadsOnlyGidsInUse) {
  const fs::path root = fixture();
  const auto gids = read_gids(root, "mlx5_0", 1);
  ASSERT_EQ(gids.size(), 5u);
  EXPECT_EQ(gids[3].index, 3);
  EXPECT_EQ(gids[3].type, "RoCE v2");
  EXPECT_EQ(gids[3].netdev, "ens1f0np0");
  fs::remove_all(root);
}

TEST(Gid, ChoosesTheRoceV2GidCarryingTheAddress) {
  const fs::path root = fixture();
  const auto gids = read_gids(root, "mlx5_0", 1);
  EXPECT_EQ(choose_gid(gids, -1, "192.168.1.10"), 3);  // not 2, the v1 one with the same value
  EXPECT_EQ(choose_gid(gids, -1, "10.0.0.7"), 4);
  EXPECT_EQ(choose_gid(gids, -1, ""), 1);  // no address: the first RoCE v2 GID
  EXPECT_EQ(choose_gid(gids, 2, "192.168.1.10"), 2);  // an explicit index wins
  try {
    choose_gid(gids, -1, "172.16.0.1");
    FAIL() << "an address no GID carries must be an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no RoCE v2 GID carries 172.16.0.1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 (RoCE v2 0000:0000:0000:0000:0000:ffff:c0a8:010a on ens1f0np0)"),
              std::string::npos) << e.what();
  }
  try {
    choose_gid(gids, 5, "");
    FAIL() << "an unused index must be an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GID index 5 is not in use"), std::string::npos) << e.what();
  }
  fs::remove_all(root);
}

TEST(Gid, UnknownDeviceOrPortListsWhatExists) {
  const fs::path root = fixture();
  EXPECT_NO_THROW(check_device_port(root, "mlx5_0", 1));
  try {
    check_device_port(root, "mlx5_7", 1);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("this host has: mlx5_0, mlx5_1"), std::string::npos) << e.what();
  }
  try {
    check_device_port(root, "mlx5_0", 2);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("it has: 1"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(list_devices(root / "nowhere").empty());
  fs::remove_all(root);
}
