#include "rocebench/microbench/allpairs.hpp"

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/microbench/probe.hpp"

namespace rocebench::microbench {

// The bad-link rule is the judge's (reports/links.hpp): the step asks it what to retest and whom to name.
using reports::FlagRule;
using reports::judge_pairs;
using reports::PairHistory;
using reports::PairsJudgement;
using reports::RetestPolicy;

std::vector<std::vector<HostPair>> tournament(int n) {
  if (n < 2) return {};
  const int slots = n % 2 ? n + 1 : n;  // slot n (when odd) is the bye
  std::vector<int> ring(static_cast<std::size_t>(slots));
  for (int i = 0; i < slots; ++i) ring[static_cast<std::size_t>(i)] = i;
  std::vector<std::vector<HostPair>> rounds;
  for (int r = 0; r < slots - 1; ++r) {
    std::vector<HostPair> round;
    for (int i = 0; i < slots / 2; ++i) {
      const int a = ring[static_cast<std::size_t>(i)], b = ring[static_cast<std::size_t>(slots - 1 - i)];
      if (a < n && b < n) round.emplace_back(std::min(a, b), std::max(a, b));
    }
    rounds.push_back(std::move(round));
    std::rotate(ring.begin() + 1, ring.end() - 1, ring.end());  // keep slot 0, turn the rest
  }
  return rounds;
}

std::vector<std::vector<HostPair>> neighbour_rounds(int n) {
  if (n < 2) return {};
  if (n == 2) return {{{0, 1}}};
  std::vector<std::vector<HostPair>> rounds(n % 2 ? 3 : 2);
  for (int i = 0; i + 1 < n; ++i) rounds[static_cast<std::size_t>(i % 2)].emplace_back(i, i + 1);
  rounds.back().emplace_back(0, n - 1);  // closes the ring: in the second round when n is even (0 and n-1 are free there)
  return rounds;
}

std::vector<std::vector<HostPair>> schedule(const std::string& pairs, int n) {
  return pairs == "neighbours" ? neighbour_rounds(n) : tournament(n);
}

namespace {

constexpr const char* kPairsChoices[] = {"all", "neighbours"};

struct AllpairsParams {
  ProbeSpec spec;
  RetestPolicy policy;
  std::string metric;
};

AllpairsParams allpairs_params(const json& params) {
  AllpairsParams a;
  json probe = params;
  for (const char* own : {"bw_fraction", "lat_factor", "retest", "max_retests", "pairs"}) probe.erase(own);
  if (!probe.contains("test")) probe["test"] = probe.value("transport", "tcp") == "tcp" ? "bw" : "write_bw";
  if (!probe.contains("duration_s") && !probe.contains("iters")) probe["duration_s"] = 2.0;
  if (!probe.contains("bytes")) probe["bytes"] = 65536;
  a.spec = spec_from_params(probe);
  if (a.spec.driver.sizes.size() != 1) throw InputError("microbench.allpairs measures one message size");
  FlagRule& rule = a.policy.rule;
  rule.higher_is_better = kind_of(a.spec) == ProbeKind::bandwidth;
  rule.bw_fraction = params.value("bw_fraction", rule.bw_fraction);
  rule.lat_factor = params.value("lat_factor", rule.lat_factor);
  a.policy.max_retests = params.value("retest", true) ? params.value("max_retests", a.policy.max_retests) : 0;
  a.metric = rule.higher_is_better ? "bw_avg_Gbps" : "lat_us_p50";
  return a;
}

// Measures one pair: the server side serves, the client side returns its record's JSON.
json measure_pair(StepContext& ctx, const ProbeSpec& spec, const std::string& key, const HostPair& pair) {
  const auto [server, client] = pair;
  if (ctx.rank == server) {
    auto listener = listen_probe(spec, ctx.address, 0);
    ctx.rendezvous->set(key + "/endpoint", fmt::format("{} {}", ctx.address, listener->port()));
    auto probe = listener->accept();
    run_passive(*probe);
    return nullptr;
  }
  if (ctx.rank != client) return nullptr;
  const std::string endpoint = ctx.rendezvous->get(key + "/endpoint", ctx.deadline);
  const auto space = endpoint.find(' ');
  auto probe = connect_probe(spec, endpoint.substr(0, space), std::stoi(endpoint.substr(space + 1)));
  json out;
  run_active(*probe, spec.driver, [&](const ResultRecord& r) {
    out = {{"metrics", r.metrics}, {"samples", r.samples}, {"params", r.params}};
  });
  ctx.rendezvous->set(key + "/result", out.dump());
  return out;
}

void run_allpairs_step(StepContext& ctx) {
  const AllpairsParams a = allpairs_params(ctx.params);
  ProbeSpec spec = a.spec;
  spec.wait = ctx.deadline;
  spec.verbs.address = ctx.address;
  Rendezvous& rdv = *ctx.rendezvous;
  const std::string prefix = ctx.scope;

  rdv.set(fmt::format("{}/host/{}", prefix, ctx.rank), ctx.host);
  std::vector<std::string> hosts;
  for (int r = 0; r < ctx.world; ++r) hosts.push_back(rdv.get(fmt::format("{}/host/{}", prefix, r), ctx.deadline));

  // Every round's pairs run at once; a barrier separates rounds.
  const std::string which = ctx.params.value("pairs", "all");
  const auto rounds = schedule(which, ctx.world);
  std::vector<HostPair> pairs;
  for (std::size_t k = 0; k < rounds.size(); ++k) {
    for (const auto& pair : rounds[k]) {
      measure_pair(ctx, spec, fmt::format("{}/round/{}/{}", prefix, k, pair.first), pair);
      pairs.push_back(pair);
    }
    rdv.barrier(fmt::format("{}/round/{}", prefix, k), ctx.deadline);
  }

  // Rank 0 judges after every pass and says which pairs to retest alone; everyone reads the list.
  auto result_of = [&](const std::string& key) { return json::parse(rdv.get(key + "/result", ctx.deadline)); };
  std::vector<json> first;
  std::vector<PairHistory> history;
  if (ctx.rank == 0) {
    for (std::size_t k = 0; k < rounds.size(); ++k) {
      for (const auto& pair : rounds[k]) {
        first.push_back(result_of(fmt::format("{}/round/{}/{}", prefix, k, pair.first)));
        history.push_back({pair, first.back()["metrics"].value(a.metric, 0.0), {}});
      }
    }
  }
  PairsJudgement verdict;
  for (int pass = 0;; ++pass) {
    const std::string key = fmt::format("{}/retest/{}", prefix, pass);
    if (ctx.rank == 0) {
      verdict = judge_pairs(history, a.policy);
      rdv.set(key, json(verdict.retest).dump());
    }
    const auto retest = json::parse(rdv.get(key, ctx.deadline)).get<std::vector<std::size_t>>();
    if (retest.empty()) break;
    // Flagged pairs again, one at a time, with nothing else on the network.
    for (std::size_t j = 0; j < retest.size(); ++j) {
      const std::string at = fmt::format("{}/{}", key, j);
      measure_pair(ctx, spec, at, pairs[retest[j]]);
      rdv.barrier(at, ctx.deadline);
      if (ctx.rank == 0) history[retest[j]].retests.push_back(result_of(at)["metrics"].value(a.metric, 0.0));
    }
  }
  if (ctx.rank != 0) return;

  const double best = verdict.best;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto [server, client] = pairs[i];
    ResultRecord r;
    r.params = {{"src", hosts[static_cast<std::size_t>(client)]}, {"dst", hosts[static_cast<std::size_t>(server)]},
                {"test", spec.test}, {"transport", spec.transport}, {"bytes", spec.driver.sizes.front()}};
    r.metrics = {{a.metric, history[i].first}};
    r.samples = first[i]["samples"];
    if (!history[i].retests.empty()) {
      r.params["retested"] = history[i].retests.size();
      r.metrics["retest_" + a.metric] = history[i].latest();
      r.samples["retests"] = history[i].retests;
    }
    if (std::find(verdict.still_bad.begin(), verdict.still_bad.end(), i) != verdict.still_bad.end()) {
      const std::string again = history[i].retests.empty() ? ""
                                : history[i].retests.size() == 1
                                    ? ", also when retested alone"
                                    : fmt::format(", also in {} retests alone", history[i].retests.size());
      r.status = Status::fail;
      // The pair first: the record is rank 0's, whichever hosts the pair joined.
      const std::string pair = fmt::format("{} -> {}: ", r.params["src"].get<std::string>(), r.params["dst"].get<std::string>());
      r.reason = pair + (a.policy.rule.higher_is_better
                             ? fmt::format("{:.3f} Gb/s is below {:.0f}% of the best pair's {:.3f} Gb/s{}", history[i].first,
                                           a.policy.rule.bw_fraction * 100, best, again)
                             : fmt::format("{:.2f} us is above {}x the best pair's {:.2f} us{}", history[i].first,
                                           a.policy.rule.lat_factor, best, again));
    }
    ctx.record(r);
  }

