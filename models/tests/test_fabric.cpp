// The fabric model: its file (schema, defaults, errors at file:line:field), the built-ins, and each
// sync mode's allreduce time against values computed by hand.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/models/fabric.hpp"

namespace rocebench::models {
namespace {

// 4 GPUs a node at 10 GB/s and 2 µs a step inside; one 80 Gbit/s (10 GB/s) NIC a node, 5 µs a step:
// β is 1e-7 ms a byte at both levels.
std::string fabric_text(const std::string& more_inter = "", const std::string& more_top = "") {
  return fmt::format(R"({{
  "name": "test",{}
  "gpus_per_node": 4,
  "intra_node": {{"bandwidth_GBps": 10, "latency_us": 2, "source": "by hand"}},
  "inter_node": {{"nic_Gbps": 80, "latency_us": 5, "source": "by hand"{}}}
}})",
                     more_top, more_inter);
}

Fabric test_fabric(const std::string& more_inter = "", const std::string& more_top = "") {
  return parse_fabric(fabric_text(more_inter, more_top), "test.json");
}

std::string error_of(const std::string& text) {
  try {
    parse_fabric(text, "f.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

double ms(const Fabric& f, SyncMode mode, int ranks, std::size_t bytes) {
  return allreduce_ms(f, mode, place(f, ranks, "--world-sizes"), bytes);
}

constexpr std::size_t kMB = 1000000;

TEST(Fabric, OptionalFieldsTakeTheSchemasDefaultsAndTheRecordKeepsThem) {
  const Fabric f = test_fabric();
  EXPECT_EQ(f.rails, 1);
  EXPECT_EQ(f.ps_servers, 1);
  EXPECT_EQ(f.inter_share, 1);
  EXPECT_EQ(f.spine_oversubscription, 1);
  EXPECT_EQ(f.document["inter_node"]["rails"], 1);
  EXPECT_EQ(f.document["intra_node"]["achievable_share"], 1);
  EXPECT_EQ(f.document["inter_node"]["source"], "by hand");
}

TEST(Fabric, BadFilesAreRefusedAtTheirLineAndField) {
  EXPECT_EQ(error_of(fabric_text(",\n\"rials\": 8")), "f.json:6: field 'inter_node.rials': is not a known field");
  const std::string wrong_type = error_of(R"({"name": "x", "gpus_per_node": 8,
"intra_node": {"bandwidth_GBps": "fast", "latency_us": 1, "source": "s"},
"inter_node": {"nic_Gbps": 25, "latency_us": 1, "source": "s"}})");
  EXPECT_EQ(wrong_type.rfind("f.json:2: field 'intra_node.bandwidth_GBps': expected number", 0), 0u) << wrong_type;
  const std::string no_source = error_of(R"({"name": "x", "gpus_per_node": 8,
"intra_node": {"bandwidth_GBps": 10, "latency_us": 1, "source": "s"},
"inter_node": {"nic_Gbps": 25, "latency_us": 1}})");
  EXPECT_EQ(no_source, "f.json:3: field 'inter_node.source': is required but missing") << no_source;
  EXPECT_NE(error_of(fabric_text(",\n\"nic_Gbps\": 0")).find("field 'inter_node.nic_Gbps'"), std::string::npos);
  EXPECT_NE(error_of("{\"name\": \"x\",").find("f.json:1: column"), std::string::npos);
  try {
    load_fabric("9g-carrier-pigeon");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("neither a built-in one (100g-roce, 25g-roce, 400g-roce) nor a file"), std::string::npos)
        << e.what();
  }
}

TEST(Fabric, BuiltInsHaveEightGpusANodeAndNameTheirSources) {
  EXPECT_EQ(builtin_fabrics(), (std::vector<std::string>{"100g-roce", "25g-roce", "400g-roce"}));
  for (const std::string& name : builtin_fabrics()) {
    const Fabric f = load_fabric(name);
    EXPECT_EQ(f.name, name);
    EXPECT_EQ(f.gpus_per_node, 8) << name;
    EXPECT_EQ(f.file, "models/fabrics/" + name + ".json");
    for (const char* block : {"intra_node", "inter_node"})
      EXPECT_FALSE(f.document[block]["source"].get<std::string>().empty()) << name << " " << block;
  }
  EXPECT_DOUBLE_EQ(load_fabric("25g-roce").nic_Gbps, 25);
  EXPECT_EQ(load_fabric("400g-roce").rails, 8);
}

TEST(Fabric, RanksFillNodesAndPartNodesAboveOneAreRefusedNamingTheFlag) {
  const Fabric f = test_fabric();
  const Placement three = place(f, 3, "--world-sizes");
  EXPECT_EQ(three.nodes, 1);
  EXPECT_EQ(three.per_node, 3);
  const Placement eight = place(f, 8, "--world-sizes");
  EXPECT_EQ(eight.nodes, 2);
  EXPECT_EQ(eight.per_node, 4);
  try {
    place(f, 6, "--world-sizes");
    ADD_FAILURE() << "6 ranks on nodes of 4 placed";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--world-sizes: 6 ranks are not whole nodes of fabric 'test' (4 GPUs a node)", 0), 0u)
        << e.what();
  }
}

