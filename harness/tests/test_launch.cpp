#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launch.hpp"
#include "rocebench/common/errors.hpp"

using namespace rocebench;

TEST(RankEnv, EachLauncherConvention) {
  struct Case {
    std::map<std::string, std::string> env;
    int rank, world, local;
    std::string source;
  };
  const std::vector<Case> cases{
      {{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}}, 3, 8, 1, "RANK/WORLD_SIZE"},
      {{{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}, 2, 4, 2,
       "OMPI_COMM_WORLD_*"},
      {{{"PMI_RANK", "5"}, {"PMI_SIZE", "6"}}, 5, 6, 0, "PMI_*"},
      {{{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "3"}}, 7, 16, 3, "SLURM_*"},
      {{}, 0, 1, 0, "none (a single rank)"},
  };
  for (auto c : cases) {
    c.env["ROCEBENCH_TOKEN"] = "t";
    const RankEnv e = rank_env_from(c.env);
    EXPECT_EQ(e.rank, c.rank) << c.source;
    EXPECT_EQ(e.world, c.world) << c.source;
    EXPECT_EQ(e.local_rank, c.local) << c.source;
    EXPECT_EQ(e.source, c.source);
    EXPECT_EQ(e.rendezvous.host, "127.0.0.1");
    EXPECT_EQ(e.rendezvous.port, kDefaultRendezvousPort);
  }
}

TEST(RankEnv, RendezvousAddressAndErrors) {
  const RankEnv e = rank_env_from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"},
                                   {"MASTER_PORT", "4000"}, {"ROCEBENCH_TOKEN", "abc"}});
  EXPECT_EQ(e.rendezvous.host, "10.0.0.1");
  EXPECT_EQ(e.rendezvous.port, 4000);
  EXPECT_EQ(e.token, "abc");
  EXPECT_THROW(rank_env_from({{"RANK", "0"}, {"WORLD_SIZE", "2"}}), InputError);  // no token
  EXPECT_THROW(rank_env_from({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"ROCEBENCH_TOKEN", "t"}}), InputError);
  EXPECT_THROW(rank_env_from({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"ROCEBENCH_TOKEN", "t"}}), InputError);
  EXPECT_THROW(rank_env_from({{"RANK", "0"}, {"ROCEBENCH_TOKEN", "t"}}), InputError);
}

TEST(Hostfile, OpenMpiFormat) {
  const auto hosts = parse_hostfile("# cluster\nnode1 slots=8\nnode2   slots=4 max_slots=4  # comment\n\nnode3\n", "hf");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].host, "node1");
  EXPECT_EQ(hosts[0].slots, 8);
  EXPECT_EQ(hosts[1].slots, 4);
  EXPECT_EQ(hosts[2].slots, 1);
}

TEST(Hostfile, HostNamesAreNamesOrAddresses) {
  const auto hosts = parse_hostfile("gpu-node01.cluster.local\n10.0.0.7 slots=2\nfe80::1\nNODE2\n", "hf");
  ASSERT_EQ(hosts.size(), 4u);
  EXPECT_EQ(hosts[2].host, "fe80::1");
  for (const std::string& bad : {std::string("node$(touch)x"), std::string("node3:4"), std::string("-node"),
                                 std::string("node..a"), std::string("node."), std::string("n\x1b[2Jode"), std::string(300, 'a')}) {
    try {
      parse_hostfile("node1\n" + bad + " slots=2\n", "hosts.txt");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "hosts.txt:2: field 'host': '" + printable_excerpt(bad) +
                                           "' is not a host name or address (letters, digits, '-' and '.')");
    }
  }
  // A binary file: the error quotes a short, printable excerpt.
  try {
    parse_hostfile(std::string("\x7f" "ELF\x02\x01\x01") + std::string(5000, '\x01'), "a.out");
    ADD_FAILURE() << "accepted a binary";
  } catch (const InputError& e) {
    EXPECT_LT(std::string(e.what()).size(), 250u) << e.what();
    EXPECT_NE(std::string(e.what()).find("\\x7fELF\\x02"), std::string::npos) << e.what();
  }
}

TEST(Hostfile, ErrorsNameLineAndField) {
  try {
    parse_hostfile("node1 slots=2\nnode2 slots=zero\n", "hosts.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "hosts.txt:2: field 'slots': expected a positive integer, got 'zero'");
  }
  try {
    parse_hostfile("node1 cpus=2\n", "hosts.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hosts.txt:1: field 'cpus'"), std::string::npos);
  }
  EXPECT_THROW(parse_hostfile("# nothing\n", "empty"), InputError);
}

