// The threads a training rank computes on (issue #44): the CPUs it may run on divided among the
// ranks of its machine that run on the same ones, recorded with the CPUs, and a step whose ranks
// share CPUs says so. Ranks are threads (local_rendezvous.hpp); the step and its engine are real.
#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>

#include "local_rendezvous.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/models/cpu_share.hpp"
#include "rocebench/models/module.hpp"

namespace rocebench::models {
namespace {

TEST(CpuShare, ThreadsAreTheCpusDividedAmongTheRanksAndNeverMoreThanCpus) {
  struct Case {
    int cpus, ranks, threads;
  };
  for (const Case c : {Case{2, 1, 2}, Case{2, 2, 1}, Case{2, 4, 1}, Case{8, 4, 2}, Case{8, 3, 2}, Case{1, 1, 1},
                       Case{16, 1, 16}, Case{64, 8, 8}}) {
    EXPECT_EQ(threads_for(c.cpus, c.ranks), c.threads) << c.ranks << " ranks on " << c.cpus << " CPUs";
    EXPECT_LE(threads_for(c.cpus, c.ranks) * c.ranks, std::max(c.cpus, c.ranks)) << "more threads than CPUs";
  }
}

std::vector<RankPlace> places(const std::vector<std::pair<std::string, std::vector<int>>>& machine_and_cpus) {
  std::vector<RankPlace> out;
  for (const auto& [machine, cpus] : machine_and_cpus)
    out.push_back({static_cast<int>(out.size()), "host" + std::to_string(out.size()), machine, cpus});
  return out;
}

TEST(CpuShare, RanksOfOneMachineDivideTheCpusTheyShare) {
  // README command 1 on this VM: 4 emulated hosts on one 2-CPU machine.
  const auto four_on_two = places({{"m", {0, 1}}, {"m", {0, 1}}, {"m", {0, 1}}, {"m", {0, 1}}});
  const CpuShare s = share_of(four_on_two, 2, true);
  EXPECT_EQ(s.cpus, 2);
  EXPECT_EQ(s.ranks, 4);
  EXPECT_EQ(s.threads, 1);
  EXPECT_EQ(s.shared, "4 ranks on 2 CPUs of one machine (host0, host1, host2, host3)");
  // Two ranks on two CPUs, one thread each: every thread has a CPU.
  const CpuShare two = share_of(places({{"m", {0, 1}}, {"m", {0, 1}}}), 0, true);
  EXPECT_EQ(two.threads, 1);
  EXPECT_EQ(two.shared, "");
  // Two machines of 8 CPUs, two ranks each: four threads a rank, nobody shares.
  const auto cpus8 = std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7};
  const CpuShare hosts = share_of(places({{"a", cpus8}, {"a", cpus8}, {"b", cpus8}, {"b", cpus8}}), 3, true);
  EXPECT_EQ(hosts.ranks, 2);
  EXPECT_EQ(hosts.threads, 4);
  EXPECT_EQ(hosts.shared, "");
  // Ranks pinned to a CPU each (launcher pin_cpus): 4 ranks on 2 CPUs pair up on each.
  const CpuShare pinned = share_of(places({{"m", {0}}, {"m", {1}}, {"m", {0}}, {"m", {1}}}), 1, true);
  EXPECT_EQ(pinned.cpus, 1);
  EXPECT_EQ(pinned.ranks, 2);
  EXPECT_EQ(pinned.threads, 1);
  EXPECT_EQ(pinned.shared, "2 ranks on 1 CPU of one machine (host1, host3)");
  // An engine that does not compute on the CPUs keeps one thread busy whatever it has.
  EXPECT_EQ(share_of(places({{"m", cpus8}}), 0, false).threads, 1);
}

bool may_run_on_two_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  return ::sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) >= 2;
}

// The first two CPUs this process may run on, for the calling thread only; false when there are fewer.
bool run_on_two_cpus() {
  cpu_set_t allowed, two;
  CPU_ZERO(&allowed);
  CPU_ZERO(&two);
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2) return false;
  for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) {
      CPU_SET(cpu, &two);
      ++taken;
    }
  }
  return ::sched_setaffinity(0, sizeof(two), &two) == 0;
}

// models.train on `world` ranks, each given the same two CPUs: each rank's record and the threads
// OpenMP then gives the rank.
std::vector<std::pair<json, int>> train_on_two_cpus(int world) {
  rbtest::LocalRendezvous rdv(world);
  rbtest::KeptRecords kept;
  std::vector<int> omp_threads(world, 0);
  const auto kinds = steps();
  const auto errors = rbtest::on_ranks(world, [&](int rank) {
    if (!run_on_two_cpus()) throw std::runtime_error("could not restrict the rank to two CPUs");
    rbtest::LocalRendezvous::Rank rendezvous(rdv, rank);
    StepContext ctx = rbtest::sweep_context(rank, world, rendezvous, kept);
    ctx.step = "models.train";
    ctx.params = {{"model", "resnet20_cifar"}, {"batch", 2}, {"iters", 1}, {"warmup", 0}};
    kinds[0].run(ctx);
    omp_threads[rank] = omp_get_max_threads();
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  std::vector<std::pair<json, int>> out;
  for (const json& r : kept.records) out.emplace_back(r, omp_threads.at(r.at("rank").get<int>()));
  return out;
}

TEST(CpuShare, FourRanksOnTwoCpusTrainOnAThreadEachAndSayTheyShare) {
  if (!may_run_on_two_cpus()) GTEST_SKIP() << "this process may run on fewer than two CPUs";
  const auto ranks = train_on_two_cpus(4);
  ASSERT_EQ(ranks.size(), 4u);
  for (const auto& [r, omp] : ranks) {
    EXPECT_TRUE(result_schema().validate(r).empty()) << r.dump();
    EXPECT_EQ(r["metrics"]["threads"], 1) << r.dump();
    EXPECT_EQ(r["metrics"]["cpus"], 2) << r.dump();
    EXPECT_EQ(omp, 1) << "the rank computed on the threads its record names";
    EXPECT_EQ(r["samples"].value("cpus_shared", ""), "4 ranks on 2 CPUs of one machine (host0, host1, host2, host3)");
  }
}

TEST(CpuShare, OneRankOnTwoCpusTrainsOnBothAndSharesNothing) {
  if (!may_run_on_two_cpus()) GTEST_SKIP() << "this process may run on fewer than two CPUs";
  const auto ranks = train_on_two_cpus(1);
  ASSERT_EQ(ranks.size(), 1u);
  const auto& [r, omp] = ranks.front();
  EXPECT_EQ(r["metrics"]["threads"], 2) << r.dump();
  EXPECT_EQ(r["metrics"]["cpus"], 2) << r.dump();
  EXPECT_EQ(omp, 2);
  EXPECT_FALSE(r["samples"].contains("cpus_shared")) << r.dump();
}

}  // namespace
}  // namespace rocebench::models
