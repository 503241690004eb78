#include "rocebench/reports/accept_judges.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "accept_nodes.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/reports/links.hpp"
#include "rocebench/reports/netcheck_verdict.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports::accept {

Verdicts::Verdicts(const std::vector<std::string>& hosts) {
  for (const auto& h : hosts) nodes_.push_back({h, {}, {}, {}, {}});
}

NodeVerdict& Verdicts::node(const std::string& host) {
  for (auto& n : nodes_) {
    if (n.host == host) return n;
  }
  nodes_.push_back({host, {}, {}, {}, {}});  // a host the stages met but the host list did not name
  return nodes_.back();
}

void Verdicts::stage(const std::string& host, const std::string& stage, const std::string& cell) {
  if (std::find(stages_.begin(), stages_.end(), stage) == stages_.end()) stages_.push_back(stage);
  node(host).stages[stage] = cell;
}

void Verdicts::fail(const std::string& host, Finding finding) {
  stage(host, finding.stage, "FAIL " + finding.code);
  node(host).findings.push_back(std::move(finding));
}

void Verdicts::warn(const std::string& host, Finding finding) {
  stage(host, finding.stage, "warn " + finding.code);
  node(host).warnings.push_back(std::move(finding));
}

void Verdicts::figure(const std::string& host, const std::string& name, double value) { node(host).figures[name] = value; }

void Verdicts::ran(const std::string& stage, const std::vector<std::string>& hosts) {
  for (const auto& host : hosts) {
    if (!node(host).stages.count(stage)) {
      fail(host, {kUnverified, stage, fmt::format("the {} stage gave no evidence of this node: none of its records names it", stage)});
    }
  }
}

bool Verdicts::pass() const {
  return cluster_.empty() && std::all_of(nodes_.begin(), nodes_.end(), [](const NodeVerdict& n) { return n.pass(); });
}