TEST(Launchers, MpirunAndSrunArgv) {
  LaunchSpec spec;
  spec.hosts = {{"a", 8}, {"b", 8}};
  spec.ranks_per_host = 2;
  spec.rank_argv = {"/opt/rocebench", "run", "--launcher", "env"};
  spec.env = {{"MASTER_ADDR", "a"}, {"ROCEBENCH_TOKEN", "tok"}};
  EXPECT_EQ(total_ranks(spec), 4);
  EXPECT_EQ(mpirun_argv(spec),
            (std::vector<std::string>{"mpirun", "-np", "4", "-H", "a:2,b:2", "--map-by", "slot", "-x", "MASTER_ADDR",
                                      "-x", "ROCEBENCH_TOKEN", "/opt/rocebench", "run", "--launcher", "env"}));
  // One --nodelist entry per task, in the hostfile's order: rank 0 on the first host (MASTER_ADDR).
  EXPECT_EQ(srun_argv(spec),
            (std::vector<std::string>{"srun", "--nodes=2", "--ntasks=4", "--distribution=arbitrary", "--nodelist=a,a,b,b",
                                      "--export=ALL,MASTER_ADDR,ROCEBENCH_TOKEN", "--quit-on-interrupt", "/opt/rocebench", "run",
                                      "--launcher", "env"}));
  for (const auto& arg : mpirun_argv(spec)) EXPECT_EQ(arg.find("tok"), std::string::npos) << "the token is in argv: " << arg;
  for (const auto& arg : srun_argv(spec)) EXPECT_EQ(arg.find("tok"), std::string::npos) << "the token is in argv: " << arg;
  spec.ranks_per_host = 0;  // the hostfile's slots
  EXPECT_EQ(total_ranks(spec), 16);
  // Slurm orders its nodes by its own table; the hostfile's order (and uneven slots) must win.
  spec.hosts = {{"node9", 1}, {"node1", 2}};
  const auto argv = srun_argv(spec);
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--nodelist=node9,node1,node1"), argv.end()) << fmt::format("{}", fmt::join(argv, " "));
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--ntasks=3"), argv.end());
}

TEST(Launchers, RanksKilledAreReadFromWhatMpirunOrSrunSay) {
  const auto deaths = deaths_reported_by_launcher({
      "srun: error: node3: task 2: Killed",
      "srun: error: node1: task 1: Exited with exit code 3",  // ended on its own
      "srun: error: node4: tasks 4-5,7: Segmentation fault",
      "srun: error: node9: task 2: Killed",  // rank 2 again: the first word stands
      "mpirun noticed that process rank 0 with PID 77 on node gpu-a01 exited on signal 15 (Terminated).",
      "srun: error: node1: task x: Killed",
      "rank 6 was lost",
  });
  ASSERT_EQ(deaths.size(), 5u);
  EXPECT_EQ(deaths[0].rank, 2);
  EXPECT_EQ(deaths[0].host, "node3");
  EXPECT_EQ(deaths[0].ended, "killed by SIGKILL");
  EXPECT_EQ(deaths[1].rank, 4);
  EXPECT_EQ(deaths[2].rank, 5);
  EXPECT_EQ(deaths[3].rank, 7);
  EXPECT_EQ(deaths[3].host, "node4");
  EXPECT_EQ(deaths[3].ended, "killed by SIGSEGV");
  EXPECT_EQ(deaths[4].rank, 0);
  EXPECT_EQ(deaths[4].host, "gpu-a01");
  EXPECT_EQ(deaths[4].ended, "killed by SIGTERM");
}

// A hostfile that is a device or a FIFO was read without end or waited on forever: refused by kind.
TEST(Hostfile, ADeviceIsRefusedByItsKind) {
  try {
    load_hostfile("/dev/zero");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "/dev/zero: is a character device, not a file");
  }
}

TEST(EmulatedHostsFile, AgentColumn) {
  const auto hosts = parse_emulated_hosts("# bed\nhost0 10.0.0.1 agent=7000\nhost1 10.0.0.2   # a namespace\n", "hosts");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].netns, "host0");
  EXPECT_EQ(hosts[0].address, "10.0.0.1");
  EXPECT_EQ(hosts[0].agent_port, 7000);
  EXPECT_EQ(hosts[0].line, 2);
  EXPECT_EQ(hosts[1].agent_port, 0);
  for (const auto& h : hosts) EXPECT_EQ(parse_emulated_hosts(emulated_host_line(h), "again").front().agent_port, h.agent_port);
  EXPECT_EQ(emulated_host_line(hosts[0]), "host0 10.0.0.1 agent=7000");
  EXPECT_EQ(emulated_host_line(hosts[1]), "host1 10.0.0.2");
}

TEST(EmulatedHostsFile, JunkNamesFileLineAndField) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"h 10.0.0.1 agent=x", "hosts:2: field 'agent': expected a TCP port 1..65535, got 'x'"},
      {"h 10.0.0.1 agent=70000", "hosts:2: field 'agent': expected a TCP port 1..65535, got '70000'"},
      {"h 10.0.0.1 agent=", "hosts:2: field 'agent': expected a TCP port 1..65535, got ''"},
      {"h 10.0.0.1 agent=7000x", "hosts:2: field 'agent': expected a TCP port 1..65535, got '7000x'"},
      {"h 10.0.0.1 slots=2", "hosts:2: field 'slots': unknown field (expected 'NAME ADDRESS [agent=PORT]')"},
      {"h", "hosts:2: field 'address': expected 'NAME ADDRESS [agent=PORT]'"},
  };
  for (const auto& [line, message] : cases) {
    try {
      parse_emulated_hosts("ok 10.0.0.9\n" + line + "\n", "hosts");
      ADD_FAILURE() << "accepted: " << line;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}
