// `rocebench accept`: cluster acceptance in stages, each a run of its own on the hosts it needs
// (every host; the reachable ones; halves of them while bisecting), ending with one verdict per node.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <sstream>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "launch.hpp"
#include "run.hpp"
#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/hostname.hpp"
#include "rocebench/common/run_id.hpp"
#include "rocebench/netcheck/tools.hpp"
#include "rocebench/reports/accept_actions.hpp"
#include "rocebench/reports/acceptance.hpp"
#include "rocebench/reports/report.hpp"

namespace rocebench {

namespace fs = std::filesystem;
namespace accept = reports::accept;

namespace {

struct AcceptOptions {
  std::string hostfile, netns_file, launcher = "mpirun", mpirun = "mpirun";
  std::string profile = "auto";
  std::string results_root = kDefaultResultsRoot, results_dir, run_id;
  std::vector<std::string> netcheck_trees;  // HOST=DIR: that host's netcheck reads a saved tree
  accept::ActionOptions actions;            // what the verdict is also written as (Kubernetes labels ...)
  bool slurm_drain = false, slurm_resume = false, dry_run = false;
  bool quick = false;     // a health check between jobs: hosts, each node's ring neighbours, GPUs
  double deadline_s = 0;  // 0: kDeadlineS, or kQuickDeadlineS with --quick
};

constexpr double kDeadlineS = 30;
// A quick check's waits are short, so that it ends in a Slurm prolog's or health check's time.
constexpr double kQuickDeadlineS = 10;

// A node as the operator named it (hostfile line or emulated host), and how to start a rank there.
struct Node {
  std::string name;     // as the operator wrote it: what the launcher is given
  std::string address;  // emulated hosts only
  std::string host;     // what its ranks' records call it, and its row in the verdict
  int line = 0;         // in the hostfile (or emulated hosts file)
  int agent_port = 0;   // emulated hosts only: started through that host's agent
};

// The name a node's records carry: a rank on this host records this host's name, however the
// hostfile named it ("localhost", an address, the FQDN). The one place records meet node names.
std::string record_host(const std::string& name) { return names_this_host(name) ? this_hostname() : name; }

// A Slurm command that does not answer within this finds slurmctld unreachable: accept must end.
constexpr std::chrono::seconds kSlurmTimeout{30};

// Why a Slurm command did not succeed, in its own words where it printed some.
std::string failure_of(const std::string& tool, const netcheck::CommandResult& r) {
  if (!r.started) return tool + " could not start: " + r.error;
  if (r.timed_out) return fmt::format("{} gave no answer within {} s", tool, kSlurmTimeout.count());
  const std::string said = r.err.substr(0, r.err.find('\n'));
  return fmt::format("{} exited {}{}", tool, r.exit_code, said.empty() ? "" : " (" + said + ")");
}

netcheck::CommandResult run_slurm(const std::vector<std::string>& argv) { return netcheck::run_command(argv, kSlurmTimeout); }

// The nodes Slurm has drained (or is draining), with their reasons: `sinfo --Node` one line each.
std::map<std::string, std::string> slurm_drained(std::string& why_not) {
  const auto r = run_slurm({"sinfo", "--noheader", "--Node", "--format=%N|%T|%E"});
  std::map<std::string, std::string> out;
  if (!r.started || r.timed_out || r.exit_code != 0) {
    why_not = failure_of("sinfo", r);
    return out;
  }
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const auto a = line.find('|'), b = line.find('|', a == std::string::npos ? a : a + 1);
    if (b == std::string::npos) continue;
    if (line.substr(a + 1, b - a - 1).find("drain") != std::string::npos) out[line.substr(0, a)] = line.substr(b + 1);
  }
  return out;
}

// --slurm-drain / --slurm-resume: what the verdict asks of Slurm, run (or, with --dry-run, printed).
// False when an scontrol failed.
bool act_on_slurm(const AcceptOptions& o, const accept::Verdicts& v) {
  if (!o.slurm_drain && !o.slurm_resume) return true;
  std::string why_not;
  const auto drained = slurm_drained(why_not);
  if (!why_not.empty()) {
    if (!o.dry_run) {
      std::cout << "slurm: " << why_not << ": cannot tell which nodes are drained, so none is drained or resumed\n";
      return false;
    }
    std::cout << "slurm: " << why_not << ": the commands below assume no node is drained now\n";
  }
  const auto actions = accept::slurm_actions(v, o.slurm_drain, o.slurm_resume, drained);
  if (actions.empty()) std::cout << "slurm: nothing to drain or resume\n";
  bool ok = true;
  for (const auto& a : actions) {
    if (a.argv.empty()) {
      std::cout << fmt::format("slurm: {}: {}\n", a.node, a.why);
    } else if (o.dry_run) {
      std::cout << accept::shell_line(a.argv) << "\n";
    } else {
      std::cout << fmt::format("slurm: {}: {}\n", a.node, accept::shell_line(a.argv));
      std::cout.flush();
      const auto r = run_slurm(a.argv);
      if (!r.started || r.timed_out || r.exit_code != 0) {
        std::cout << fmt::format("slurm: {}: {}\n", a.node, failure_of("scontrol", r));
        ok = false;
      }
    }
  }
  return ok;
}

// One stage's run: its plan on a group of nodes, in its own folder under stages/, as accept.jsonl records it.
using StageRun = accept::StageRun;

json one_step(const std::string& step, const json& params) { return json::array({{{"step", step}, {"params", params}}}); }

class Acceptance {
 public:
  Acceptance(AcceptOptions options, std::vector<Node> nodes, fs::path dir, accept::Profile profile)
      : options_(std::move(options)), nodes_(std::move(nodes)), dir_(std::move(dir)), profile_(std::move(profile)),
        log_(dir_ / accept::kAcceptRecords) {
    seen_.run = run_id();
    seen_.nodes = seen(nodes_);
    log_.append(accept::start_record(seen_.run, seen_.nodes, profile_, options_.quick));
  }

