#pragma once
// Cluster acceptance: what the hardware should deliver (a profile), the search for the node that
// slows a collective (bisection), and one verdict per node, with reason codes and evidence, built from
// the records of the stages `rocebench accept` runs.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/tables.hpp"

namespace rocebench::reports::accept {

// A profile names what each stage must reach, relative to the fleet's own measurements, and where
// every rated number comes from. Built-in: "auto"; a JSON file adds its own (unknown keys are errors).
struct Profile {
  std::string name;
  std::string file;  // "builtin:auto" or the path
  std::string netcheck_profile = "lossless-roce";
  bool rdma_required = false;      // false: a host without an RDMA device skips netcheck's RoCE checks
  std::string link_test = "bw";    // microbench.allpairs
  double link_duration_s = 1;
  std::size_t link_bytes = 131072;
  double link_fraction = 0.8;      // a pair below this fraction of the best pair is bad
  std::size_t allreduce_bytes = 1 << 20;
  int allreduce_iters = 5;
  double busbw_fraction = 0.7;     // of the median pair bandwidth: below it the group is slow
  double rated_link_Gbps = 0;      // a datasheet link rate: when set, busbw is judged against it instead
  double busbw_fraction_of_rated = 0.85;
  bool gpu_required = false;       // true: a node without a usable GPU is UNVERIFIED
  std::string gemm_type = "bf16";  // the GEMM judged (microbench.host's gpu_gemm)
  double gemm_tflops = 0;          // rated peak; 0: judged against the fleet's median instead
  double h2d_GBps = 0;             // rated host-to-device copy; 0: the fleet's median
  double gpu_fraction = 0.9;       // of the rated figure, or of the fleet's median
  // The short data-parallel training run (models.scaling at the full world): each node's images/s
  // from its own compute (not its wait for the others) against the fleet's median.
  std::string train_model = "resnet20_cifar";
  std::string train_engine = "replay";  // replay needs no GPU; gpu when the node type has one
  std::string train_timeline = "cpu-resnet20_cifar-fp32-b16";  // replay only
  std::string train_precision = "fp32";
  int train_batch = 16;
  int train_steps = 10;
  double train_fraction = 0.8;     // of the fleet's median images/s
  json sources = json::object();   // rated number -> where it comes from
  json document = json::object();  // the profile as written (what accept records it ran under)
};

// A built-in name or a JSON file; throws InputError naming file, line and field.
Profile load_profile(const std::string& name_or_file);
std::string builtin_profile_text(const std::string& name);  // empty when there is no such profile
std::vector<std::string> builtin_profiles();
// The profile a recorded acceptance ran under (accept.jsonl's accept.start record).
Profile profile_from_document(const json& document, const std::string& file);

// ---- what accept saw -----------------------------------------------------------------------
// `rocebench accept` runs its stages, each a run of its own in <dir>/stages/NN-label/ (results.jsonl),
// and records in <dir>/accept.jsonl (event records) what it ran: the nodes and the profile
// (accept.start), each stage run's group and exit code (accept.stage), and its end (accept.end).
// Every verdict below is a function of those records and a profile alone, so `rocebench report
// --accept DIR` judges a finished acceptance again, under its own profile or another.

inline constexpr const char* kAcceptRecords = "accept.jsonl";

// A node as the operator named it (hostfile line, emulated host) and as its records name it (its row).
struct Node {
  std::string name;
  std::string host;
  bool operator==(const Node&) const = default;
};

// One stage's run on a group of nodes.
struct StageRun {
  std::string stage;   // hosts | links | allreduce | gpu | train
  std::string label;   // its folder's name after the number: hosts, hosts-NODE, links-retry, bisect-4
  std::string folder;  // relative to the acceptance's folder: stages/NN-label
  std::vector<Node> group;
  int exit_code = 0;
  std::string lost;           // the message of a rank it lost (rank.lost), if any
  std::vector<json> records;  // its results.jsonl
  // The run went to its end (exit 0 or 1): its records say what it found (a failed check is a finding).
  bool completed() const;
};

// An acceptance as recorded.
struct Acceptance {
  std::string run;         // the acceptance's run id
  std::vector<Node> nodes;  // every node, in the operator's order (the verdict's rows)
  std::string profile_file;
  json profile = json::object();  // the profile's document it ran under
  std::vector<StageRun> runs;     // in the order they ran
  bool finished = false;          // accept.end was recorded
  std::string time;               // when it started (accept.start's time, RFC 3339)
};

json start_record(const std::string& run, const std::vector<Node>& nodes, const Profile& profile);
json stage_record(const std::string& run, const StageRun& s);  // without its records (they are in its folder)
json end_record(const std::string& run, std::size_t runs);
// Reads <dir>/accept.jsonl and each stage run's results.jsonl. InputError naming the folder or the
// file and line when it is not an acceptance's folder or a record is not what accept writes.
Acceptance load_acceptance(const std::filesystem::path& dir);

// The reasons a node fails.
inline constexpr const char* kConfig = "CONFIG";            // netcheck failed, or a setting differs from the fleet
inline constexpr const char* kLink = "LINK";                // its pairs stay slow, also retested alone
inline constexpr const char* kSlow = "SLOW";                // isolated by bisection of a slow collective
inline constexpr const char* kGpu = "GPU";                  // below its GPU's rating
inline constexpr const char* kTrain = "TRAIN";              // its images/s in data-parallel training are below the fleet's
inline constexpr const char* kUnverified = "UNVERIFIED";    // a required check could not run
inline constexpr const char* kUnreachable = "UNREACHABLE";  // never arrived, or was lost

struct Finding {
  std::string code;
  std::string stage;
  std::string evidence;
};

// The figures a node was judged by (its own, where its records give one), named with their unit as
// Prometheus's lint wants them (no abbreviated units but Gbps, base units).
inline constexpr const char* kPairGbps = "pair_Gbps";                     // the median of its pairs' bandwidth
inline constexpr const char* kPairLatency = "pair_latency_seconds";       // the same, of a latency link test
inline constexpr const char* kBusbwGbps = "allreduce_busbw_Gbps";         // the allreduce of the group it ran in
inline constexpr const char* kImagesPerS = "train_images_per_second";     // from its own compute

struct NodeVerdict {
  std::string host;
  std::map<std::string, std::string> stages;  // stage -> what it found on this node ("ok", "FAIL", "skip")
  std::vector<Finding> findings;
  std::map<std::string, double> figures;      // kPairGbps ... -> value
  bool pass() const { return findings.empty(); }
};

// The verdicts of a cluster's nodes, filled stage by stage.
class Verdicts {
 public:
  explicit Verdicts(const std::vector<std::string>& hosts);
  void stage(const std::string& host, const std::string& stage, const std::string& cell);
  void fail(const std::string& host, Finding finding);
  void figure(const std::string& host, const std::string& name, double value);
  // The stage ran on `hosts`: its column stays, and each of them it gave no evidence of (no cell:
  // no record names it) is UNVERIFIED. No evidence is never a pass.
  void ran(const std::string& stage, const std::vector<std::string>& hosts);
  // A failure of the cluster that no node explains (a slow collective bisection could not pin).
  void fail_cluster(Finding finding) { cluster_.push_back(std::move(finding)); }
  const std::vector<NodeVerdict>& nodes() const { return nodes_; }
  const std::vector<Finding>& cluster_findings() const { return cluster_; }
  const std::vector<std::string>& stages() const { return stages_; }
  bool pass() const;

