#include "rocebench/models/cpu_share.hpp"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include "rocebench/models/data_parallel.hpp"

namespace rocebench::models {
namespace {

std::string boot_id() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(boot, id);
  return id;
}

json to_json(const RankPlace& p) { return {{"rank", p.rank}, {"host", p.host}, {"machine", p.machine}, {"allowed", p.allowed}}; }

RankPlace place_from(const json& j) {
  return {j.at("rank").get<int>(), j.at("host").get<std::string>(), j.at("machine").get<std::string>(),
          j.at("allowed").get<std::vector<int>>()};
}

}  // namespace

int threads_for(int cpus, int ranks) { return std::max(1, cpus / std::max(1, ranks)); }

RankPlace this_place() {
  RankPlace p;
  p.machine = boot_id();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) p.allowed.push_back(cpu);
    }
  }
  if (p.allowed.empty()) {  // no affinity to read: every online CPU
    for (long cpu = 0; cpu < ::sysconf(_SC_NPROCESSORS_ONLN); ++cpu) p.allowed.push_back(static_cast<int>(cpu));
  }
  return p;
}

json this_machine() { return {{"machine", boot_id()}, {"cpus", ::sysconf(_SC_NPROCESSORS_ONLN)}}; }

CpuShare share_of(const std::vector<RankPlace>& places, std::size_t me, bool cpu_engine) {
  const RankPlace& mine = places.at(me);
  std::vector<const RankPlace*> group;  // the ranks that run on exactly my CPUs
  for (const RankPlace& p : places) {
    if (p.machine == mine.machine && p.allowed == mine.allowed) group.push_back(&p);
  }
  CpuShare s;
  s.cpus = static_cast<int>(mine.allowed.size());
  s.ranks = static_cast<int>(group.size());
  s.threads = cpu_engine ? threads_for(s.cpus, s.ranks) : 1;
  // Said in the words models.scaling and compare use for ranks that share CPUs.
  json per_rank = json::array();
  for (const RankPlace* p : group)
    per_rank.push_back({{"host", p->host}, {"machine", p->machine}, {"cpus", s.cpus}, {"threads", s.threads}});
  s.shared = ranks_sharing_cpus(per_rank);
  return s;
}

CpuShare share_cpus(StepContext& ctx, bool cpu_engine) {
  RankPlace mine = this_place();
  mine.rank = ctx.rank;
  mine.host = ctx.host;
  if (!ctx.rendezvous) return share_of({mine}, 0, cpu_engine);
  const std::string key = ctx.scope + "/cpus/";
  ctx.rendezvous->set(key + std::to_string(ctx.rank), to_json(mine).dump());
  std::vector<RankPlace> places;
  for (int r = 0; r < ctx.world; ++r) places.push_back(place_from(json::parse(ctx.rendezvous->get(key + std::to_string(r), ctx.deadline))));
  return share_of(places, static_cast<std::size_t>(ctx.rank), cpu_engine);
}

}  // namespace rocebench::models