  int run() {
    const std::vector<Node> reachable = hosts_stage();
    if (reachable.size() >= 2) {
      links_stage(reachable);
      if (!options_.quick && profile_.lossless) lossless_stage(reachable);
      if (!options_.quick) allreduce_stage(reachable);
    } else {
      std::cout << "accept: fewer than 2 reachable nodes: no link or collective stage\n";
    }
    if (!reachable.empty()) {
      gpu_stage(reachable);
      if (!options_.quick) train_stage(reachable);
    }
    return finish();
  }

 private:
  // The nodes as accept.jsonl records them.
  static std::vector<accept::Node> seen(const std::vector<Node>& nodes) {
    std::vector<accept::Node> out;
    for (const auto& n : nodes) out.push_back({n.name, n.host});
    return out;
  }
  std::string run_id() const { return (dir_.has_filename() ? dir_ : dir_.parent_path()).filename().string(); }
  // The nodes as the operator named them (for messages).
  static std::vector<std::string> names(const std::vector<Node>& nodes) {
    std::vector<std::string> out;
    for (const auto& n : nodes) out.push_back(n.name);
    return out;
  }

  // Runs `steps` on `group` as a run of its own, and records what it saw in accept.jsonl.
  StageRun launch(const std::string& stage, const std::string& label, const std::vector<Node>& group, const json& steps,
                  double deadline_s) {
    StageRun s;
    s.stage = stage;
    s.label = label;
    s.folder = fmt::format("stages/{:02}-{}", ++runs_, label);
    s.group = seen(group);
    const fs::path dir = dir_ / s.folder;
    fs::create_directories(dir);
    const json plan = {{"name", "accept-" + label}, {"launcher", {{"type", "local"}, {"ranks", group.size()}}},
                       {"deadline_s", deadline_s}, {"steps", steps}};
    write_file_atomically(dir / "stage-plan.json", plan.dump(2) + "\n");
    RunOptions run;
    run.plan_path = (dir / "stage-plan.json").string();
    run.results_dir = dir.string();
    run.deadline_s = deadline_s;
    run.report = false;
    run.mpirun = options_.mpirun;
    std::string hosts;
    for (const auto& n : group) {
      EmulatedHost h;
      h.netns = n.name;
      h.address = n.address;
      h.agent_port = n.agent_port;
      hosts += (options_.netns_file.empty() ? n.name + " slots=1" : emulated_host_line(h)) + "\n";
    }
    write_file_atomically(dir / "hosts", hosts);
    if (options_.netns_file.empty()) {
      run.launcher = options_.launcher;
      run.hostfile = (dir / "hosts").string();
      run.ranks_per_host = 1;
    } else {
      run.launcher = "local";
      run.netns_file = (dir / "hosts").string();
      run.ranks = static_cast<int>(group.size());
    }
    std::cout << fmt::format("accept: {} on {} node(s): {}\n", label, group.size(), fmt::join(names(group), " "));
    std::cout.flush();
    s.exit_code = launch_run(run);
    s.records = read_records(dir / "results.jsonl").records;
    for (const auto& r : s.records) {
      if (r.value("kind", "") == "event" && r.value("event", "") == "rank.lost") s.lost = r.value("message", "");
    }
    log_.append(accept::stage_record(seen_.run, s));
    seen_.runs.push_back(s);
    if (s.exit_code == kExitBadInput) throw InputError(fmt::format("accept: stage {} refused its input (see above)", label));
    return s;
  }