  std::vector<HostPair> still_bad;
  for (const std::size_t i : verdict.still_bad) still_bad.push_back(pairs[i]);
  ResultRecord summary;
  summary.params = {{"summary", true}, {"test", spec.test}, {"transport", spec.transport}, {"hosts", ctx.world},
                    {"pairs", pairs.size()}, {"schedule", which}};
  summary.metrics = {{"best_" + a.metric, best}, {"pairs_flagged", verdict.flagged.size()}, {"pairs_bad", still_bad.size()}};
  summary.samples = {{"n", pairs.size()}};
  std::vector<std::string> named;
  for (int h : verdict.bad_hosts) named.push_back(hosts[static_cast<std::size_t>(h)]);
  std::vector<std::string> loose;  // bad pairs that no named host explains
  for (const auto& [s, c] : still_bad) {
    const auto& hs = hosts[static_cast<std::size_t>(s)];
    const auto& hc = hosts[static_cast<std::size_t>(c)];
    if (std::find(named.begin(), named.end(), hs) == named.end() && std::find(named.begin(), named.end(), hc) == named.end()) {
      loose.push_back(hs + "<->" + hc);
    }
  }
  summary.params["bad_hosts"] = named;
  if (!still_bad.empty()) {
    summary.status = Status::fail;
    summary.reason = fmt::format("{} of {} pairs stay bad{}{}", still_bad.size(), pairs.size(),
                                 named.empty() ? "" : fmt::format("; bad hosts: {}", fmt::join(named, ", ")),
                                 loose.empty() ? "" : fmt::format("; bad pairs: {}", fmt::join(loose, ", ")));
  }
  ctx.record(summary);
}

}  // namespace