 private:
  NodeVerdict& node(const std::string& host);
  std::vector<NodeVerdict> nodes_;
  std::vector<std::string> stages_;  // in the order they ran
  std::vector<Finding> cluster_;
};

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
// with their pairs' figures against the median pair. A host with a pair the rule would retest alone,
// which the step never did (a stricter profile than it ran under), is UNVERIFIED, naming the pair.
void judge_links(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts, const Profile& profile);
// The median bandwidth of the pairs microbench.allpairs measured (0 when none).
double median_pair_bandwidth(const std::vector<json>& records);
// A ring allreduce's bus bandwidth in Gb/s from its run's records (0 when it has no ok figure).
double allreduce_busbw_Gbps(const std::vector<json>& records);

// Bisection for the node that slows a collective. `slow(group)` runs the collective on that group of
// node indices and says whether it fell below threshold. The whole group is known slow; each run
// tests one half of the suspects (a single suspect with a partner already found fine). The node left
// is named only when two runs smaller than the whole group were slow with it and fine nodes alone (a
// retest in isolation): ceil(log2 n) + 1 runs, one more when it was reached by elimination. Empty
// `slow`: no single node explains it (the group is slow as a whole, or the slowness did not repeat).
struct Bisection {
  std::vector<int> slow;  // the isolated node, or none
  int runs = 0;           // collective runs made
};
Bisection bisect(int n, const std::function<bool(const std::vector<int>& group)>& slow);

// ---- the acceptance's decisions, from its records ------------------------------------------

// The nodes that joined a hosts-stage run: every node when the run of all completed, else those whose
// run alone did.
std::vector<Node> reachable_nodes(const Acceptance& a);
// The reachable nodes without a usable GPU, and why (from the hosts stage's run records).
std::map<std::string, std::string> nodes_without_gpu(const Acceptance& a);

// What an allreduce's busbw is judged against: the profile's fraction of the rated link, or of the
// median pair of the link matrix. Undefined (0) with neither.
struct AllreduceThreshold {
  double Gbps = 0;
  std::string against;  // "0.7 x the median pair's 1.234"
  bool defined() const { return Gbps > 0; }
};
AllreduceThreshold allreduce_threshold(const Profile& profile, double median_pair_Gbps);
AllreduceThreshold allreduce_threshold(const Profile& profile, const Acceptance& a);  // the links stage's median pair
bool group_slow(double busbw_Gbps, const AllreduceThreshold& t);

// The allreduce stage's search, in rounds (three at most, while two nodes remain): the whole group;
// when it is slow, once more; when slow again, bisection for the node that slows it, and the next
// round without the node it names. `busbw(label, group)` runs the allreduce on that group (accept) or
// finds the recorded run (a judge replaying it), nullopt when there is none: the search stops there.
using AllreduceRunner = std::function<std::optional<double>(const std::string& label, const std::vector<Node>& group)>;
struct AllreduceRound {
  std::vector<Node> group;
  std::vector<std::string> log;  // each run's group and figure, the evidence of a SLOW
  double full = 0;               // the whole group's last busbw
  bool slow = false;             // the whole group was slow, also on retry
  Bisection bisection;
  std::vector<Node> isolated;
};
struct AllreduceSearch {
  std::vector<AllreduceRound> rounds;  // the rounds that ended
  std::string missing;                 // the run the search needed and did not get ("allreduce-retry on a+b")
  std::vector<Node> unresolved;        // the nodes it was judging then
};
AllreduceSearch allreduce_search(const std::vector<Node>& group, const AllreduceThreshold& t, const AllreduceRunner& busbw);
// The allreduce runs an acceptance recorded, replayed: the k-th request of a group gets the k-th
// recorded run of that group.
AllreduceRunner recorded_allreduce(const Acceptance& a);
// The search's verdicts: ok, SLOW for the isolated nodes, a cluster SLOW no node explains, and
// UNVERIFIED for the nodes a missing run left unjudged.
void judge_allreduce(Verdicts& v, const AllreduceSearch& search, const AllreduceThreshold& t);

// Every verdict of a recorded acceptance under `profile`: the stages in the order accept runs them.
Verdicts judge_acceptance(const Acceptance& a, const Profile& profile);

// Rendering: the host x stage table for the console; the same table and the evidence as report
// sections (for render_markdown / render_html); JUnit, one suite per host.
std::string verdict_table(const Verdicts& v);
std::vector<Section> verdict_sections(const Verdicts& v);
std::string verdict_junit(const Verdicts& v);
json verdict_json(const Verdicts& v);

}  // namespace rocebench::reports::accept