  // A stage that does not complete is run once more before its nodes are judged on it.
  StageRun launch_retried(const std::string& stage, const std::vector<Node>& group, const json& steps) {
    StageRun s = launch(stage, stage, group, steps, options_.deadline_s);
    return s.completed() ? s : launch(stage, stage + "-retry", group, steps, options_.deadline_s);
  }

  // Stage 1: every node joins a run and checks its own setup; a run that fails is retried node by
  // node, and a node that cannot join its own run is unreachable.
  std::vector<Node> hosts_stage() {
    // Every node saves what netcheck read into captures/<node>: `netcheck --root-each` judges it again.
    const fs::path captures = dir_ / "captures";
    json netcheck = {{"profile", profile_.netcheck_profile}, {"rdma_required", profile_.rdma_required},
                     {"save_capture", captures.string()}};
    for (const auto& spec : options_.netcheck_trees) {
      const auto eq = spec.find('=');
      const fs::path tree = fs::absolute(spec.substr(eq + 1));
      netcheck["per_host"][record_host(spec.substr(0, eq))] = {{"root", (tree / "root").string()}, {"capture", (tree / "capture").string()}};
    }
    const json steps = json::array({{{"step", "harness.rendezvous"}, {"params", {{"rounds", 3}}}},
                                    {{"step", "netcheck.host"}, {"params", netcheck}}});
    const double deadline = std::min(options_.deadline_s, 15.0);
    const StageRun all = launch("hosts", "hosts", nodes_, steps, deadline);
    if (!all.completed()) {
      fs::remove_all(captures);  // saved again by each node's run alone
      for (const auto& node : nodes_) launch("hosts", "hosts-" + node.name, {node}, steps, deadline);
    }
    return of(accept::reachable_nodes(seen_));
  }

  // The operator's nodes that `picked` names, in its order.
  std::vector<Node> of(const std::vector<accept::Node>& picked) const {
    std::vector<Node> out;
    for (const auto& p : picked) {
      for (const auto& n : nodes_) {
        if (n.name == p.name && n.host == p.host) out.push_back(n);
      }
    }
    return out;
  }

  // Stage 2: the all-pairs link matrix (slow pairs retested alone); a quick check measures each
  // node with its two ring neighbours only.
  void links_stage(const std::vector<Node>& group) {
    const json params = {{"transport", profile_.transport}, {"test", accept::link_probe_test(profile_)}, {"bytes", profile_.link_bytes},
                         {"duration_s", profile_.link_duration_s}, {"bw_fraction", profile_.link_fraction},
                         {"pairs", options_.quick ? "neighbours" : "all"}};
    launch_retried("links", group, one_step("microbench.allpairs", params));
  }

