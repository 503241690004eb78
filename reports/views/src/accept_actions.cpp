#include "rocebench/reports/accept_actions.hpp"

#include <cctype>
#include <ctime>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports::accept {

namespace {

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool label_char(char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; }

// 20261203T224752Z: ISO 8601's basic format, the one a label value can hold (no ':').
std::string label_time(long long unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string codes(const NodeVerdict& n) {
  std::string out;
  for (const auto& f : n.findings) {
    if (("." + out + ".").find("." + f.code + ".") == std::string::npos) out += (out.empty() ? "" : ".") + f.code;
  }
  return out;
}

// What one node is told: the labels, the evidence, the taint (the one list both renderers write).
struct NodeAction {
  std::string node;  // the Kubernetes node: its host name, lowercase as Kubernetes names nodes
  std::vector<std::pair<std::string, std::string>> labels;
  std::string evidence;
  bool taint = false;
};

NodeAction action_of(const NodeVerdict& n, const Stamp& s) {
  NodeAction a;
  for (char c : n.host) a.node += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const long long t = s.unix_s();
  const std::string first = n.pass() ? "none" : n.findings.front().code + ": " + n.findings.front().evidence;
  a.labels = {{"accept", n.pass() ? "pass" : "fail"},
              {"accept-reasons", n.pass() ? "none" : label_value(codes(n))},
              {"accept-reason", label_value(first)},
              {"accept-run", label_value(s.run)},
              {"accept-time", label_time(t)},
              {"accept-valid-until", label_time(s.valid_until_s())}};
  for (const auto& f : n.findings) a.evidence += fmt::format("{}{} ({}): {}", a.evidence.empty() ? "" : "; ", f.code, f.stage, f.evidence);
  if (a.evidence.empty()) a.evidence = "passed every stage";
  a.taint = !n.pass();
  return a;
}

// A YAML double-quoted scalar: any text, read back exactly.
std::string yaml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += {'\\', c};
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out + "\"";
}

// One word for sh: quoted unless it is plainly safe.
std::string sh_word(std::string_view s) {
  bool plain = !s.empty();
  for (char c : s) plain = plain && (label_char(c) || c == '/' || c == '=' || c == ':');
  if (plain) return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string header(const Verdicts& v, const Stamp& s, const char* how) {
  std::size_t failed = 0;
  for (const auto& n : v.nodes()) failed += !n.pass();
  return fmt::format("# rocebench accept {} ({}): {} of {} node(s) fail; valid for {} h\n# {}\n", s.run, s.time, failed, v.nodes().size(),
                     s.valid_h, how);
}

}  // namespace

long long Stamp::unix_s() const {
  const auto seconds = rfc3339_seconds(time);
  if (!seconds) throw InputError(fmt::format("acceptance {}: its start time '{}' is not RFC 3339", run, printable_excerpt(time)));
  return static_cast<long long>(*seconds);
}

Stamp stamp_of(const Acceptance& a, double valid_h) { return {a.run, a.time, valid_h}; }

bool valid_label_value(std::string_view v) {
  if (v.empty()) return true;
  if (v.size() > kLabelValueMax || !alnum(v.front()) || !alnum(v.back())) return false;
  for (char c : v) {
    if (!label_char(c)) return false;
  }
  return true;
}

std::string label_value(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (label_char(c)) out += c;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  if (out.size() > kLabelValueMax) out.resize(kLabelValueMax);
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  while (!out.empty() && !alnum(out.front())) out.erase(0, 1);
  return out;
}

std::string k8s_manifest(const Verdicts& v, const Stamp& s) {
  std::string out = header(v, s, "kubectl apply -f FILE: labels each node, taints the failed ones NoSchedule, and untaints those that pass again");
  for (const auto& n : v.nodes()) {
    const NodeAction a = action_of(n, s);
    out += fmt::format("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {}\n  labels:\n", yaml_string(a.node));
    for (const auto& [k, value] : a.labels) out += fmt::format("    {}: {}\n", yaml_string(kLabelPrefix + k), yaml_string(value));
    out += fmt::format("  annotations:\n    {}: {}\n", yaml_string(std::string(kLabelPrefix) + "accept-evidence"), yaml_string(a.evidence));
    if (a.taint) {
      out += fmt::format("spec:\n  taints:\n  - key: {}\n    value: \"fail\"\n    effect: \"NoSchedule\"\n", yaml_string(std::string(kLabelPrefix) + "accept"));
    }
  }
  return out;
}

std::string k8s_commands(const Verdicts& v, const Stamp& s) {
  std::string out = header(v, s, "sh FILE: on a passing node the taint removal says 'not found' when it has no taint");
  for (const auto& n : v.nodes()) {
    const NodeAction a = action_of(n, s);
    out += "kubectl label node --overwrite " + sh_word(a.node);
    for (const auto& [k, value] : a.labels) out += " " + sh_word(kLabelPrefix + k + "=" + value);
    out += fmt::format("\nkubectl annotate node --overwrite {} {}\n", sh_word(a.node), sh_word(std::string(kLabelPrefix) + "accept-evidence=" + a.evidence));
    out += a.taint ? fmt::format("kubectl taint node --overwrite {} {}accept=fail:NoSchedule\n", sh_word(a.node), kLabelPrefix)
                   : fmt::format("kubectl taint node {} {}accept:NoSchedule-\n", sh_word(a.node), kLabelPrefix);
  }
  return out;
}

std::string prometheus_metrics(const Verdicts& v, const Stamp& s) {
  const long long t = s.unix_s();
  auto family = [](const std::string& name, const std::string& help) {
    return fmt::format("# HELP rocebench_accept_{} {}\n# TYPE rocebench_accept_{} gauge\n", name, help, name);
  };
  auto labels = [&](const NodeVerdict& n) { return fmt::format("node=\"{}\",run=\"{}\"", prom_label_value(n.host), prom_label_value(s.run)); };
  std::string out = family("pass", "1 when the node passed rocebench accept, 0 when it failed");
  for (const auto& n : v.nodes()) out += fmt::format("rocebench_accept_pass{{{}}} {}\n", labels(n), n.pass() ? 1 : 0);
  // One series per distinct finding (code, stage, evidence) of `family_name`: a node's reasons or warnings.
  auto finding_series = [&](const std::string& family_name, const std::string& help, std::vector<Finding> NodeVerdict::*which) {
    std::string series;
    for (const auto& n : v.nodes()) {
      std::set<std::string> seen;
      for (const auto& f : n.*which) {
        const std::string line = fmt::format("rocebench_accept_{}{{{},code=\"{}\",stage=\"{}\",evidence=\"{}\"}} 1\n", family_name, labels(n),
                                             prom_label_value(f.code), prom_label_value(f.stage), prom_label_value(f.evidence));
        if (seen.insert(line).second) series += line;
      }
    }
    return series.empty() ? "" : family(family_name, help) + series;
  };
  out += finding_series("reason", "1 for each reason a node failed for (code, stage, evidence)", &NodeVerdict::findings);
  out += finding_series("warning", "1 for each warning on a node that passed or failed (code, stage, evidence)", &NodeVerdict::warnings);
  const std::pair<const char*, const char*> figures[] = {
      {kPairGbps, "the median bandwidth of the node's pairs in the link matrix, Gb/s"},
      {kPairLatency, "the median latency of the node's pairs in the link matrix, seconds"},
      {kBusbwGbps, "the bus bandwidth of the ring allreduce the node last ran in, Gb/s"},
      {kImagesPerS, "images/s the node's own compute delivered in the data-parallel training run"},
      {kLossResent, "what the node sent again under incast, over every turn (TCP segments, or RDMA sequence NAKs, ACK timeouts and retries exhausted)"},
      {kLossPaused, "the time the node's NIC priorities were paused under incast, both ways, seconds"}};
  for (const auto& [name, help] : figures) {
    std::string series;
    for (const auto& n : v.nodes()) {
      if (const auto it = n.figures.find(name); it != n.figures.end()) {
        series += fmt::format("rocebench_accept_{}{{{}}} {:.17g}\n", name, labels(n), it->second);
      }
    }
    if (!series.empty()) out += family(name, help) + series;
  }
  const std::pair<const char*, const char*> per_priority[] = {
      {kPriorityBytes, "the bytes the node's NIC carried on each priority under incast, both ways"},
      {kPriorityPaused, "the time the node's NIC was paused on each priority under incast, both ways, seconds"},
      {kPriorityDiscards, "the packets the node's NIC received and discarded on each priority under incast"}};
  for (const auto& [name, help] : per_priority) {
    const std::string prefix = std::string(name) + "/";
    std::string series;
    for (const auto& n : v.nodes()) {
      for (auto it = n.figures.lower_bound(prefix); it != n.figures.end() && it->first.starts_with(prefix); ++it) {
        series += fmt::format("rocebench_accept_{}{{{},priority=\"{}\"}} {:.17g}\n", name, labels(n),
                              it->first.substr(prefix.size()), it->second);
      }
    }
    if (!series.empty()) out += family(name, help) + series;
  }
  out += family("time_seconds", "when the acceptance started, Unix time");
  for (const auto& n : v.nodes()) out += fmt::format("rocebench_accept_time_seconds{{{}}} {}\n", labels(n), t);
  out += family("valid_until_seconds", "until when the acceptance's verdict holds, Unix time");
  for (const auto& n : v.nodes()) {
    out += fmt::format("rocebench_accept_valid_until_seconds{{{}}} {}\n", labels(n), s.valid_until_s());
  }
  return out;
}

std::string slurm_reason(const NodeVerdict& n) {
  if (n.pass()) return "";
  std::string text = kSlurmReasonPrefix + n.findings.front().code + ": " + n.findings.front().evidence;
  for (char& c : text) c = static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  if (text.size() > kSlurmReasonMax) {
    std::size_t cut = kSlurmReasonMax - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // never inside a UTF-8 character
    text = text.substr(0, cut) + "...";
  }
  return text;
}

std::vector<SlurmAction> slurm_actions(const Verdicts& v, bool drain, bool resume, const std::map<std::string, std::string>& drained) {
  std::vector<SlurmAction> out;
  for (const auto& n : v.nodes()) {
    const auto it = drained.find(n.host);
    const bool ours = it != drained.end() && it->second.rfind(kSlurmReasonPrefix, 0) == 0;
    if (it != drained.end() && !ours && (drain || resume)) {
      out.push_back({n.host, {}, fmt::format("left as it is: drained by someone else ({})", it->second)});
    } else if (!n.pass() && drain) {
      out.push_back({n.host, {"scontrol", "update", "nodename=" + n.host, "state=drain", "reason=" + slurm_reason(n)}, "fails"});
    } else if (n.pass() && resume && ours) {
      out.push_back({n.host, {"scontrol", "update", "nodename=" + n.host, "state=resume"}, "passes now; rocebench drained it: " + it->second});
    }
  }
  return out;
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + sh_word(a);
  return out;
}

void declare_action_options(ArgParser& p, ActionOptions& o) {
  p.option("--k8s", &o.k8s, "write each node's verdict as Kubernetes labels (and a NoSchedule taint on a failed node), "
                            "a manifest for kubectl apply -f", "FILE")
      .option("--k8s-commands", &o.k8s_commands, "the same as kubectl label/annotate/taint lines (sh FILE)", "FILE")
      .option("--metrics", &o.metrics, "write each node's verdict, reasons and figures for node_exporter's textfile collector "
                                       "(e.g. /var/lib/node_exporter/rocebench_accept.prom)", "FILE")
      .option("--valid-hours", &o.valid_h, "how long the verdict holds: written with it (default 24)", "H")
      .range(0.01, 24 * 366);
}

void check_action_options(const ActionOptions& o) {
  if (!o.k8s.empty()) require_writable(o.k8s, "--k8s");
  if (!o.k8s_commands.empty()) require_writable(o.k8s_commands, "--k8s-commands");
  if (!o.metrics.empty()) require_writable(o.metrics, "--metrics");
}

void write_actions(const ActionOptions& o, const Verdicts& v, const Stamp& s) {
  if (!o.k8s.empty()) {
    write_file_atomically(o.k8s, k8s_manifest(v, s));
    std::cout << fmt::format("kubernetes: labels and taints in {} (kubectl apply -f {}), valid for {} h\n", o.k8s, o.k8s, s.valid_h);
  }
  if (!o.k8s_commands.empty()) {
    write_file_atomically(o.k8s_commands, k8s_commands(v, s));
    std::cout << fmt::format("kubernetes: kubectl commands in {} (sh {})\n", o.k8s_commands, o.k8s_commands);
  }
  if (!o.metrics.empty()) {
    write_file_atomically(o.metrics, prometheus_metrics(v, s));
    std::cout << fmt::format("prometheus: each node's verdict and figures in {}\n", o.metrics);
  }
}

}  // namespace rocebench::reports::accept
