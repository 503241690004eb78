#pragma once
// The CPUs a rank computes on (issue #44). Ranks of one machine that may run on the same CPUs
// divide them: each takes its share in oneDNN threads, never more threads than CPUs. OpenMP's
// default (a thread per CPU in every rank) put 8 spinning threads of 4 ranks on 2 CPUs, and
// each barrier then waited for a descheduled thread: 20x slower, not the 2x that sharing costs.
#include <cstdint>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::models {

// One rank's place: what rank 0 and every other rank learn of it through the rendezvous.
struct RankPlace {
  int rank = 0;
  std::string host;
  std::string machine;        // boot id: emulated hosts (namespaces of one machine) share it, hosts do not
  std::vector<int> allowed;   // the CPUs it may run on (sched_getaffinity), ascending
};

// What a rank computes on, and whom it shares its CPUs with.
struct CpuShare {
  int cpus = 0;     // the CPUs this rank may run on
  int ranks = 1;    // ranks of its machine that may run on the same CPUs, itself included
  int threads = 1;  // what it computes on: threads_for(cpus, ranks), or 1 when it does not compute on CPUs
  // ranks_sharing_cpus' words ("4 ranks on 2 CPUs of one machine (host0, host1, host2, host3)") when
  // the ranks of a CPU set run more threads than it has CPUs; empty when every thread has a CPU.
  std::string shared;
};

// The threads of a rank that shares `cpus` CPUs with `ranks` ranks (itself included): the CPUs
// divided among the ranks, rounded down, at least one.
int threads_for(int cpus, int ranks);

// This process's place (rank and host are the caller's to fill): boot id and allowed CPUs.
RankPlace this_place();

// This machine as models.scaling's per-rank records keep it: {machine: boot id, cpus: online CPUs}.
json this_machine();

// The share of `places[me]`: the ranks on the same machine with the same allowed CPUs divide them.
// `cpu_engine`: the rank computes on oneDNN threads; otherwise it keeps one thread busy.
CpuShare share_of(const std::vector<RankPlace>& places, std::size_t me, bool cpu_engine);

// Every rank's place through the rendezvous (keys under ctx.scope + "/cpus/"), then this rank's
// share; a context without a rendezvous (one rank by itself) shares with no one.
CpuShare share_cpus(StepContext& ctx, bool cpu_engine);

}  // namespace rocebench::models