StepKind allpairs_step() {
  json schema = probe_params_schema();
  schema["properties"]["bw_fraction"] = {{"type", "number"}, {"exclusiveMinimum", 0}, {"maximum", 1}};
  schema["properties"]["lat_factor"] = {{"type", "number"}, {"minimum", 1}};
  schema["properties"]["retest"] = {{"type", "boolean"}};
  schema["properties"]["max_retests"] = {{"type", "integer"}, {"minimum", 0}};
  schema["properties"]["pairs"] = {{"enum", kPairsChoices}, {"default", "all"},
                                   {"description", "all: every pair (the matrix); neighbours: each host with its two ring neighbours (a quick check)"}};
  return {"microbench.allpairs",
          "all-pairs link matrix: N-1 rounds of concurrent disjoint pairs, slow pairs retested alone, bad hosts named",
          schema, run_allpairs_step};
}

int allpairs_main(const Args& args) {
  return run_guarded("rocebench probe allpairs", [&] {
    int hosts = 0;
    std::string pairs = "all";
    ArgParser p("rocebench probe allpairs",
                "Prints the round-robin schedule the all-pairs matrix runs on N hosts. The matrix itself runs as\n"
                "the plan step microbench.allpairs, one rank per host:\n"
                "  {\"steps\": [{\"step\": \"microbench.allpairs\", \"params\": {\"test\": \"bw\", \"duration_s\": 2}}]}\n"
                "  rocebench run plan.json --hostfile hosts --launcher mpirun --ranks-per-host 1");
    p.option("--hosts", &hosts, "number of hosts").range(2, 4096);
    p.option("--pairs", &pairs, "all (the matrix) or neighbours (each host with its two ring neighbours)", "WHICH");
    if (!p.parse(args)) return kExitOk;
    if (hosts < 2) throw UsageError("--hosts must be at least 2\n\n" + p.usage());
    if (std::find(std::begin(kPairsChoices), std::end(kPairsChoices), pairs) == std::end(kPairsChoices)) {
      throw UsageError(fmt::format("--pairs must be {}, not '{}'", fmt::join(kPairsChoices, " or "), printable_excerpt(pairs)));
    }
    const auto rounds = schedule(pairs, hosts);
    for (std::size_t k = 0; k < rounds.size(); ++k) {
      std::string line = fmt::format("round {:>3}:", k + 1);
      for (const auto& [s, c] : rounds[k]) line += fmt::format(" {}<-{}", s, c);
      std::cout << line << "\n";
    }
    return kExitOk;
  });
}

}  // namespace rocebench::microbench