  // Stage 2b, where the profile asks it: lossless under load. Each node is once the receiver of an
  // incast from all the others, every node's counters read around each turn (over tcp the kernel's,
  // over verbs the NIC's): the judge names the node whose link loses, and the one that stalls.
  void lossless_stage(const std::vector<Node>& group) {
    const json params = {{"transport", profile_.transport}, {"bytes", profile_.lossless_bytes}, {"duration_s", profile_.lossless_duration_s}};
    launch_retried("lossless", group, one_step("microbench.incast", params));
  }

  // Stage 3: allreduce over every reachable node, against the rated link or the median pair; the
  // search (retry, bisection, rounds) is the judge's, which says what to run next.
  void allreduce_stage(const std::vector<Node>& group) {
    const accept::AllreduceThreshold threshold = accept::allreduce_threshold(profile_, seen_);
    if (!threshold.defined()) return;  // no figure to judge against: the links stage said why
    const json params = {{"algorithm", "ring"}, {"transport", profile_.transport}, {"min_bytes", profile_.allreduce_bytes}, {"max_bytes", profile_.allreduce_bytes},
                         {"iters", profile_.allreduce_iters}, {"warmup", 2}, {"placement", "in"}, {"spin_us", 0}};
    accept::allreduce_search(seen(group), threshold, [&](const std::string& label, const std::vector<accept::Node>& g) -> std::optional<double> {
      const StageRun s = launch("allreduce", label, of(g), one_step("collectives.allreduce", params), options_.deadline_s);
      const double gbps = accept::allreduce_busbw_Gbps(s.records);
      std::cout << fmt::format("accept: {}: busbw {:.3f} Gb/s, threshold {:.3f}\n", label, gbps, threshold.Gbps);
      return gbps;
    });
  }

  // Stage 4: every GPU of each node (GEMM, host-to-device copies) against the profile; nodes without one skip.
  void gpu_stage(const std::vector<Node>& reachable) {
    const auto no_gpu = accept::nodes_without_gpu(seen_);
    std::vector<Node> with_gpu;
    for (const auto& n : reachable) {
      if (!no_gpu.count(n.host)) with_gpu.push_back(n);
    }
    if (!with_gpu.empty()) {
      const json params = {{"filter", "^gpu_(gemm|copy/dir:h2d)"}, {"repetitions", 3}, {"min_time_s", 0.05}, {"min_bytes", 64 << 20}, {"max_bytes", 64 << 20}};
      launch_retried("gpu", with_gpu, one_step("microbench.host", params));
    }
  }

  // Stage 5: a short data-parallel training run over the reachable nodes (one rank each, the full
  // world only): each node's images/s from its own compute against the fleet's median (TRAIN).
  void train_stage(const std::vector<Node>& reachable) {
    json params = {{"model", profile_.train_model}, {"engine", profile_.train_engine}, {"precision", profile_.train_precision},
                   {"batch", profile_.train_batch}, {"iters", profile_.train_steps}, {"warmup", 2},
                   {"world_sizes", {reachable.size()}}, {"sync", "ring"}, {"transport", profile_.transport}, {"predict", false}};
    if (profile_.train_engine == "replay") params["timeline"] = profile_.train_timeline;
    launch_retried("train", reachable, one_step("models.scaling", params));
  }

  int finish() {
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    log_.append(accept::end_record(seen_.run, static_cast<std::size_t>(runs_), elapsed_s));
    log_.sync();
    // The verdict is the judge's, from what the stages recorded: what `report --accept` says again.
    const accept::Acceptance recorded = accept::load_acceptance(dir_);
    const accept::Verdicts verdicts = accept::judge_acceptance(recorded, profile_);
    json out = accept::verdict_json(verdicts);
    out["profile"] = profile_.file;
    write_file_atomically(dir_ / "accept.json", out.dump(2) + "\n");
    const std::string title = "rocebench accept " + dir_.filename().string();
    const auto sections = accept::verdict_sections(verdicts);
    write_file_atomically(dir_ / "accept.md", reports::render_markdown(title, sections, "."));
    write_file_atomically(dir_ / "accept.html", reports::render_html(title, sections));
    write_file_atomically(dir_ / "junit.xml", accept::verdict_junit(verdicts));
    std::cout << "\n" << accept::verdict_table(verdicts);
    std::cout << fmt::format("verdict: {} (stages in {}){}\n", (dir_ / "accept.html").string(), (dir_ / "stages").string(),
                             options_.quick ? fmt::format("; the quick check took {:.1f} s", elapsed_s) : "");
    accept::write_actions(options_.actions, verdicts, accept::stamp_of(recorded, options_.actions.valid_h));
    if (!act_on_slurm(options_, verdicts)) return kExitInfra;
    return reports::acceptance_exit_code(verdicts);
  }