TEST(Fabric, SyncModesAreReadFromAListAndAnUnknownOneIsNamed) {
  EXPECT_EQ(parse_sync_modes("ps,ring,ps", "--sync"), (std::vector<SyncMode>{SyncMode::ps, SyncMode::ring}));
  EXPECT_THROW(parse_sync_modes("ring,", "--sync"), InputError);
  try {
    parse_sync_modes("ring,butterfly", "--sync");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--sync: unknown sync mode 'butterfly' (one or more of ring, hier, tree, ps, rd)");
  }
}

TEST(AllreduceCost, OneRankCostsNothing) {
  const Fabric f = test_fabric();
  for (SyncMode mode : all_sync_modes()) EXPECT_EQ(ms(f, mode, 1, 100 * kMB), 0) << to_string(mode);
}

TEST(AllreduceCost, EachModeAgainstHandComputedValues) {
  const Fabric f = test_fabric();
  // One node of 4: 2·3 steps of (2 µs + 250 kB at 10 GB/s).
  EXPECT_NEAR(ms(f, SyncMode::ring, 4, kMB), 6 * (0.002 + 0.025), 1e-12);
  EXPECT_NEAR(ms(f, SyncMode::hier, 4, kMB), 6 * (0.002 + 0.025), 1e-12);  // one node: the ring inside it
  // Two nodes of 4: 14 steps of 125 kB, the NIC's step (5 µs + 12.5 µs) the slower.
  EXPECT_NEAR(ms(f, SyncMode::ring, 8, kMB), 14 * (0.005 + 0.0125), 1e-12);
  // Inside: 2·3 steps of 250 kB; across: 2·1 steps of 500 kB through the node's NIC.
  EXPECT_NEAR(ms(f, SyncMode::hier, 8, kMB), 6 * (0.002 + 0.025) + 2 * (0.005 + 0.05), 1e-12);
  // NCCL's tree: 2(3·2 µs + log2(2)·5 µs) + 2 · 1 MB at 10 GB/s.
  EXPECT_NEAR(ms(f, SyncMode::tree, 8, kMB), 2 * (3 * 0.002 + 0.005) + 0.2, 1e-12);
  // One server: its node's 3 others send it 3 MB inside (0.302 ms); the other node's 4 ranks send it
  // 4 MB through one NIC (0.405 ms, the slower); push and pull.
  EXPECT_NEAR(ms(f, SyncMode::ps, 8, kMB), 2 * (0.005 + 0.4), 1e-12);
  // Recursive doubling: two exchanges inside the node, one across with the 4 ranks' whole buffers.
  EXPECT_NEAR(ms(f, SyncMode::rd, 8, kMB), 2 * (0.002 + 0.1) + (0.005 + 0.4), 1e-12);
  // 3 ranks: the power of two 2 exchange once; the third folds in before and gets its result after.
  EXPECT_NEAR(ms(f, SyncMode::rd, 3, kMB), 3 * (0.002 + 0.1), 1e-12);
}

// Without start-up costs a ring moves 2(n-1)/n of the buffer through its slowest link (bus bytes).
TEST(AllreduceCost, RingMovesBusBytesOverTheSlowestLink) {
  const Fabric f = parse_fabric(R"({"name": "no-latency", "gpus_per_node": 8,
    "intra_node": {"bandwidth_GBps": 100, "latency_us": 0, "source": "s"},
    "inter_node": {"nic_Gbps": 100, "latency_us": 0, "source": "s"}})", "f.json");
  for (int n : {2, 4, 8, 16, 64, 1024}) {
    const double slowest_beta = n <= 8 ? intra_cost(f).beta_ms_per_byte : node_cost(f, n / 8).beta_ms_per_byte;
    EXPECT_NEAR(ms(f, SyncMode::ring, n, 64 * kMB) / slowest_beta, 2.0 * (n - 1) / n * 64 * kMB, 1e-3) << n;
  }
}

TEST(AllreduceCost, MoreParameterServersCostLess) {
  for (int servers : {1, 2, 4, 8, 16, 32}) {
    const Fabric fewer = test_fabric("", fmt::format("\n  \"ps_servers\": {},", servers));
    const Fabric more = test_fabric("", fmt::format("\n  \"ps_servers\": {},", servers * 2));
    const double a = ms(fewer, SyncMode::ps, 32, 100 * kMB), b = ms(more, SyncMode::ps, 32, 100 * kMB);
    if (servers < 8) EXPECT_LT(b, a) << servers << " servers, then " << servers * 2;  // up to one a node: each takes less
    else EXPECT_LE(b, a) << servers;
  }
  // The servers of one node share its NIC: two of them on a node of two rails take one each.
  const Fabric two_rails = test_fabric(",\n\"rails\": 2", "\n  \"ps_servers\": 4,");
  const Fabric one_rail = test_fabric("", "\n  \"ps_servers\": 4,");
  EXPECT_LT(ms(two_rails, SyncMode::ps, 8, kMB), ms(one_rail, SyncMode::ps, 8, kMB));
}

TEST(AllreduceCost, AnOversubscribedSpineSlowsJobsLargerThanALeaf) {
  const Fabric f = test_fabric(",\n\"spine_oversubscription\": 2, \"nodes_per_leaf\": 2, \"achievable_share\": 0.5");
  EXPECT_NEAR(node_cost(f, 2).beta_ms_per_byte, 2e-7, 1e-18);  // half the line rate
  EXPECT_NEAR(node_cost(f, 4).beta_ms_per_byte, 4e-7, 1e-18);  // and half again through the spine
  EXPECT_NEAR(node_cost(f, 4).alpha_ms, 0.005, 1e-15);
}

}  // namespace
}  // namespace rocebench::models