namespace {

std::string short_json(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Settings netcheck reports without a profile value (kernel, driver, NIC firmware): a node whose
// value differs from what a strict majority of the fleet has is CONFIG, naming both.
void judge_consistency(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts) {
  std::map<std::string, std::map<std::string, std::string>> values;  // "check subject" -> host -> value
  for (const auto& r : records) {
    const std::string host = r.value("host", "");
    if (r.value("kind", "") != "check" || r.value("status", "") != "ok" || !r.contains("expected") ||
        !r["expected"].is_null() || r.value("observed", json()).is_null() ||
        std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
      continue;
    }
    values[fmt::format("{} {}", r.value("check", ""), r.value("subject", ""))][host] = short_json(r.value("observed", json()));
  }
  for (const auto& [setting, by_host] : values) {
    std::map<std::string, std::size_t> count;
    for (const auto& [host, value] : by_host) ++count[value];
    const auto majority = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (count.size() < 2 || 2 * majority->second <= by_host.size()) continue;
    for (const auto& [host, value] : by_host) {
      if (value == majority->first) continue;
      v.fail(host, {kConfig, "netcheck", fmt::format("{}: {} differs from the fleet's {} ({} of {} nodes)", setting, value,
                                                     majority->first, majority->second, by_host.size())});
    }
  }
}

}  // namespace

void judge_netcheck(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts) {
  // Each host's verdict is netcheck's own (netcheck_verdict.hpp); the failed and unverified checks are its evidence.
  const NetcheckJudgement judged = judge_netcheck_checks(records);
  for (const auto& host : hosts) {
    const auto h = std::find_if(judged.hosts.begin(), judged.hosts.end(), [&](const NetcheckHost& n) { return n.host == host; });
    if (h == judged.hosts.end()) continue;  // this host's checks did not run
    const auto count = [&](const char* status) { return h->counts.count(status) ? h->counts.at(status) : std::size_t{0}; };
    std::vector<std::string> failed, unverified;
    for (const auto& r : records) {
      if (r.value("kind", "") != "check" || r.value("host", "") != host) continue;
      const std::string status = r.value("status", "");
      const std::string what = fmt::format("{} {}", r.value("check", ""), r.value("subject", ""));
      if (status == "fail") {
        failed.push_back(fmt::format("{}: {} (expected {})", what, short_json(r.value("observed", json())),
                                     short_json(r.value("expected", json()))));
      } else if (status == "unverified") {
        unverified.push_back(fmt::format("{}: {}", what, r.value("reason", "could not be read")));
      }
    }
    if (h->verdict == "fail") v.fail(host, {kConfig, "netcheck", fmt::format("{}", fmt::join(failed, "; "))});
    if (h->verdict == "fail" || h->verdict == "unverified") {
      if (!unverified.empty()) v.fail(host, {kUnverified, "netcheck", fmt::format("{}", fmt::join(unverified, "; "))});
    } else if (h->verdict == "skip") {
      v.stage(host, "netcheck", fmt::format("skip ({} checks: no RDMA device)", count("skip")));
    } else {
      const std::size_t warned = count("warn"), skipped = count("skip");
      v.stage(host, "netcheck", fmt::format("ok ({} checks{}{})", count("ok"), warned ? fmt::format(", {} warned", warned) : "",
                                            skipped ? fmt::format(", {} skipped", skipped) : ""));
    }
  }
  judge_consistency(v, records, hosts);
  v.ran("netcheck", hosts);
}

namespace {

using GpuId = std::pair<std::string, long long>;  // node, GPU index (params.gpu; 0 in records from before it)

// A GPU figure of each GPU: GEMM TFLOP/s of the profile's type, or pinned host-to-device GB/s, at
// the largest size measured.
struct GpuFigure {
  std::string what, unit;
  double rated;
  std::map<GpuId, std::pair<long long, double>> by_gpu;  // GPU -> (size, figure)
};

}  // namespace

void judge_gpu(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts,
               const std::map<std::string, std::string>& no_gpu, const Profile& profile) {
  // The table's cell says the gist ("no GPU"); the finding keeps the whole reason.
  auto gist = [](const std::string& why) { return "skip (" + why.substr(0, why.find(':')) + ")"; };
  for (const auto& [host, why] : no_gpu) {
    if (profile.gpu_required) v.fail(host, {kUnverified, "gpu", "the profile requires a GPU: " + why});
    else v.stage(host, "gpu", gist(why));
  }
  GpuFigure gemm{fmt::format("GEMM {}", profile.gemm_type), "TFLOP/s", profile.gemm_tflops, {}};
  GpuFigure h2d{"pinned host-to-device copy", "GB/s", profile.h2d_GBps, {}};
  std::map<GpuId, std::string> failed;  // a GPU whose benchmarks ended in error or skip, and why
  std::set<std::string> measured;       // nodes with at least one figure
  for (const auto& r : records) {
    const json params = r.value("params", json::object());
    const std::string bench = params.value("benchmark", ""), host = r.value("host", "");
    if (r.value("step", "") != "microbench.host" || bench.rfind("gpu_", 0) != 0) continue;
    const GpuId gpu{host, params.value("gpu", 0LL)};
    if (r.value("status", "") != "ok") {
      failed[gpu] = r.value("reason", r.value("status", ""));
      continue;
    }
    auto keep = [&](GpuFigure& figure, long long size, const char* metric) {
      auto& [at, value] = figure.by_gpu[gpu];
      if (size >= at) at = size, value = r["metrics"].value(metric, 0.0);
      measured.insert(host);
    };
    if (bench == "gpu_gemm" && params.value("type", "") == profile.gemm_type) keep(gemm, params.value("n", 0LL), "TFLOP_per_s_median");
    if (bench == "gpu_copy" && params.value("dir", "") == "h2d" && params.value("memory", "") == "pinned") {
      keep(h2d, params.value("bytes", 0LL), "bw_GBps_median");
    }
  }
  for (const auto& [gpu, why] : failed) {
    const auto& [host, index] = gpu;
    if (gemm.by_gpu.count(gpu) || h2d.by_gpu.count(gpu)) continue;
    if (measured.count(host)) {  // the node's other GPUs ran: this one is faulty
      v.fail(host, {kGpu, "gpu", fmt::format("GPU {}: its benchmarks did not run: {}", index, why)});
    } else if (profile.gpu_required) {
      v.fail(host, {kUnverified, "gpu", "the GPU benchmarks did not run: " + why});
    } else {
      v.stage(host, "gpu", gist(why));
    }
  }
  std::map<std::string, std::vector<std::string>> cells;
  for (const GpuFigure* figure : {&gemm, &h2d}) {
    if (figure->by_gpu.empty()) continue;
    std::vector<double> all;
    std::map<std::string, std::vector<double>> of_node;
    for (const auto& [gpu, f] : figure->by_gpu) {
      all.push_back(f.second);
      of_node[gpu.first].push_back(f.second);
    }
    const double reference = figure->rated > 0 ? figure->rated : median_of(all);
    const std::string against = figure->rated > 0 ? fmt::format("the rated {}", number(figure->rated))
                                                   : fmt::format("the fleet's median {}", number(reference));
    for (const auto& [gpu, f] : figure->by_gpu) {
      if (f.second < profile.gpu_fraction * reference) {
        v.fail(gpu.first, {kGpu, "gpu", fmt::format("GPU {}: {}: {} {}, below {} x {}", gpu.second, figure->what, number(f.second),
                                                    figure->unit, profile.gpu_fraction, against)});
      }
    }
    for (const auto& [host, values] : of_node) {
      const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      cells[host].push_back(values.size() == 1 ? fmt::format("{} {}", number(*lo), figure->unit)
                                               : fmt::format("{}–{} {} on {} GPUs", number(*lo), number(*hi), figure->unit, values.size()));
    }
  }
  for (const auto& node : v.nodes()) {
    const auto it = cells.find(node.host);
    if (it != cells.end() && !node.stages.count("gpu")) v.stage(node.host, "gpu", fmt::format("ok ({})", fmt::join(it->second, ", ")));
  }
  v.ran("gpu", hosts);
}

void judge_training(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts, const Profile& profile) {
  const json* run = nullptr;  // the record at the largest world
  for (const auto& r : records) {
    if (r.value("step", "") == "models.scaling" && r.value("kind", "") == "result" &&
        (!run || r.value("world", 0) >= run->value("world", 0))) {
      run = &r;
    }
  }
  if (run && run->value("status", "") == "skip") {
    const std::string why = run->value("reason", "skipped");
    for (const auto& host : hosts) {
      if (profile.gpu_required) v.fail(host, {kUnverified, "train", "the profile requires a GPU: " + why});
      else v.stage(host, "train", "skip (" + why.substr(0, why.find(':')) + ")");
    }
    return;
  }
  std::map<std::string, double> by_host;  // node -> images/s from its own compute
  std::map<std::string, std::string> detail;
  if (run && run->value("status", "") == "ok") {
    for (const auto& rank : run->value("samples", json::object()).value("per_rank", json::array())) {
      const std::string host = rank.value("host", "");
      by_host[host] = rank.value("compute_images_per_s", 0.0);
      detail[host] = fmt::format("{} images/s from its own compute ({} ms a step), {} with the group's waits", number(by_host[host]),
                                 number(rank.value("compute_ms_p50", 0.0)), number(rank.value("images_per_s", 0.0)));
    }
  }
  std::vector<double> all;
  for (const auto& [host, value] : by_host) all.push_back(value);
  const double median = all.empty() ? 0.0 : median_of(all);
  const std::string what = fmt::format("{} {} batch {} on {} node(s)", profile.train_model, profile.train_engine, profile.train_batch, all.size());
  for (const auto& host : hosts) {
    const auto it = by_host.find(host);
    if (it != by_host.end()) v.figure(host, kImagesPerS, it->second);
    if (it == by_host.end()) {
      v.fail(host, {kUnverified, "train", run ? fmt::format("the training run ({}) has no figure of this node", run->value("status", "?"))
                                              : "the training run did not complete"});
    } else if (it->second < profile.train_fraction * median) {
      v.fail(host, {kTrain, "train", fmt::format("{}: {}, below {} x the fleet's median {}", what, detail[host], profile.train_fraction,
                                                 number(median))});
    } else {
      v.stage(host, "train", fmt::format("ok ({} images/s)", number(it->second)));
    }
  }
  v.ran("train", hosts);
}

namespace {

bool is_pair(const json& r) {
  return r.value("kind", "") == "result" && r.value("step", "") == "microbench.allpairs" &&
         !r.value("params", json::object()).value("summary", false);
}

// The figure a pair record is judged by (bw_avg_Gbps or the latency), the first of its metrics.
std::string pair_metric(const json& r) {
  if (!r.contains("metrics") || !r["metrics"].is_object()) return "";
  for (auto it = r["metrics"].begin(); it != r["metrics"].end(); ++it) {
    if (it.key().rfind("retest_", 0) != 0) return it.key();
  }
  return "";
}

}  // namespace

double median_pair_bandwidth(const std::vector<json>& records) {
  std::vector<double> values;
  for (const auto& r : records) {
    if (is_pair(r) && r["metrics"].contains("bw_avg_Gbps")) values.push_back(r["metrics"]["bw_avg_Gbps"].get<double>());
  }
  return values.empty() ? 0.0 : median_of(values);
}

void judge_links(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts, const Profile& profile) {
  // Each pair's first figure and its retests alone, as the step measured them; the bad-link rule,
  // under this profile, says which pairs stay bad, which hosts explain them, and what it would retest.
  std::vector<const json*> pairs;
  std::string metric;
  for (const auto& r : records) {
    if (is_pair(r) && !pair_metric(r).empty()) {
      metric = pair_metric(r);
      pairs.push_back(&r);
    }
  }
  if (pairs.empty()) {  // no pair was measured: no node has evidence
    v.ran("links", hosts);
    return;
  }
  std::vector<std::string> matrix;  // the matrix's hosts, by index
  auto index = [&](const std::string& host) {
    const auto it = std::find(matrix.begin(), matrix.end(), host);
    if (it != matrix.end()) return static_cast<int>(it - matrix.begin());
    matrix.push_back(host);
    return static_cast<int>(matrix.size()) - 1;
  };
  std::vector<PairHistory> history;
  for (const json* r : pairs) {
    const json& params = (*r)["params"];
    const json& metrics = (*r)["metrics"];
    PairHistory h{{index(params.value("dst", "")), index(params.value("src", ""))}, metrics.value(metric, 0.0), {}};
    const json retests = r->value("samples", json::object()).value("retests", json::array());
    for (const auto& x : retests) {
      if (x.is_number()) h.retests.push_back(x.get<double>());
    }
    if (h.retests.empty() && metrics.contains("retest_" + metric)) h.retests.push_back(metrics.value("retest_" + metric, 0.0));
    history.push_back(std::move(h));
  }
  const bool bandwidth = metric.find("Gbps") != std::string::npos;  // else a latency in us
  // "write_bw over verbs, ": which probe measured the figures (a tcp and a verbs matrix differ)
  const json& probe = (*pairs.front())["params"];
  const std::string measured_by =
      probe.contains("test") && probe.contains("transport") ? fmt::format("{} over {}, ", probe["test"].get<std::string>(), probe["transport"].get<std::string>()) : "";
  RetestPolicy policy;
  policy.rule.higher_is_better = bandwidth;
  policy.rule.bw_fraction = profile.link_fraction;
  const PairsJudgement j = judge_pairs(history, policy);
  std::set<std::string> bad;
  for (int h : j.bad_hosts) bad.insert(matrix[static_cast<std::size_t>(h)]);
  std::map<std::string, std::vector<std::string>> unsettled;  // host -> its pairs the rule would retest alone
  for (const std::size_t i : j.retest) {
    const auto& [a, b] = history[i].pair;
    const std::string pair = fmt::format("{}<->{}", matrix[static_cast<std::size_t>(b)], matrix[static_cast<std::size_t>(a)]);
    unsettled[matrix[static_cast<std::size_t>(a)]].push_back(pair);
    unsettled[matrix[static_cast<std::size_t>(b)]].push_back(pair);
  }
  // The rule flags a pair against the best one, so the evidence names that pair and its figure (with
  // three nodes the median would be the slow node's own pair).
  std::string best_pair;
  for (const auto& h : history) {
    if (h.first == j.best) {
      best_pair = fmt::format("{}<->{}", matrix[static_cast<std::size_t>(h.pair.second)], matrix[static_cast<std::size_t>(h.pair.first)]);
      break;
    }
  }
  for (const auto& host : hosts) {
    std::vector<double> own, retests;
    for (const json* r : pairs) {
      if ((*r)["params"].value("src", "") != host && (*r)["params"].value("dst", "") != host) continue;
      own.push_back((*r)["metrics"][metric].get<double>());
      if ((*r)["metrics"].contains("retest_" + metric)) retests.push_back((*r)["metrics"]["retest_" + metric].get<double>());
    }
    if (own.empty()) continue;
    const auto [lo, hi] = std::minmax_element(own.begin(), own.end());
    v.figure(host, bandwidth ? kPairGbps : kPairLatency, bandwidth ? median_of(own) : median_of(own) * 1e-6);
    const std::string unit = bandwidth ? " Gb/s" : " us";
    const std::string rule = bandwidth ? fmt::format("a pair below {}% of it is bad", number(profile.link_fraction * 100))
                                       : fmt::format("a pair above {}x it is bad", number(policy.rule.lat_factor));
    const std::string figures = fmt::format("{}pairs with {}: {}–{}{} against the best pair's {}{} ({}; {})", measured_by, host, number(*lo),
                                            number(*hi), unit, number(j.best), unit, best_pair, rule);
    if (unsettled.count(host)) {
      v.fail(host, {kUnverified, "links", fmt::format("{}; under this profile the pair(s) {} would be retested alone, which this "
                                                      "acceptance did not do", figures, fmt::join(unsettled.at(host), ", "))});
    } else if (bad.count(host)) {
      const std::string retest = retests.empty() ? "" : fmt::format("; retest {}", number(median_of(retests)));
      v.fail(host, {kLink, "links", figures + retest});
    } else {
      v.stage(host, "links", fmt::format("ok ({}{}, median of its pairs)", number(median_of(own)), unit));
    }
  }
  v.ran("links", hosts);
}

void judge_lossless(Verdicts& v, const std::vector<json>& records, const std::vector<std::string>& hosts, const Profile& profile,
                    const PfcPriorities& pfc) {
  for (const auto& h : judge_incast(records, profile.transport, profile.lossless_rule, pfc)) {
    if (std::find(hosts.begin(), hosts.end(), h.host) == hosts.end()) continue;
    if (h.resent >= 0) v.figure(h.host, kLossResent, static_cast<double>(h.resent));
    if (profile.transport == "verbs") v.figure(h.host, kLossPaused, h.paused_s);
    for (const auto& [n, c] : h.priorities) {
      v.figure(h.host, priority_figure(kPriorityBytes, n), static_cast<double>(c.bytes));
      v.figure(h.host, priority_figure(kPriorityPaused, n), static_cast<double>(c.paused_us) / 1e6);
      v.figure(h.host, priority_figure(kPriorityDiscards, n), static_cast<double>(c.discards));
    }
    const std::string evidence = fmt::format("{}", fmt::join(h.evidence, "; "));
    if (h.verdict == "LOSSY") v.fail(h.host, {kLossy, "lossless", evidence});
    else if (h.verdict == "unverified") v.fail(h.host, {kUnverified, "lossless", evidence});
    else if (h.verdict == "CONGESTED") v.warn(h.host, {kCongested, "lossless", evidence});
    else v.stage(h.host, "lossless", h.marked ? "ok (ECN marked, no loss)" : "ok (no loss)");
  }
  v.ran("lossless", hosts);
}

namespace {

using detail::rows;

std::vector<const StageRun*> runs_of(const Acceptance& a, const std::string& stage) {
  std::vector<const StageRun*> out;
  for (const auto& s : a.runs) {
    if (s.stage == stage) out.push_back(&s);
  }
  return out;
}

// Links and allreduce measure the transport: a stage measured over another transport than the profile
// accepts over, or the links with another probe, is no evidence under it. "" when they agree.
std::string measured_otherwise(const std::vector<const StageRun*>& runs, const Profile& p) {
  for (const StageRun* s : runs) {
    for (const auto& r : s->records) {
      if (r.value("kind", "") != "result" || !r.contains("params")) continue;
      const json& params = r["params"];
      const std::string transport = params.value("transport", p.transport);
      if (transport != p.transport) {
        return fmt::format("measured over {}, and profile {} accepts over {}: run accept under it", transport, p.file, p.transport);
      }
      const std::string test = params.value("test", "");
      if (s->stage == "links" && !test.empty() && test != link_probe_test(p)) {
        return fmt::format("measured with the {} probe, and profile {} judges links by {}: run accept under it", test, p.file,
                           link_probe_test(p));
      }
    }
  }
  return "";
}

// "(exit 3, twice)": a stage that did not complete was run once more.
std::string exits(const std::vector<const StageRun*>& runs) {
  return fmt::format("(exit {}{})", runs.back()->exit_code, runs.size() > 1 ? ", twice" : "");
}

// The run a stage is judged from: its last, when it completed over the profile's transport; else every
// node is UNVERIFIED for the stage, saying why (`what`: "the link matrix"), and there is none.
const StageRun* judged_run(Verdicts& v, const Acceptance& a, const std::string& stage, const std::string& what,
                           const std::vector<Node>& nodes, const Profile& profile) {
  const auto runs = runs_of(a, stage);
  std::string why;
  if (runs.empty()) why = what + " was not recorded (the acceptance ended before it, or its profile did not ask it)";
  else if (!runs.back()->completed()) why = what + " did not complete " + exits(runs);
  else if (const std::string otherwise = measured_otherwise({runs.back()}, profile); !otherwise.empty()) why = what + " was " + otherwise;
  if (why.empty()) return runs.back();
  for (const auto& n : nodes) v.fail(n.host, {kUnverified, stage, why});
  return nullptr;
}

// Stage 1: every node in one run; when it does not complete, each node in a run alone.
struct HostsStage {
  std::vector<Node> reachable;
  std::vector<json> records;  // of the runs that completed
  std::map<std::string, std::string> unreachable;  // node -> why
  std::vector<Node> unrecorded;                     // no run of theirs was recorded
};

HostsStage hosts_stage(const Acceptance& a) {
  HostsStage h;
  const auto runs = runs_of(a, "hosts");
  if (!runs.empty() && runs.front()->completed()) {
    h.reachable = runs.front()->group;
    h.records = runs.front()->records;
    return h;
  }
  for (const auto& node : a.nodes) {
    const auto alone = std::find_if(runs.begin() + (runs.empty() ? 0 : 1), runs.end(),
                                    [&](const StageRun* s) { return s->group == std::vector<Node>{node}; });
    if (alone == runs.end()) {
      h.unrecorded.push_back(node);
    } else if ((*alone)->completed()) {
      h.reachable.push_back(node);
      h.records.insert(h.records.end(), (*alone)->records.begin(), (*alone)->records.end());
    } else {
      h.unreachable[node.host] = (*alone)->lost.empty() ? fmt::format("its run alone ended with exit {}", (*alone)->exit_code) : (*alone)->lost;
    }
  }
  return h;
}

// The run records say which nodes have a GPU, and why not.
std::map<std::string, std::string> without_gpu(const std::vector<json>& records) {
  std::map<std::string, std::string> out;
  for (const auto& r : records) {
    if (r.value("kind", "") != "run") continue;
    for (const auto& h : r.value("hosts", json::array())) {
      const json gpu = h.value("gpu", json::object());
      if (gpu.value("devices", json::array()).empty()) out[h.value("hostname", "")] = gpu.value("reason", "no GPU");
    }
  }
  return out;
}

}  // namespace

std::vector<Node> reachable_nodes(const Acceptance& a) { return hosts_stage(a).reachable; }

std::map<std::string, std::string> nodes_without_gpu(const Acceptance& a) { return without_gpu(hosts_stage(a).records); }

AllreduceThreshold allreduce_threshold(const Profile& profile, const Acceptance& a) {
  const auto links = runs_of(a, "links");
  const bool measured = !links.empty() && links.back()->completed();
  return allreduce_threshold(profile, measured ? median_pair_bandwidth(links.back()->records) : 0.0);
}

Verdicts judge_acceptance(const Acceptance& a, const Profile& profile) {
  Verdicts v(rows(a.nodes));
  // Stage 1: who joined, and their setup.
  const HostsStage hosts = hosts_stage(a);
  for (const auto& node : a.nodes) {
    if (hosts.unreachable.count(node.host)) {
      v.fail(node.host, {kUnreachable, "hosts", "failed with the others and alone: " + hosts.unreachable.at(node.host)});
    } else if (std::find(hosts.unrecorded.begin(), hosts.unrecorded.end(), node) != hosts.unrecorded.end()) {
      v.fail(node.host, {kUnverified, "hosts", "no hosts-stage run of this node was recorded (the acceptance ended before it)"});
    }
  }
  const std::vector<Node>& reachable = hosts.reachable;
  for (const auto& node : reachable) v.stage(node.host, "hosts", "ok");
  judge_netcheck(v, hosts.records, rows(reachable));
  // Stages 2 and 3: the link matrix, and the allreduce against it (or against the rated link).
  if (reachable.size() >= 2) {
    if (const StageRun* links = judged_run(v, a, "links", "the link matrix", reachable, profile)) {
      judge_links(v, links->records, rows(reachable), profile);
    }
    // Lossless under load, where the profile asks it (a quick acceptance leaves it out, as the allreduce).
    if (profile.lossless && !a.quick) {
      if (const StageRun* incast = judged_run(v, a, "lossless", "the incast", reachable, profile)) {
        judge_lossless(v, incast->records, rows(reachable), profile, pfc_priorities(hosts.records));
      }
    }
    // A quick acceptance (a health check between jobs) measures no collective: it is left out, not UNVERIFIED.
    const AllreduceThreshold t = a.quick ? AllreduceThreshold{} : allreduce_threshold(profile, a);
    if (t.defined()) {
      const std::string otherwise = measured_otherwise(runs_of(a, "allreduce"), profile);
      if (otherwise.empty()) judge_allreduce(v, allreduce_search(reachable, t, recorded_allreduce(a)), t);
      for (const auto& n : reachable) {
        if (!otherwise.empty()) v.fail(n.host, {kUnverified, "allreduce", "the allreduce was " + otherwise});
      }
      v.ran("allreduce", rows(reachable));
    }
  }
  // Stages 4 and 5: every GPU, and a short training run.
  if (!reachable.empty()) {
    const auto no_gpu = without_gpu(hosts.records);
    std::map<std::string, std::string> left_out;
    std::vector<Node> with_gpu;
    for (const auto& n : reachable) {
      if (no_gpu.count(n.host)) left_out[n.host] = no_gpu.at(n.host);
      else with_gpu.push_back(n);
    }
    std::vector<json> records;
    if (!with_gpu.empty()) {
      const auto gpu = runs_of(a, "gpu");
      if (!gpu.empty()) records = gpu.back()->records;
      for (const auto& n : with_gpu) {  // the column stays, with the failure, beside what its records still say
        if (gpu.empty()) v.fail(n.host, {kUnverified, "gpu", "the GPU benchmarks were not recorded (the acceptance ended before them)"});
        else if (!gpu.back()->completed()) v.fail(n.host, {kUnverified, "gpu", "the GPU benchmarks did not complete " + exits(gpu)});
      }
    }
    judge_gpu(v, records, rows(reachable), left_out, profile);
    if (!a.quick) {
      const auto train = runs_of(a, "train");
      const bool trained = !train.empty() && train.back()->completed();
      judge_training(v, trained ? train.back()->records : std::vector<json>{}, rows(reachable), profile);
    }
  }
  if (!a.finished) {
    v.fail_cluster({kUnverified, "accept", fmt::format("{} has no accept.end record: the acceptance stopped before its end, and "
                                                       "what it did not run is not judged", kAcceptRecords)});
  }
  return v;
}

}  // namespace rocebench::reports::accept
