#include "rocebench/reports/accept_render.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/reports/verdict.hpp"

namespace rocebench::reports::accept {

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

// "b LOSSY (lossless): …", and a warning's "b warn CONGESTED (lossless): …": each finding of a node, in words.
std::vector<std::string> finding_lines(const NodeVerdict& n) {
  std::vector<std::string> out;
  for (const auto& f : n.findings) out.push_back(fmt::format("{} {} ({}): {}", n.host, f.code, f.stage, f.evidence));
  for (const auto& f : n.warnings) out.push_back(fmt::format("{} warn {} ({}): {}", n.host, f.code, f.stage, f.evidence));
  return out;
}

json findings_json(const std::vector<Finding>& findings) {
  json out = json::array();
  for (const auto& f : findings) out.push_back({{"code", f.code}, {"stage", f.stage}, {"evidence", f.evidence}});
  return out;
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
    for (const auto& line : finding_lines(n)) out += line + "\n";
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
    for (const auto& line : finding_lines(n)) evidence.notes.push_back(line);
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
    nodes.push_back({{"host", n.host}, {"verdict", n.pass() ? "PASS" : "FAIL"}, {"stages", n.stages}, {"findings", findings_json(n.findings)}});
    if (!n.warnings.empty()) nodes.back()["warnings"] = findings_json(n.warnings);
  }
  const json cluster = findings_json(v.cluster_findings());
  return {{"cluster", v.pass() ? "PASS" : "FAIL"}, {"stages", v.stages()}, {"nodes", nodes}, {"cluster_findings", cluster}};
}

}  // namespace rocebench::reports::accept