  AcceptOptions options_;
  std::vector<Node> nodes_;
  fs::path dir_;
  accept::Profile profile_;
  RecordWriter log_;     // accept.jsonl: what accept ran, and how each run ended
  accept::Acceptance seen_;  // the same, in memory: what the judge decides the next stage from
  int runs_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// Each line is one node with a verdict of its own: two lines naming one host would share its
// records, and the second would pass on evidence it never gave.
void refuse_duplicate_nodes(const std::vector<Node>& nodes, const std::string& file) {
  std::map<std::string, const Node*> seen;  // lowercased record name -> its first line (host names ignore case)
  for (const auto& n : nodes) {
    std::string key = n.host;
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    const auto [first, fresh] = seen.emplace(key, &n);
    if (fresh) continue;
    const Node& was = *first->second;
    const std::string same = was.name == n.name ? fmt::format("'{}' is already on line {}", n.name, was.line)
                                                : fmt::format("'{}' is the same host as '{}' on line {} ({})", n.name, was.name, was.line, n.host);
    throw InputError(file, n.line, "host", same + ": each line is one node; name each host once");
  }
}

std::vector<Node> nodes_of(const AcceptOptions& o) {
  std::vector<Node> nodes;
  if (!o.netns_file.empty()) {
    for (const auto& h : load_emulated_hosts(o.netns_file)) nodes.push_back({h.netns, h.address, h.name(), h.line, h.agent_port});
  } else {
    for (const auto& h : load_hostfile(o.hostfile)) nodes.push_back({h.host, "", record_host(h.host), h.line, 0});
  }
  refuse_duplicate_nodes(nodes, o.netns_file.empty() ? o.hostfile : o.netns_file);
  for (const auto& n : nodes) {
    if (n.host != n.name) std::cout << fmt::format("accept: {} is this host: its row is {}, the name its records carry\n", n.name, n.host);
  }
  return nodes;
}

}  // namespace

int accept_main(const Args& args) {
  return run_guarded("rocebench accept", [&]() -> int {
    AcceptOptions o;
    ArgParser p("rocebench accept",
                "Cluster acceptance: one verdict per node, PASS or FAIL with reason codes and evidence.\n"
                "Stages, each a run of its own in <results>/<run-id>/stages/: (1) every node joins and runs netcheck;\n"
                "a node that cannot join alone is UNREACHABLE, a failed check CONFIG; (2) the all-pairs link matrix,\n"
                "slow pairs retested alone: LINK; then, where the profile has a \"lossless\" section, an incast with every\n"
                "node the receiver once and each node's loss counters read around it: LOSSY (resent or dropped\n"
                "packets on its link), CONGESTED as a warning (its goodput stalled); (3) a ring allreduce over the\n"
                "reachable nodes, against the profile's fraction of the median pair: when it is slow (also on retry),\n"
                "bisection isolates the node: SLOW;\n"
                "(4) GEMM and host-to-device copies on every GPU of each node against the profile: GPU, naming the\n"
                "GPU (a skip without a GPU, UNVERIFIED when the profile requires one); (5) a short data-parallel\n"
                "training run over the reachable nodes: a node whose own compute delivers images/s below the\n"
                "profile's fraction of the fleet's median: TRAIN.\n"
                "Links, incast, allreduce and training go over the profile's transport: tcp, or verbs (RC queue pairs).\n"
                "--quick runs (1), (2) with each node's two ring neighbours only, and (4), with shorter waits.\n"
                "Writes accept.html, accept.md, accept.json and junit.xml (one suite per host); exit 1 when a node fails.");
    p.option("--hostfile", &o.hostfile, "the nodes ('host slots=N' lines); one rank per node", "FILE")
        .option("--netns", &o.netns_file, "hosts file ('NAME ADDRESS [agent=PORT]', as ci/testbeds/netns writes it) instead of a hostfile", "FILE")
        .option("--launcher", &o.launcher, "mpirun | srun, with --hostfile (default mpirun)", "NAME")
        .option("--mpirun", &o.mpirun, "the mpirun to use", "PATH")
        .option("--profile", &o.profile, fmt::format("what the hardware should deliver: {} (auto: relative to the fleet), or a JSON file",
                                                fmt::join(accept::builtin_profiles(), ", ")), "NAME")
        .option("--netcheck-tree", &o.netcheck_trees,
                "HOST=DIR: judge HOST's setup from a saved tree (DIR/root, DIR/capture) instead of the host itself", "HOST=DIR")
        .option("--results", &o.results_root, "folder that receives <run-id>/", "DIR")
        .option("--results-dir", &o.results_dir, "exact folder for this acceptance", "DIR")
        .option("--run-id", &o.run_id, "run id (default: UTC time and a random suffix)", "ID")
        .option("--deadline", &o.deadline_s, fmt::format("seconds any single wait may take (default {}, {} with --quick)", kDeadlineS, kQuickDeadlineS), "S")
        .range(0.5, 3600);
    accept::declare_action_options(p, o.actions);
    p.flag("--quick", &o.quick,
           "a health check between jobs: stage 1, each node's links with its two ring neighbours, and its GPUs; no allreduce, no training")
        .flag("--slurm-drain", &o.slurm_drain, "drain each failed node in Slurm, with its reason (scontrol update state=drain)")
        .flag("--slurm-resume", &o.slurm_resume, "resume each node rocebench drained earlier that passes now (never another's drain)")
        .flag("--dry-run", &o.dry_run, "with --slurm-drain / --slurm-resume: print the scontrol commands instead of running them");
    if (!p.parse(args)) return kExitOk;
    if (o.deadline_s == 0) o.deadline_s = o.quick ? kQuickDeadlineS : kDeadlineS;
    if (o.hostfile.empty() == o.netns_file.empty()) throw UsageError("rocebench accept: give --hostfile or --netns (one of them)\n\n" + p.usage());
    if (o.launcher != "mpirun" && o.launcher != "srun") {
      throw UsageError(fmt::format("rocebench accept: --launcher must be mpirun or srun, not '{}'", printable_excerpt(o.launcher)));
    }
    for (const auto& t : o.netcheck_trees) {
      const auto eq = t.find('=');
      if (eq == std::string::npos || eq == 0 || !fs::is_directory(fs::path(t.substr(eq + 1)) / "root")) {
        throw UsageError(fmt::format("rocebench accept: --netcheck-tree '{}': expected HOST=DIR with DIR/root a folder", printable_excerpt(t)));
      }
    }
    accept::check_action_options(o.actions);
    if (o.dry_run && !o.slurm_drain && !o.slurm_resume) throw UsageError("rocebench accept: --dry-run applies to --slurm-drain and --slurm-resume");
    refuse_bad_run_id("rocebench accept", o.run_id);
    const accept::Profile profile = accept::load_profile(o.profile);
    const fs::path dir = fs::absolute(o.results_dir.empty() ? fs::path(o.results_root) / (o.run_id.empty() ? new_run_id("accept") : o.run_id)
                                                            : fs::path(o.results_dir));
    // Stages write into it (plans, captures, records): an earlier acceptance's folder is refused.
    if (!o.results_dir.empty()) refuse_used_results_dir("rocebench accept", dir, "--results-dir", o.results_dir);
    else if (!o.run_id.empty()) refuse_used_results_dir("rocebench accept", dir, "--run-id", o.run_id);
    std::vector<Node> nodes = nodes_of(o);
    fs::create_directories(dir);
    std::cout << fmt::format("accept{}: {} node(s), profile {} (accepting over {}), results in {}\n", o.quick ? " --quick" : "",
                             nodes.size(), profile.file, profile.transport, dir.string());
    return Acceptance(o, std::move(nodes), dir, profile).run();
  });
}

}  // namespace rocebench
