#pragma once
// What can be known about RDMA devices without opening one: devices, ports and GID tables read
// from sysfs under a root prefix (so tests run on fixture trees), and the RoCE v2 GID choice.
// Shared by the verbs probes (microbench) and the ring transport (mesh.hpp).
#include <string>
#include <vector>

namespace rocebench::verbs {

struct GidEntry {
  int index = 0;
  std::string gid;     // as sysfs prints it: fe80:0000:...
  std::string type;    // "RoCE v2", "IB/RoCE v1", empty when unused
  std::string netdev;  // gid_attrs/ndevs
};

// Device names under <root>/sys/class/infiniband, sorted.
std::vector<std::string> list_devices(const std::string& root);
// Port numbers of a device.
std::vector<int> list_ports(const std::string& root, const std::string& device);
// The GIDs in use (non-zero, with a type) of a port, by index.
std::vector<GidEntry> read_gids(const std::string& root, const std::string& device, int port);
// The sysfs GID string of an IPv4 address (::ffff:a.b.c.d) or an IPv6 address; empty when not an IP.
std::string gid_of_ip(const std::string& ip);
// The GID index to use. Explicit index: must be in use (InputError listing those that are).
// Automatic: the RoCE v2 GID carrying `ip`, else, with no ip, the first RoCE v2 GID.
int choose_gid(const std::vector<GidEntry>& gids, int requested, const std::string& ip);

// Device and port checked against what exists; throws InputError listing what does.
void check_device_port(const std::string& root, const std::string& device, int port);

}  // namespace rocebench::verbs
