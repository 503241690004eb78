#include "rocebench/reports/acceptance.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/located_json.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/reports/links.hpp"
#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports::accept {

namespace {

// Every key a profile may have, with its range: the one declaration load_profile checks against.
const json& profile_schema() {
  static const json schema = json::parse(R"schema({
    "type": "object",
    "additionalProperties": false,
    "properties": {
      "name": {"type": "string", "minLength": 1},
      "description": {"type": "string"},
      "netcheck_profile": {"type": "string", "minLength": 1},
      "rdma_required": {"type": "boolean"},
      "link": {"type": "object", "additionalProperties": false, "properties": {
        "test": {"enum": ["bw", "lat"]},
        "duration_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 600},
        "bytes": {"type": "integer", "minimum": 1, "maximum": 1073741824},
        "fraction_of_best": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
      "allreduce": {"type": "object", "additionalProperties": false, "properties": {
        "bytes": {"type": "integer", "minimum": 8, "maximum": 17179869184},
        "iters": {"type": "integer", "minimum": 1, "maximum": 100000},
        "busbw_fraction_of_median_pair": {"type": "number", "exclusiveMinimum": 0, "maximum": 2},
        "rated_link_Gbps": {"type": "number", "exclusiveMinimum": 0},
        "busbw_fraction_of_rated": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
      "gpu": {"type": "object", "additionalProperties": false, "properties": {
        "required": {"type": "boolean"},
        "gemm_type": {"type": "string", "minLength": 1},
        "gemm_tflops": {"type": "number", "exclusiveMinimum": 0},
        "h2d_GBps": {"type": "number", "exclusiveMinimum": 0},
        "fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
      "train": {"type": "object", "additionalProperties": false, "properties": {
        "model": {"type": "string", "minLength": 1},
        "engine": {"enum": ["replay", "cpu", "gpu"]},
        "timeline": {"type": "string", "minLength": 1},
        "precision": {"enum": ["fp32", "tf32", "bf16", "fp16"]},
        "batch": {"type": "integer", "minimum": 1, "maximum": 65536},
        "iters": {"type": "integer", "minimum": 1, "maximum": 100000},
        "steps": {"not": {}, "errorMessage": "'steps' is now 'iters'"},
        "fraction_of_median": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
      "sources": {"type": "object", "additionalProperties": {"type": "string"}}
    }
  })schema");
  return schema;
}

const char* const kAutoProfile = R"json({
  "name": "auto",
  "description": "Each node against the fleet's own figures: no rated number, so any hardware can be judged.",
  "netcheck_profile": "lossless-roce",
  "rdma_required": false,
  "link": {"test": "bw", "duration_s": 1, "bytes": 131072, "fraction_of_best": 0.8},
  "allreduce": {"bytes": 1048576, "iters": 5, "busbw_fraction_of_median_pair": 0.7},
  "gpu": {"required": false, "gemm_type": "bf16", "fraction": 0.9},
  "train": {"model": "resnet20_cifar", "engine": "replay", "timeline": "cpu-resnet20_cifar-fp32-b16", "batch": 16, "iters": 10, "fraction_of_median": 0.8},
  "sources": {
    "gpu.fraction": "a GPU below 90% of the fleet's median GEMM or host-to-device copy is slow",
    "train.timeline": "measured by rocebench train --profile on the dev VM (AMD EPYC, 2 vCPUs, 1 oneDNN thread); replayed, it needs no GPU, and resnet20's 1 MiB of gradients keep 8 emulated hosts' run short (resnet50's 98 MiB would take seconds per step at 200 Mbit/s)",
    "train.fraction_of_median": "a node whose own compute delivers below 80% of the fleet's median images/s is slow, chosen, not yet measured against a fleet",
    "link.fraction_of_best": "a pair below 80% of the fleet's best pair, also when retested alone, is a bad link",
    "allreduce.busbw_fraction_of_median_pair": "a ring allreduce moves every byte over every link: its busbw is bounded by the slowest pair; 70% of the median pair is a margin for the ring's own overhead, chosen, not yet measured against NCCL"
  }
})json";

// A node type with its datasheet ratings: NVIDIA HGX H100 SXM5 with a 400 Gb/s RoCE NIC per GPU.
const char* const kH100Profile = R"json({
  "name": "h100-sxm-400g",
  "description": "HGX H100 SXM5 nodes, one 400 Gb/s ConnectX-7 RoCE v2 NIC per GPU, lossless fabric.",
  "netcheck_profile": "lossless-roce",
  "rdma_required": true,
  "link": {"test": "bw", "duration_s": 2, "bytes": 1048576, "fraction_of_best": 0.93},
  "allreduce": {"bytes": 268435456, "iters": 20, "rated_link_Gbps": 400, "busbw_fraction_of_rated": 0.85},
  "gpu": {"required": true, "gemm_type": "bf16", "gemm_tflops": 989, "h2d_GBps": 64, "fraction": 0.6},
  "train": {"model": "resnet50", "engine": "gpu", "precision": "bf16", "batch": 64, "iters": 20, "fraction_of_median": 0.9},
  "sources": {
    "train.fraction_of_median": "a node 10% below the fleet's median images/s from its own compute, chosen; not yet measured by rocebench on an H100 fleet",
    "allreduce.rated_link_Gbps": "NVIDIA ConnectX-7 datasheet: 400 Gb/s per port",
    "allreduce.busbw_fraction_of_rated": "a margin below the link rate, chosen; not yet measured by rocebench on a 400G fabric",
    "gpu.gemm_tflops": "NVIDIA H100 Tensor Core GPU datasheet, SXM5: BF16 Tensor Core 1,979 TFLOPS with sparsity, 989 dense",
    "gpu.h2d_GBps": "PCIe Gen5 x16: 64 GB/s per direction (32 GT/s x 16 lanes, 128b/130b)",
    "gpu.fraction": "a margin below the datasheet peaks, chosen; not yet measured by rocebench on an H100",
    "link.fraction_of_best": "a pair 7% below the best pair, also when retested alone"
  }
})json";

Profile profile_from(const LocatedJson& doc) {
  const auto errors = JsonSchema(profile_schema()).validate(doc.value);
  if (!errors.empty()) doc.fail(errors.front().pointer, errors.front().message);
  const json& j = doc.value;
  Profile p;
  p.file = doc.file;
  p.document = j;
  p.name = j.value("name", doc.file);
  p.netcheck_profile = j.value("netcheck_profile", p.netcheck_profile);
  p.rdma_required = j.value("rdma_required", p.rdma_required);
  const json link = j.value("link", json::object());
  p.link_test = link.value("test", p.link_test);
  p.link_duration_s = link.value("duration_s", p.link_duration_s);
  p.link_bytes = link.value("bytes", p.link_bytes);
  p.link_fraction = link.value("fraction_of_best", p.link_fraction);
  const json allreduce = j.value("allreduce", json::object());
  p.allreduce_bytes = allreduce.value("bytes", p.allreduce_bytes);
  p.allreduce_iters = allreduce.value("iters", p.allreduce_iters);
  p.busbw_fraction = allreduce.value("busbw_fraction_of_median_pair", p.busbw_fraction);
  p.rated_link_Gbps = allreduce.value("rated_link_Gbps", p.rated_link_Gbps);
  p.busbw_fraction_of_rated = allreduce.value("busbw_fraction_of_rated", p.busbw_fraction_of_rated);
  const json gpu = j.value("gpu", json::object());
  p.gpu_required = gpu.value("required", p.gpu_required);
  p.gemm_type = gpu.value("gemm_type", p.gemm_type);
  p.gemm_tflops = gpu.value("gemm_tflops", p.gemm_tflops);
  p.h2d_GBps = gpu.value("h2d_GBps", p.h2d_GBps);
  p.gpu_fraction = gpu.value("fraction", p.gpu_fraction);
  const json train = j.value("train", json::object());
  p.train_model = train.value("model", p.train_model);
  p.train_engine = train.value("engine", p.train_engine);
  p.train_timeline = train.value("timeline", p.train_timeline);
  p.train_precision = train.value("precision", p.train_precision);
  p.train_batch = train.value("batch", p.train_batch);
  p.train_steps = train.value("iters", p.train_steps);
  p.train_fraction = train.value("fraction_of_median", p.train_fraction);
  p.sources = j.value("sources", json::object());
  return p;
}

std::string short_json(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }


}  // namespace

std::string builtin_profile_text(const std::string& name) {
  if (name == "auto") return kAutoProfile;
  if (name == "h100-sxm-400g") return kH100Profile;
  return "";
}

std::vector<std::string> builtin_profiles() { return {"auto", "h100-sxm-400g"}; }

Profile load_profile(const std::string& name_or_file) {
  const std::string builtin = builtin_profile_text(name_or_file);
  if (!builtin.empty()) return profile_from(parse_located(builtin, "builtin:" + name_or_file));
  if (!std::filesystem::exists(name_or_file)) {
    throw InputError(fmt::format("profile '{}' is neither built in ({}) nor a file", printable_excerpt(name_or_file),
                                 fmt::join(builtin_profiles(), ", ")));
  }
  return profile_from(load_located(name_or_file));
}

Profile profile_from_document(const json& document, const std::string& file) {
  return profile_from(parse_located(document.dump(2), file));
}

// ---- what accept saw ----------------------------------------------------------------------------

namespace {

// The details of the records accept writes in accept.jsonl (start, stage, end): the one declaration
// the reader checks.
const JsonSchema& details_schema(const std::string& what) {
  static const json defs = json::parse(R"schema({
      "node": {"type": "object", "required": ["name", "host"], "additionalProperties": false,
               "properties": {"name": {"type": "string", "minLength": 1}, "host": {"type": "string", "minLength": 1}}},
      "start": {"type": "object", "required": ["nodes", "profile"], "properties": {
        "nodes": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/node"}},
        "profile": {"type": "object", "required": ["file", "document"],
                    "properties": {"file": {"type": "string"}, "document": {"type": "object"}}}}},
      "stage": {"type": "object", "required": ["stage", "label", "folder", "group", "exit_code"], "properties": {
        "stage": {"enum": ["hosts", "links", "allreduce", "gpu", "train"]},
        "label": {"type": "string", "minLength": 1},
        "folder": {"type": "string", "pattern": "^stages/[^/]+$"},
        "group": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/node"}},
        "exit_code": {"type": "integer"},
        "lost": {"type": "string"}}},
      "end": {"type": "object", "required": ["runs"], "properties": {"runs": {"type": "integer", "minimum": 0}}}
  })schema");
  static const std::map<std::string, JsonSchema> schemas = [] {
    std::map<std::string, JsonSchema> out;
    for (const char* event : {"start", "stage", "end"}) out.emplace(event, JsonSchema({{"$defs", defs}, {"$ref", std::string("#/$defs/") + event}}));
    return out;
  }();
  return schemas.at(what);
}

json nodes_json(const std::vector<Node>& nodes) {
  json out = json::array();
  for (const auto& n : nodes) out.push_back({{"name", n.name}, {"host", n.host}});
  return out;
}

std::vector<Node> nodes_of(const json& j) {
  std::vector<Node> out;
  for (const auto& n : j) out.push_back({n["name"].get<std::string>(), n["host"].get<std::string>()});
  return out;
}

}  // namespace

bool StageRun::completed() const { return exit_code == kExitOk || exit_code == kExitCheckFailed; }

json start_record(const std::string& run, const std::vector<Node>& nodes, const Profile& profile) {
  return event_record(run, "accept.start", fmt::format("acceptance of {} node(s) under profile {}", nodes.size(), profile.file),
                      {{"nodes", nodes_json(nodes)}, {"profile", {{"file", profile.file}, {"document", profile.document}}}});
}

json stage_record(const std::string& run, const StageRun& s) {
  json details = {{"stage", s.stage}, {"label", s.label}, {"folder", s.folder}, {"group", nodes_json(s.group)}, {"exit_code", s.exit_code}};
  if (!s.lost.empty()) details["lost"] = s.lost;
  return event_record(run, "accept.stage",
                      fmt::format("{} on {} node(s): exit {}{}", s.label, s.group.size(), s.exit_code, s.lost.empty() ? "" : "; " + s.lost),
                      details);
}

json end_record(const std::string& run, std::size_t runs) {
  return event_record(run, "accept.end", fmt::format("the acceptance ended after {} stage run(s)", runs), {{"runs", runs}});
}

Acceptance load_acceptance(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const fs::path file = dir / kAcceptRecords;
  if (!fs::is_regular_file(file)) {
    throw InputError(fmt::format("{}: not an acceptance's folder: it has no {} (rocebench accept writes it)", dir.string(), kAcceptRecords));
  }
  const RecordFile f = read_records(file, &result_schema());
  for (const auto& issue : f.issues) {
    if (!(f.truncated_tail && &issue == &f.issues.back())) throw InputError(file.string(), issue.line, "", issue.message);
  }
  Acceptance a;
  bool started = false;
  for (std::size_t i = 0; i < f.records.size(); ++i) {
    const json& r = f.records[i];
    const int line = f.record_lines[i];
    const std::string event = r.value("event", "");
    if (r.value("kind", "") != "event" || !event.starts_with("accept.")) {
      throw InputError(file.string(), line, "event", "not a record of accept (accept.start, accept.stage, accept.end)");
    }
    const std::string what = event.substr(7);
    if (what != "start" && what != "stage" && what != "end") throw InputError(file.string(), line, "event", "unknown event '" + event + "'");
    if (started == (what == "start")) {
      throw InputError(file.string(), line, "event", started ? "a second accept.start" : "the first record is not accept.start");
    }
    if (a.finished) throw InputError(file.string(), line, "event", "a record after accept.end");
    const json details = r.value("details", json::object());
    const auto errors = details_schema(what).validate(details);
    if (!errors.empty()) throw InputError(file.string(), line, "details" + errors.front().pointer, errors.front().message);
    if (what == "start") {
      started = true;
      a.run = r.value("run", "");
      a.time = r.value("time", "");
      a.nodes = nodes_of(details["nodes"]);
      a.profile_file = details["profile"]["file"].get<std::string>();
      a.profile = details["profile"]["document"];
    } else if (what == "end") {
      a.finished = true;
    } else {
      StageRun s;
      s.stage = details["stage"].get<std::string>();
      s.label = details["label"].get<std::string>();
      s.folder = details["folder"].get<std::string>();
      s.group = nodes_of(details["group"]);
      s.exit_code = details["exit_code"].get<int>();
      s.lost = details.value("lost", "");
      if (s.folder == "stages/.." || s.folder == "stages/.") throw InputError(file.string(), line, "details/folder", "not a stage's folder");
      const fs::path results = dir / s.folder / "results.jsonl";
      if (fs::exists(results)) s.records = read_records(results).records;  // a run that never started has none
      a.runs.push_back(std::move(s));
    }
  }
  if (!started) throw InputError(file.string(), 0, "", "no accept.start record: not an acceptance's records");
  return a;
}

// ---- verdicts ---------------------------------------------------------------------------------

Verdicts::Verdicts(const std::vector<std::string>& hosts) {
  for (const auto& h : hosts) nodes_.push_back({h, {}, {}, {}});
}

NodeVerdict& Verdicts::node(const std::string& host) {
  for (auto& n : nodes_) {
    if (n.host == host) return n;
  }
  nodes_.push_back({host, {}, {}, {}});  // a host the stages met but the host list did not name
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
  for (const auto& host : hosts) {
    std::vector<std::string> failed, unverified;
    std::size_t ok = 0, skipped = 0;
    for (const auto& r : records) {
      if (r.value("kind", "") != "check" || r.value("host", "") != host) continue;
      const std::string status = r.value("status", "");
      const std::string what = fmt::format("{} {}", r.value("check", ""), r.value("subject", ""));
      if (status == "fail") {
        failed.push_back(fmt::format("{}: {} (expected {})", what, short_json(r.value("observed", json())),
                                     short_json(r.value("expected", json()))));
      } else if (status == "unverified") {
        unverified.push_back(fmt::format("{}: {}", what, r.value("reason", "could not be read")));
      } else if (status == "ok") {
        ++ok;
      } else {
        ++skipped;
      }
    }
    if (ok + skipped + failed.size() + unverified.size() == 0) continue;  // this host's checks did not run
    if (!failed.empty()) v.fail(host, {kConfig, "netcheck", fmt::format("{}", fmt::join(failed, "; "))});
    if (!unverified.empty()) v.fail(host, {kUnverified, "netcheck", fmt::format("{}", fmt::join(unverified, "; "))});
    if (failed.empty() && unverified.empty()) {
      v.stage(host, "netcheck", ok == 0 ? fmt::format("skip ({} checks: no RDMA device)", skipped)
                                        : fmt::format("ok ({} checks{})", ok, skipped ? fmt::format(", {} skipped", skipped) : ""));
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
  std::vector<double> all;
  for (const json* r : pairs) {
    const json& params = (*r)["params"];
    const json& metrics = (*r)["metrics"];
    PairHistory h{{index(params.value("dst", "")), index(params.value("src", ""))}, metrics.value(metric, 0.0), {}};
    const json retests = r->value("samples", json::object()).value("retests", json::array());
    for (const auto& x : retests) {
      if (x.is_number()) h.retests.push_back(x.get<double>());
    }
    if (h.retests.empty() && metrics.contains("retest_" + metric)) h.retests.push_back(metrics.value("retest_" + metric, 0.0));
    all.push_back(h.first);
    history.push_back(std::move(h));
  }
  const bool bandwidth = metric.find("Gbps") != std::string::npos;  // else a latency in us
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
  const double fleet = median_of(all);
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
    const std::string figures = fmt::format("pairs with {}: {}–{}{} against a median of {}", host, number(*lo),
                                            number(*hi), unit, number(fleet));
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

// ---- bisection --------------------------------------------------------------------------------

Bisection bisect(int n, const std::function<bool(const std::vector<int>&)>& slow) {
  Bisection b;
  std::vector<int> suspects(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) suspects[static_cast<std::size_t>(i)] = i;
  std::set<int> cleared;
  std::vector<std::vector<int>> slow_runs;
  auto suspected = [&](int h) { return std::find(suspects.begin(), suspects.end(), h) != suspects.end(); };
  // Runs `group`: slow keeps the suspects it holds, not slow clears all of it.
  auto test = [&](const std::vector<int>& group) {
    ++b.runs;
    const bool was_slow = slow(group);
    if (was_slow) {
      slow_runs.push_back(group);
      std::erase_if(suspects, [&](int h) { return std::find(group.begin(), group.end(), h) == group.end(); });
    } else {
      cleared.insert(group.begin(), group.end());
      std::erase_if(suspects, [&](int h) { return cleared.count(h) > 0; });
    }
    return was_slow;
  };
  // A single suspect runs with a partner that is not suspected: a cleared node if there is one (a
  // single slow node is otherwise still the one every slow group shares). Empty when there is none.
  auto with_partner = [&](int suspect) {
    std::vector<int> group{suspect};
    for (int h = 0; h < n && group.size() == 1; ++h) {
      if (cleared.count(h)) group.push_back(h);
    }
    for (int h = 0; h < n && group.size() == 1; ++h) {
      if (!suspected(h)) group.push_back(h);
    }
    return group.size() == 2 ? group : std::vector<int>{};
  };
  while (suspects.size() > 1) {
    std::vector<int> group(suspects.begin(), suspects.begin() + static_cast<std::ptrdiff_t>(suspects.size() / 2));
    if (group.size() == 1) group = with_partner(group.front());
    if (group.empty() && suspects.size() > 2) group = {suspects[0], suspects[1]};  // every node is suspected
    if (group.empty()) return b;  // two nodes and no third to tell them apart
    test(group);
  }
  if (suspects.size() != 1) return b;
  if (cleared.empty()) {  // every run was slow: first find two nodes that are fine together
    std::vector<int> others;
    for (int h = 0; h < n && others.size() < 2; ++h) {
      if (!suspected(h)) others.push_back(h);
    }
    if (others.size() < 2 || test(others)) return b;  // no run is fine: the group is slow as a whole
  }
  // A node is named after two runs smaller than the whole group were slow with it and with nodes
  // found fine only: the whole group's slowness may be the network's (or the hosts' CPUs'), and one
  // slow run may be noise, which retesting in isolation filters before a node is failed.
  const int node = suspects.front();
  auto pins = [&](const std::vector<int>& run) {
    return static_cast<int>(run.size()) < n &&
           std::all_of(run.begin(), run.end(), [&](int h) { return h == node || cleared.count(h) > 0; });
  };
  for (auto evidence = std::count_if(slow_runs.begin(), slow_runs.end(), pins); evidence < 2; ++evidence) {
    if (!test(with_partner(node))) return b;
  }
  b.slow = {node};
  return b;
}

// ---- the acceptance's decisions, from its records ----------------------------------------------

double allreduce_busbw_Gbps(const std::vector<json>& records) {
  for (const auto& r : records) {
    if (r.value("step", "") == "collectives.allreduce" && r.value("status", "") == "ok") {
      return r.value("metrics", json::object()).value("busbw_GBps", 0.0) * 8;
    }
  }
  return 0;
}

namespace {

std::vector<std::string> rows(const std::vector<Node>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.push_back(n.host);
  return out;
}

std::vector<std::string> names(const std::vector<Node>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.push_back(n.name);
  return out;
}

std::vector<const StageRun*> runs_of(const Acceptance& a, const std::string& stage) {
  std::vector<const StageRun*> out;
  for (const auto& s : a.runs) {
    if (s.stage == stage) out.push_back(&s);
  }
  return out;
}

// "(exit 3, twice)": a stage that did not complete was run once more.
std::string exits(const std::vector<const StageRun*>& runs) {
  return fmt::format("(exit {}{})", runs.back()->exit_code, runs.size() > 1 ? ", twice" : "");
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

// A run the search needs and the runner does not have.
struct NoSuchRun {};

std::vector<std::string> sorted_rows(const std::vector<Node>& group) {
  std::vector<std::string> out = rows(group);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<Node> reachable_nodes(const Acceptance& a) { return hosts_stage(a).reachable; }

std::map<std::string, std::string> nodes_without_gpu(const Acceptance& a) { return without_gpu(hosts_stage(a).records); }

AllreduceThreshold allreduce_threshold(const Profile& profile, double median_pair_Gbps) {
  if (profile.rated_link_Gbps > 0) {
    return {profile.busbw_fraction_of_rated * profile.rated_link_Gbps,
            fmt::format("{} x the rated link's {:.3f}", profile.busbw_fraction_of_rated, profile.rated_link_Gbps)};
  }
  if (median_pair_Gbps <= 0) return {};  // no figure to judge against: the links stage said why
  return {profile.busbw_fraction * median_pair_Gbps, fmt::format("{} x the median pair's {:.3f}", profile.busbw_fraction, median_pair_Gbps)};
}

AllreduceThreshold allreduce_threshold(const Profile& profile, const Acceptance& a) {
  const auto links = runs_of(a, "links");
  const bool measured = !links.empty() && links.back()->completed();
  return allreduce_threshold(profile, measured ? median_pair_bandwidth(links.back()->records) : 0.0);
}

bool group_slow(double busbw_Gbps, const AllreduceThreshold& t) { return busbw_Gbps < t.Gbps; }

AllreduceSearch allreduce_search(const std::vector<Node>& nodes, const AllreduceThreshold& t, const AllreduceRunner& busbw) {
  AllreduceSearch out;
  std::vector<Node> group = nodes;
  for (int round = 0; round < 3 && group.size() >= 2; ++round) {
    AllreduceRound r;
    r.group = group;
    auto slow = [&](const std::string& label, const std::vector<Node>& g, double* seen = nullptr) {
      const std::optional<double> Gbps = busbw(label, g);
      if (!Gbps) {
        out.missing = fmt::format("{} on {}", label, fmt::join(names(g), "+"));
        throw NoSuchRun{};
      }
      if (seen) *seen = *Gbps;
      const std::string who = g.size() == group.size() ? fmt::format("all {}", g.size()) : fmt::format("{}", fmt::join(names(g), "+"));
      r.log.push_back(fmt::format("{} {:.3f}{}", who, *Gbps, group_slow(*Gbps, t) ? " slow" : ""));
      return group_slow(*Gbps, t);
    };
    try {
      if (!slow("allreduce", group, &r.full) || !slow("allreduce-retry", group, &r.full)) {
        out.rounds.push_back(std::move(r));
        return out;
      }
      r.slow = true;
      r.bisection = bisect(static_cast<int>(group.size()), [&](const std::vector<int>& members) {
        std::vector<Node> sub;
        for (int i : members) sub.push_back(group[static_cast<std::size_t>(i)]);
        return slow(fmt::format("bisect-{}", members.size()), sub);
      });
    } catch (const NoSuchRun&) {
      out.unresolved = group;
      return out;
    }
    std::vector<Node> rest;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const bool isolated = std::find(r.bisection.slow.begin(), r.bisection.slow.end(), static_cast<int>(i)) != r.bisection.slow.end();
      (isolated ? r.isolated : rest).push_back(group[i]);
    }
    const bool none = r.isolated.empty();
    out.rounds.push_back(std::move(r));
    if (none) return out;
    group = rest;
  }
  return out;
}

AllreduceRunner recorded_allreduce(const Acceptance& a) {
  struct Run {
    std::vector<std::string> hosts;
    double Gbps;
  };
  auto runs = std::make_shared<std::vector<Run>>();
  for (const auto& s : a.runs) {
    if (s.stage == "allreduce") runs->push_back({sorted_rows(s.group), allreduce_busbw_Gbps(s.records)});
  }
  auto used = std::make_shared<std::map<std::vector<std::string>, std::size_t>>();  // group -> its runs replayed
  return [runs, used](const std::string&, const std::vector<Node>& group) -> std::optional<double> {
    const auto key = sorted_rows(group);
    std::size_t& k = (*used)[key];
    std::size_t seen = 0;
    for (const auto& r : *runs) {
      if (r.hosts == key && seen++ == k) {
        ++k;
        return r.Gbps;
      }
    }
    return std::nullopt;
  };
}

void judge_allreduce(Verdicts& v, const AllreduceSearch& search, const AllreduceThreshold& t) {
  for (const auto& r : search.rounds) {
    for (const auto& n : r.group) v.figure(n.host, kBusbwGbps, r.full);  // a later round (without the slow node) overrides
    if (!r.slow) {
      for (const auto& n : r.group) v.stage(n.host, "allreduce", fmt::format("ok ({:.3f} Gb/s busbw)", r.full));
      continue;
    }
    const std::string evidence = fmt::format("allreduce busbw (Gb/s) against {:.3f} ({}): {}; bisection: {} run(s)", t.Gbps, t.against,
                                             fmt::join(r.log, "; "), r.bisection.runs);
    if (r.isolated.empty()) {
      v.fail_cluster({kSlow, "allreduce", evidence + "; no single node isolated"});
      for (const auto& n : r.group) v.stage(n.host, "allreduce", fmt::format("slow with the group ({:.3f} Gb/s busbw)", r.full));
      continue;
    }
    for (const auto& n : r.isolated) v.fail(n.host, {kSlow, "allreduce", evidence});
  }
  if (search.missing.empty()) return;
  for (const auto& n : search.unresolved) {
    v.fail(n.host, {kUnverified, "allreduce", fmt::format("against {:.3f} Gb/s ({}), the search for the node that slows the allreduce "
                                                          "needs a run this acceptance did not make: {}", t.Gbps, t.against, search.missing)});
  }
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
    const auto links = runs_of(a, "links");
    for (const auto& n : reachable) {
      if (links.empty()) v.fail(n.host, {kUnverified, "links", "the link matrix was not recorded (the acceptance ended before it)"});
      else if (!links.back()->completed()) v.fail(n.host, {kUnverified, "links", "the link matrix did not complete " + exits(links)});
    }
    if (!links.empty() && links.back()->completed()) judge_links(v, links.back()->records, rows(reachable), profile);
    const AllreduceThreshold t = allreduce_threshold(profile, a);
    if (t.defined()) {
      judge_allreduce(v, allreduce_search(reachable, t, recorded_allreduce(a)), t);
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
    const auto train = runs_of(a, "train");
    const bool trained = !train.empty() && train.back()->completed();
    judge_training(v, trained ? train.back()->records : std::vector<json>{}, rows(reachable), profile);
  }
  if (!a.finished) {
    v.fail_cluster({kUnverified, "accept", fmt::format("{} has no accept.end record: the acceptance stopped before its end, and "
                                                       "what it did not run is not judged", kAcceptRecords)});
  }
  return v;
}

// ---- rendering --------------------------------------------------------------------------------

namespace {

std::string reasons(const NodeVerdict& n) {
  std::vector<std::string> codes;
  for (const auto& f : n.findings) {
    if (std::find(codes.begin(), codes.end(), f.code) == codes.end()) codes.push_back(f.code);
  }
  return fmt::format("{}", fmt::join(codes, ", "));
}

std::string cell(const NodeVerdict& n, const std::string& stage) {
  const auto it = n.stages.find(stage);
  return it == n.stages.end() ? "—" : it->second;
}

}  // namespace

std::string verdict_table(const Verdicts& v) {
  std::vector<std::vector<std::string>> rows{{"host", "verdict"}};
  for (const auto& s : v.stages()) rows.front().push_back(s);
  for (const auto& n : v.nodes()) {
    rows.push_back({n.host, n.pass() ? "PASS" : "FAIL " + reasons(n)});
    for (const auto& s : v.stages()) rows.back().push_back(cell(n, s));
  }
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) out += fmt::format("{:<{}}{}", row[i], width[i], i + 1 < row.size() ? "  " : "\n");
  }
  for (const auto& n : v.nodes()) {
    for (const auto& f : n.findings) out += fmt::format("{} {} ({}): {}\n", n.host, f.code, f.stage, f.evidence);
  }
  for (const auto& f : v.cluster_findings()) out += fmt::format("cluster {} ({}): {}\n", f.code, f.stage, f.evidence);
  std::size_t failed = 0;
  for (const auto& n : v.nodes()) failed += !n.pass();
  out += v.pass() ? fmt::format("cluster: PASS, all {} nodes pass\n", v.nodes().size())
                  : fmt::format("cluster: FAIL, {} of {} nodes fail{}\n", failed, v.nodes().size(),
                                v.cluster_findings().empty() ? "" : ", and the cluster as a whole");
  return out;
}

std::vector<Section> verdict_sections(const Verdicts& v) {
  std::size_t failed = 0;
  for (const auto& n : v.nodes()) failed += !n.pass();
  Section verdict{"Verdict per node", {}, {}, {}};
  verdict.notes.push_back(v.pass() ? fmt::format("Cluster: PASS. All {} nodes pass every stage.", v.nodes().size())
                                   : fmt::format("Cluster: FAIL. {} of {} nodes fail{}.", failed, v.nodes().size(),
                                                 v.cluster_findings().empty() ? "" : ", and the cluster as a whole"));
  Table t{"", "each stage's finding on each node; — the stage did not reach the node", {"host", "verdict"}, {}};
  for (const auto& s : v.stages()) t.columns.push_back(s);
  for (const auto& n : v.nodes()) {
    t.rows.push_back({{n.host, Mark::none}, {n.pass() ? "PASS" : "FAIL " + reasons(n), n.pass() ? Mark::good : Mark::bad}});
    for (const auto& s : v.stages()) {
      const std::string text = cell(n, s);
      t.rows.back().push_back({text, text.rfind("FAIL", 0) == 0 ? Mark::bad : text == "—" ? Mark::missing
                                                                         : text.rfind("ok", 0) == 0 ? Mark::good : Mark::none});
    }
  }
  verdict.tables.push_back(std::move(t));
  Section evidence{"Evidence", {}, {}, {}};
  for (const auto& f : v.cluster_findings()) evidence.notes.push_back(fmt::format("cluster {} ({}): {}", f.code, f.stage, f.evidence));
  for (const auto& n : v.nodes()) {
    for (const auto& f : n.findings) evidence.notes.push_back(fmt::format("{} {} ({}): {}", n.host, f.code, f.stage, f.evidence));
  }
  if (evidence.notes.empty()) evidence.notes.push_back("Every node passed every stage.");
  return {verdict, evidence};
}

std::string verdict_junit(const Verdicts& v) {
  std::vector<Verdict> cases;
  for (const auto& n : v.nodes()) {
    for (const auto& s : v.stages()) {
      Verdict c{"host." + n.host, s, Outcome::pass, cell(n, s)};
      for (const auto& f : n.findings) {
        if (f.stage != s) continue;
        c.outcome = Outcome::fail;
        c.message = fmt::format("{}: {}", f.code, f.evidence);
      }
      if (cell(n, s) == "—") c.outcome = Outcome::missing, c.message = "this stage did not reach the host";
      cases.push_back(c);
    }
  }
  return render_junit("rocebench accept", cases);
}

json verdict_json(const Verdicts& v) {
  json nodes = json::array();
  for (const auto& n : v.nodes()) {
    json findings = json::array();
    for (const auto& f : n.findings) findings.push_back({{"code", f.code}, {"stage", f.stage}, {"evidence", f.evidence}});
    nodes.push_back({{"host", n.host}, {"verdict", n.pass() ? "PASS" : "FAIL"}, {"stages", n.stages}, {"findings", findings}});
  }
  json cluster = json::array();
  for (const auto& f : v.cluster_findings()) cluster.push_back({{"code", f.code}, {"stage", f.stage}, {"evidence", f.evidence}});
  return {{"cluster", v.pass() ? "PASS" : "FAIL"}, {"stages", v.stages()}, {"nodes", nodes}, {"cluster_findings", cluster}};
}

}  // namespace rocebench::reports::accept
