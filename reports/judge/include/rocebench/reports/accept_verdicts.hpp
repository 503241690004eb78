#pragma once
// One verdict per node of an acceptance, with reason codes, evidence and the figures it was judged
// by, filled stage by stage by the judges (accept_judges.hpp, accept_bisection.hpp).
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rocebench::reports::accept {

// The reasons a node fails.
inline constexpr const char* kConfig = "CONFIG";            // netcheck failed, or a setting differs from the fleet
inline constexpr const char* kLink = "LINK";                // its pairs stay slow, also retested alone
inline constexpr const char* kSlow = "SLOW";                // isolated by bisection of a slow collective
inline constexpr const char* kGpu = "GPU";                  // below its GPU's rating
inline constexpr const char* kTrain = "TRAIN";              // its images/s in data-parallel training are below the fleet's
inline constexpr const char* kUnverified = "UNVERIFIED";    // a required check could not run
inline constexpr const char* kUnreachable = "UNREACHABLE";  // never arrived, or was lost
inline constexpr const char* kLossy = "LOSSY";              // loss under incast: resent packets, or drops
// A warning: the node passes, and the report says why it was looked at twice.
inline constexpr const char* kCongested = "CONGESTED";      // goodput stalled under incast, CNPs ignored

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
inline constexpr const char* kLossResent = "lossless_resent";             // what it sent again under incast
inline constexpr const char* kLossPaused = "lossless_paused_seconds";     // its priorities' pause time under incast
// Per NIC priority under incast (verbs), each figure named `<family>/<priority>` (priority_figure); the
// metrics file gives the priority as a label.
inline constexpr const char* kPriorityBytes = "lossless_priority_bytes";                   // both ways
inline constexpr const char* kPriorityPaused = "lossless_priority_paused_seconds";         // both ways
inline constexpr const char* kPriorityDiscards = "lossless_priority_discards";             // received and dropped
inline std::string priority_figure(const char* family, int priority) { return std::string(family) + "/" + std::to_string(priority); }

struct NodeVerdict {
  std::string host;
  std::map<std::string, std::string> stages;  // stage -> what it found on this node ("ok", "FAIL", "skip")
  std::vector<Finding> findings;
  std::vector<Finding> warnings;              // do not fail the node
  std::map<std::string, double> figures;      // kPairGbps ... -> value
  bool pass() const { return findings.empty(); }
};

// The verdicts of a cluster's nodes, filled stage by stage.
class Verdicts {
 public:
  explicit Verdicts(const std::vector<std::string>& hosts);
  void stage(const std::string& host, const std::string& stage, const std::string& cell);
  void fail(const std::string& host, Finding finding);
  void warn(const std::string& host, Finding finding);
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

}  // namespace rocebench::reports::accept
