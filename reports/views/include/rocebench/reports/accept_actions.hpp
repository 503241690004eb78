#pragma once
// An acceptance's verdicts in the forms the systems operators schedule with read them: Kubernetes
// node labels and taints, Prometheus metrics, Slurm drains. Rendered from the judge's Verdicts alone, so `accept` and `report --accept`
// write the same thing.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/reports/acceptance.hpp"

namespace rocebench::reports::accept {

// Which acceptance a verdict comes from, and how long it holds.
struct Stamp {
  std::string run;       // the acceptance's run id
  std::string time;      // when it started, RFC 3339 (its accept.start record)
  double valid_h = 24;   // how long its results are to be trusted
  long long unix_s() const;  // `time` in seconds since the epoch; InputError when it is not RFC 3339
  long long valid_until_s() const { return unix_s() + static_cast<long long>(valid_h * 3600); }
};
Stamp stamp_of(const Acceptance& a, double valid_h);

// Kubernetes label rules (apimachinery validation): a value is at most 63 characters of
// [A-Za-z0-9._-], beginning and ending with an alphanumeric; a key's name part the same, its prefix a DNS subdomain.
inline constexpr std::size_t kLabelValueMax = 63;
bool valid_label_value(std::string_view v);
// `text` as a valid label value: each run of other characters becomes one '_', cut to 63 characters.
std::string label_value(std::string_view text);

inline constexpr const char* kLabelPrefix = "rocebench.io/";
// Per node: rocebench.io/accept=pass|fail, -reasons (the codes), -reason (the first finding's evidence,
// shortened), -run, -time, -valid-until; the full evidence as an annotation; a failed node gets the
// taint rocebench.io/accept=fail:NoSchedule. One `kubectl apply -f` manifest (a Node per document:
// apply merges labels and taints, and removes the taint it set earlier from a node that now passes).
std::string k8s_manifest(const Verdicts& v, const Stamp& s);
// The same as `kubectl label/annotate/taint` lines, for clusters where applying a Node is not allowed.
std::string k8s_commands(const Verdicts& v, const Stamp& s);

// node_exporter's textfile format (as `history export` writes it), one series per node and metric:
// rocebench_accept_pass, rocebench_accept_reason (each code and stage, with its evidence), the figures
// it was judged by (rocebench_accept_pair_Gbps ...), and the run's time and validity in Unix seconds.
std::string prometheus_metrics(const Verdicts& v, const Stamp& s);

// Slurm: each failed node is drained with its reason ("rocebench LINK: pairs ... 0.43 ..."), and a
// node that passes now, drained earlier by rocebench (its reason begins with kSlurmReasonPrefix), is
// resumed. A node drained by someone else is left as it is, drained or not.
inline constexpr const char* kSlurmReasonPrefix = "rocebench ";
// Slurm documents no limit; sinfo -R shows reasons whole up to its field width. Chosen to keep the
// code and the figures behind it whole in practice, and one line in `scontrol show node`.
inline constexpr std::size_t kSlurmReasonMax = 128;
std::string slurm_reason(const NodeVerdict& n);
struct SlurmAction {
  std::string node;
  std::vector<std::string> argv;  // scontrol update ...; empty: left as it is (`why` says why)
  std::string why;
};
// `drained`: each node drained now, with its reason (what sinfo says).
std::vector<SlurmAction> slurm_actions(const Verdicts& v, bool drain, bool resume, const std::map<std::string, std::string>& drained);
// argv as one line sh reads back as the same words (for --dry-run and --k8s-commands).
std::string shell_line(const std::vector<std::string>& argv);

// What `accept` and `report --accept` write besides their table: declared once for both commands.
struct ActionOptions {
  std::string k8s, k8s_commands, metrics;  // files; empty: not written
  double valid_h = 24;
};
void declare_action_options(ArgParser& p, ActionOptions& o);
// Refuses (UsageError naming the flag) an output that cannot be written, before any work.
void check_action_options(const ActionOptions& o);
// Writes the files asked for, and says so on stdout.
void write_actions(const ActionOptions& o, const Verdicts& v, const Stamp& s);

}  // namespace rocebench::reports::accept
