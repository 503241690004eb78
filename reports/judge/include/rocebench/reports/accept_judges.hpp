#pragma once
// The stage judges of an acceptance (netcheck, links, GPU, training; the allreduce's in
// accept_bisection.hpp) and every verdict of a recorded acceptance under a profile: pure functions of
// its records and the profile, so `rocebench report --accept DIR` judges it again.
#include <map>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/accept_bisection.hpp"
#include "rocebench/reports/accept_profile.hpp"
#include "rocebench/reports/accept_records.hpp"
#include "rocebench/reports/accept_verdicts.hpp"

namespace rocebench::reports::accept {

// netcheck.host's check records: a failed check is CONFIG, an unverified one UNVERIFIED, and so is a
// kernel, driver or firmware that differs from what most of the fleet runs (CONFIG).
void judge_netcheck(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts);
// microbench.host's GPU records (gpu_gemm, gpu_copy h2d), one per GPU (params.gpu): a GPU below the
// profile's fraction of the rated figure (or of the fleet's median over every GPU) is GPU, naming the
// GPU; so is a GPU whose benchmarks failed while the node's others ran. A node whose GPU benchmarks
// could not run at all is a skip, or UNVERIFIED when the profile requires a GPU. `hosts` are the nodes
// judged, `no_gpu` those of them the stage left out, and why.
void judge_gpu(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts,
               const std::map<std::string, std::string>& no_gpu, const Profile& profile);
// models.scaling's record at the largest world: each node's images/s from its own compute
// (samples.per_rank) below the profile's fraction of the fleet's median is TRAIN; a skipped run is a
// skip, or UNVERIFIED when the profile requires a GPU; `hosts` that the record does not name (or no
// record at all) are UNVERIFIED.
void judge_training(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts, const Profile& profile);
// microbench.allpairs' pair records (each pair's first figure and its retests alone), judged by the
// bad-link rule (links.hpp) under the profile's fraction of the best pair: the hosts it names are LINK,
// with their pairs' figures against the best pair's, which it names. A host with a pair the rule would retest alone,
// which the step never did (a stricter profile than it ran under), is UNVERIFIED, naming the pair.
void judge_links(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts, const Profile& profile);
// microbench.incast's records over the profile's transport, judged by judge_incast (lossless_verdict.hpp)
// under the profile's rule, each node's PFC priorities as its netcheck read them (`pfc`): LOSSY fails a
// node, unverified is UNVERIFIED, CONGESTED warns, each with its counter evidence; `hosts` the records do
// not name are UNVERIFIED.
void judge_lossless(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts, const Profile& profile,
                    const PfcPriorities& pfc = {});
// The median bandwidth of the pairs microbench.allpairs measured (0 when none).
double median_pair_bandwidth(const std::vector<json>& records);

// ---- the acceptance's decisions, from its records ------------------------------------------

// The nodes that joined a hosts-stage run: every node when the run of all completed, else those whose
// run alone did.
std::vector<Node> reachable_nodes(const Acceptance& a);
// The reachable nodes without a usable GPU, and why (from the hosts stage's run records).
std::map<std::string, std::string> nodes_without_gpu(const Acceptance& a);
AllreduceThreshold allreduce_threshold(const Profile& profile, const Acceptance& a);  // the links stage's median pair

// Every verdict of a recorded acceptance under `profile`: the stages in the order accept runs them.
Verdicts judge_acceptance(const Acceptance& a, const Profile& profile);

}  // namespace rocebench::reports::accept
