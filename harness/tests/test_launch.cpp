#include <gtest/gtest.h>

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
  EXPECT_EQ(srun_argv(spec),
            (std::vector<std::string>{"srun", "--nodes=2", "--ntasks=4", "--ntasks-per-node=2", "--nodelist=a,b",
                                      "--export=ALL,MASTER_ADDR,ROCEBENCH_TOKEN", "/opt/rocebench", "run",
                                      "--launcher", "env"}));
  for (const auto& arg : mpirun_argv(spec)) EXPECT_EQ(arg.find("tok"), std::string::npos) << "the token is in argv: " << arg;
  for (const auto& arg : srun_argv(spec)) EXPECT_EQ(arg.find("tok"), std::string::npos) << "the token is in argv: " << arg;
  spec.ranks_per_host = 0;  // the hostfile's slots
  EXPECT_EQ(total_ranks(spec), 16);
}

TEST(Launchers, TokensAreRandomHex) {
  const std::string a = random_token(), b = random_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}
