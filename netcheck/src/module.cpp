#include "rocebench/netcheck/module.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/run_id.hpp"
#include "rocebench/common/hostname.hpp"
#include "rocebench/common/cli.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/netcheck/capture.hpp"
#include "rocebench/netcheck/checks.hpp"
#include "rocebench/netcheck/host_state.hpp"
#include "rocebench/netcheck/report.hpp"
#include "rocebench/reports/netcheck_verdict.hpp"

namespace rocebench::netcheck {

namespace {

constexpr const char* kProgram = "rocebench netcheck";
constexpr double kToolTimeoutS = 10.0;

// Tools describe the machine they run on, so they only run when the root is that machine.
ToolSource tool_source(const std::string& root, const std::string& capture, bool run_tools, double timeout_s) {
  if (!capture.empty()) {
    if (!std::filesystem::is_directory(capture)) throw InputError("--capture " + capture + ": not a folder");
    return ToolSource::captured(capture);
  }
  if (!run_tools) return ToolSource::none("tools are off");
  if (std::filesystem::path(root) != "/") return ToolSource::none("--root is not /, and the tools would read this machine");
  return ToolSource::live(std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)));
}

std::vector<std::string> modules_of(const Profile& profile) {
  std::vector<std::string> modules;
  for (const char* list : {"/rdma/modules", "/gpudirect/peermem_modules"}) {
    for (const auto& m : profile.at(list)) modules.push_back(m.get<std::string>());
  }
  return modules;
}

// NCCL's settings: the environment is read only when the host judged is this one.
NcclSources nccl_sources(const std::string& root, const std::vector<std::string>& job_files) {
  NcclSources s;
  s.environment = std::filesystem::path(root).lexically_normal() == "/";
  if (const char* home = std::getenv("HOME"); home && *home == '/') s.home = home;
  s.job_files.assign(job_files.begin(), job_files.end());
  return s;
}

std::vector<CheckRecord> check_host(const std::string& root, const Profile& profile, const ToolSource& tools,
                                    const std::string& hostname, const std::vector<std::string>& nccl_env) {
  if (!std::filesystem::is_directory(root)) throw InputError("--root " + root + ": not a folder");
  return run_checks(read_host(HostFs(root), tools, hostname, modules_of(profile), nccl_sources(root, nccl_env)), profile);
}

// Outputs in a capture folder that netcheck does not read are left out, and said so.
void list_ignored(const ToolSource& tools) {
  for (const auto& i : tools.ignored()) std::cerr << "netcheck: capture: ignored the output of a command it does not read: " << i << "\n";
  for (const auto& p : tools.passed_over()) std::cerr << "netcheck: capture: of two spellings, passed over " << p << "\n";
}

// One saved host to judge: its tree, its capture folder (may be empty) and its name.
struct SavedHost {
  std::string root, capture, host;
};

// The hosts of --root-each DIR: each folder in DIR is a host tree, its tool outputs in
// <host>/capture when present; its name is the tree's hostname, else the folder's name.
std::vector<SavedHost> saved_hosts(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw InputError("--root-each " + dir + ": not a folder");
  const auto is_tree = [](const fs::path& p) { return fs::is_directory(p / "sys") || fs::is_directory(p / "proc"); };
  if (is_tree(dir)) throw InputError("--root-each " + dir + ": is one host's tree (it has sys/ or proc/); judge it with --root");
  std::vector<SavedHost> hosts;
  std::map<std::string, std::string> root_of;
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory()) continue;
    if (is_tree(entry.path())) folders.push_back(entry.path());
    else std::cerr << "netcheck: --root-each: left out " << entry.path().string() << ": no sys/ or proc/ in it\n";
  }
  std::sort(folders.begin(), folders.end());
  for (const auto& folder : folders) {
    SavedHost h{folder.string(), "", tree_hostname(HostFs(folder))};
    if (h.host.empty()) h.host = folder.filename().string();
    if (fs::is_directory(folder / kCaptureFolder)) h.capture = (folder / kCaptureFolder).string();
    if (const auto [it, fresh] = root_of.emplace(h.host, h.root); !fresh) {
      throw InputError("--root-each " + dir + ": " + it->second + " and " + h.root + " are both host '" + h.host +
                       "'; two hosts are never merged");
    }
    hosts.push_back(std::move(h));
  }
  if (hosts.empty()) throw InputError("--root-each " + dir + ": no host trees (folders with sys/ or proc/) in it");
  return hosts;
}

// The table of check records, the settings that differ between their hosts, and the judge's exit
// code (reports/judge): 1 when a host fails, or is unverified without --allow-unverified, or hosts differ.
int judge(const std::vector<json>& records, bool allow_unverified) {
  print_table(std::cout, records);
  const reports::NetcheckJudgement judged = reports::judge_netcheck_checks(records);
  if (judged.hosts.size() > 1) print_differences(std::cout, judged.differences, judged.hosts.size());
  return reports::netcheck_exit_code(judged, allow_unverified);
}

// The hosts a run starts on (one local rank, or every host of --hostfile) check themselves as the
// one-step plan netcheck.host; their records, in the run's folder, are judged here.
int check_hosts(const LauncherFlags& launcher, const json& params, std::string run_id, bool allow_unverified) {
  if (run_id.empty()) run_id = new_run_id("netcheck");
  Args launch = launcher.to_args();
  launch.insert(launch.end(), {"--run-id", run_id});
  const CommandOrigin origin{kProgram, {{"profile", "--profile"}, {"tools", "--no-tools"}, {"tool_timeout_s", "--tool-timeout"}, {"nccl_env", "--nccl-env"}}};
  const int ran = run_step_as_plan("netcheck.host", params, launch, origin);
  if (ran != kExitOk && ran != kExitCheckFailed) return ran;
  std::string dir = launch_value(launch, "--results-dir");
  if (dir.empty()) {
    const std::string results = launch_value(launch, "--results");
    dir = (std::filesystem::path(results.empty() ? kDefaultResultsRoot : results) / run_id).string();
  }
  std::vector<json> checks;
  for (const auto& r : read_records(std::filesystem::path(dir) / "results.jsonl").records) {
    if (r.value("kind", std::string()) == "check") checks.push_back(r);
  }
  if (checks.empty()) throw InfraError("the run recorded no check records in " + dir);
  std::cout << "\n";
  return std::max(judge(checks, allow_unverified), ran);
}

int check_main(const Args& args) {
  std::string root, profile_name = "lossless-roce", capture, host, run_id, save_dir, root_each;
  bool no_tools = false, compare = false, list_checks = false, print_profile = false, allow_unverified = false;
  double tool_timeout_s = kToolTimeoutS;
  std::vector<std::string> files, nccl_env;
  LauncherFlags launcher(1);
  ArgParser parser(kProgram,
                   "Checks the RoCE lossless configuration (PFC, DSCP trust, ECN, CNP, RoCE v2 GIDs, MTU, link state\n"
                   "and rate, ACS, peer memory) of this host, or of every host of --hostfile --launcher mpirun|srun,\n"
                   "against a profile, as the one-step plan netcheck.host (records in rocebench-results/<run>/),\n"
                   "and prints a table grouped by device; with several hosts, every setting that differs.\n"
                   "--root / --root-each judge saved host trees here instead, without a run.\n"
                   "A setting that applies but cannot be read (tool missing, no permission, no capture) is 'unverified'.\n"
                   "With --compare, reads check records of several hosts and reports every setting that differs.\n"
                   "Reads only; never changes a setting. Exit 0 all good, 1 a check failed or is unverified (or hosts\n"
                   "differ), 2 bad input.");
  parser.option("--root", &root, "judge the saved host tree DIR (/sys, /proc, configfs) here, without a run; the host is the "
                                 "tree's hostname ('--root /': this machine)", "DIR")
      .option("--root-each", &root_each,
              "judge every host tree in DIR (tool outputs in DIR/<host>/capture) and compare them", "DIR")
      .option("--profile", &profile_name, "built-in profile name or JSON file (default lossless-roce)", "NAME|FILE")
      .option("--capture", &capture,
              "with --root: read tool outputs from DIR instead of running them: by DIR/COMMANDS.tsv (FILE<TAB>COMMAND per "
              "line), else by the names dcb-pfc-IF.txt, dcb-app-IF.txt, mlnx_qos-IF.txt, ethtool-S-IF.txt, lspci-vvv.txt",
              "DIR")
      .option("--save-capture", &save_dir,
              "run every tool netcheck uses and save their outputs (DIR/capture, with COMMANDS.tsv) and the files the "
              "checks read (DIR/sys, DIR/proc ...), for --root DIR --capture DIR/capture elsewhere",
              "DIR")
      .option("--nccl-env", &nccl_env,
              "a job's NCCL settings (NAME=VALUE lines, as `env | grep NCCL_` prints them), judged over the host's "
              "/etc/nccl.conf and ~/.nccl.conf (and this process's environment when the host is this one)", "FILE")
      .flag("--no-tools", &no_tools, "do not run dcb, mlnx_qos, ethtool or lspci")
      .option("--tool-timeout", &tool_timeout_s, "seconds each tool may take (default 10)", "S")
      .flag("--allow-unverified", &allow_unverified, "exit 0 although some checks are unverified (they are still reported)")
      .option("--host", &host, "with --root: host name in records (default: the tree's hostname)", "NAME")
      .option("--run-id", &run_id, "run id in records (default: netcheck-<time>)", "ID")
      .renamed("--out", "--results")
      .flag("--compare", &compare, "compare the check records in the given results files or folders across hosts")
      .flag("--list-checks", &list_checks, "print the check ids and exit")
      .flag("--print-profile", &print_profile, "print the profile after merging with the one it extends, and exit")
      .rest("RESULTS", &files, "for --compare: results files (JSON Lines), run folders, or folders of runs");
  launcher.add_to(parser);
  if (!parser.parse(args)) return kExitOk;
  const Args launch = launcher.given();  // refuses --results naming a file
  const std::string results = launch_value(launch, "--results");
  if (!files.empty() && !compare) throw UsageError(std::string(kProgram) + ": results files are only read with --compare\n\n" + parser.usage());
  if (tool_timeout_s <= 0) throw UsageError(std::string(kProgram) + ": --tool-timeout must be positive");
  if (!root_each.empty() && (!root.empty() || !capture.empty() || !host.empty() || !save_dir.empty())) {
    throw UsageError(std::string(kProgram) + ": --root-each names every host itself; it takes no --root, --capture, --host or --save-capture");
  }

  if (list_checks) {
    for (const auto& id : kCheckIds) std::cout << id << "\n";
    return kExitOk;
  }
  const bool saved_trees = !root.empty() || !root_each.empty() || !capture.empty() || !host.empty() || !save_dir.empty();
  // Only a run starts ranks; every other mode works here.
  if (saved_trees || compare) {
    for (std::size_t i = 0; i < launch.size(); i += 2) {
      if (launch[i] != "--results") {
        throw UsageError(fmt::format("{}: {} is for checking hosts through a run, not with --root, --root-each, --capture, "
                                     "--host, --save-capture or --compare", kProgram, launch[i]));
      }
    }
  }
  if (compare) return compare_main(files, results);

  const Profile profile = load_profile(profile_name);
  if (print_profile) {
    std::cout << profile.values.dump(2) << "\n";
    return kExitOk;
  }
  if (!saved_trees) {
    json params = {{"profile", profile_name}, {"tools", !no_tools}, {"tool_timeout_s", tool_timeout_s}};
    if (!nccl_env.empty()) {
      for (const auto& f : nccl_env) params["nccl_env"].push_back(std::filesystem::absolute(f).string());
    }
    return check_hosts(launcher, params, run_id, allow_unverified);
  }
  if (root.empty()) root = "/";
  if (!std::filesystem::is_directory(root)) throw InputError("--root " + root + ": not a folder");
  if (!save_dir.empty()) {
    const ToolSource tools = tool_source(root, capture, !no_tools, tool_timeout_s);
    list_ignored(tools);
    const SavedCapture saved = save_capture(save_dir, root, tools, modules_of(profile));
    for (const auto& n : saved.not_saved) std::cerr << "netcheck: not saved: " << n << "\n";
    std::cout << "saved " << saved.files << " files and links of the host tree and " << saved.outputs.size() << " tool outputs in "
              << save_dir << "; judge them with --root " << save_dir << " --capture "
              << (std::filesystem::path(save_dir) / kCaptureFolder).string() << "\n";
    return kExitOk;
  }

  std::vector<SavedHost> hosts;
  if (!root_each.empty()) {
    hosts = saved_hosts(root_each);
  } else {
    // A saved tree is its own host: never this machine's name.
    if (host.empty()) host = std::filesystem::path(root).lexically_normal() == "/" ? this_hostname() : tree_hostname(HostFs(root));
    if (host.empty()) {
      throw InputError("--root " + root + ": no hostname in proc/sys/kernel/hostname or etc/hostname; name the host with --host NAME");
    }
    hosts.push_back({root, capture, host});
  }
  if (run_id.empty()) run_id = new_run_id("netcheck");
  std::vector<json> records;
  for (const auto& h : hosts) {
    const ToolSource tools = tool_source(h.root, h.capture, !no_tools, tool_timeout_s);
    list_ignored(tools);
    for (const auto& c : check_host(h.root, profile, tools, h.host, nccl_env)) records.push_back(to_json(c, run_id));
  }
  if (!results.empty()) {
    RecordWriter writer(run_results_file(results, run_id));
    for (const auto& r : records) writer.append(r);
    writer.sync();
  }
  return judge(records, allow_unverified);
}

}  // namespace

namespace {

// The results files a --compare argument names: a file, a run's folder (its results.jsonl), or a
// folder of runs (each run's results.jsonl).
std::vector<std::filesystem::path> results_files_of(const std::string& given) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(given)) return {given};
  if (fs::exists(fs::path(given) / "results.jsonl")) return {fs::path(given) / "results.jsonl"};
  std::vector<fs::path> runs;
  for (const auto& entry : fs::directory_iterator(given)) {
    if (fs::exists(entry.path() / "results.jsonl")) runs.push_back(entry.path() / "results.jsonl");
  }
  if (runs.empty()) throw InputError(given + ": a folder without results.jsonl, nor runs that have one");
  std::sort(runs.begin(), runs.end());
  return runs;
}

}  // namespace

int compare_main(const std::vector<std::string>& given, const std::string& out) {
  if (given.empty()) throw UsageError(std::string(kProgram) + " --compare: give one or more results files or folders");
  std::vector<std::filesystem::path> files;
  for (const auto& g : given) {
    const auto more = results_files_of(g);
    files.insert(files.end(), more.begin(), more.end());
  }
  std::vector<json> records;
  for (const auto& file : files) {
    const RecordFile read = read_records(file, &result_schema());
    for (const auto& issue : read.issues) std::cerr << file.string() << ":" << issue.line << ": " << issue.message << "\n";
    records.insert(records.end(), read.records.begin(), read.records.end());
  }
  std::vector<std::string> hosts;
  for (const auto& r : records) {
    if (r.value("kind", std::string()) != "check") continue;
    const std::string h = r.value("host", std::string());
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  }
  if (hosts.size() < 2) {
    throw InputError("--compare needs check records of at least two hosts; found " + std::to_string(hosts.size()) +
                     (hosts.empty() ? "" : " (" + hosts.front() + ")"));
  }
  const auto diffs = reports::compare_hosts(records);
  print_differences(std::cout, diffs, hosts.size());
  if (!out.empty()) {
    const std::string run_id = records.front().value("run", std::string("netcheck-compare"));
    RecordWriter writer(run_results_file(out, run_id));
    for (const auto& r : difference_records(diffs)) writer.append(to_json(r, run_id));
    writer.sync();
  }
  return reports::differences_exit_code(diffs);
}

std::vector<Subcommand> subcommands() {
  return {{"netcheck", "RoCE lossless-configuration checks of this host against a profile, and across hosts",
           [](const Args& args) { return run_guarded(kProgram, [&] { return check_main(args); }); }}};
}

std::vector<StepKind> steps() {
  StepKind step;
  step.name = "netcheck.host";
  step.summary = "RoCE lossless-configuration checks of every host against a profile (runs on local_rank 0 of each host)";
  step.params_schema = json::parse(R"schema({
    "type": "object",
    "additionalProperties": false,
    "properties": {
      "profile": {"type": "string", "minLength": 1, "description": "built-in profile name or JSON file on the hosts"},
      "root": {"type": "string", "minLength": 1, "description": "read /sys and /proc under this folder (default /)"},
      "capture": {"type": "string", "minLength": 1, "description": "folder of captured tool outputs instead of running tools"},
      "tools": {"type": "boolean", "description": "run dcb, mlnx_qos, ethtool, lspci (default true)"},
      "tool_timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 120},
      "rdma_required": {"type": "boolean", "description": "override the profile: false makes a host without RDMA a skip, not a failure"},
      "save_capture": {"type": "string", "minLength": 1,
                       "description": "absolute folder (the run's, on a shared file system): each host saves what it read into FOLDER/<host>, for --root-each"},
      "nccl_env": {"type": "array", "items": {"type": "string", "minLength": 1},
                   "description": "files of a job's NCCL_* settings (NAME=VALUE lines), judged over the host's nccl.conf"},
      "per_host": {"type": "object", "description": "host name -> its own root and capture (a saved host judged in its place)",
                   "additionalProperties": {"type": "object", "additionalProperties": false, "properties": {
                     "root": {"type": "string", "minLength": 1}, "capture": {"type": "string", "minLength": 1}}}}
    }
  })schema");
  step.run = [](StepContext& ctx) {
    if (ctx.local_rank != 0) return;  // one check per host
    const json own = ctx.params.value("per_host", json::object()).value(ctx.host, json::object());
    const std::string root = own.value("root", ctx.params.value("root", std::string("/")));
    const std::string capture = own.value("capture", ctx.params.value("capture", std::string()));
    Profile profile = load_profile(ctx.params.value("profile", std::string("lossless-roce")));
    if (ctx.params.contains("rdma_required")) profile.values["rdma"]["required"] = ctx.params["rdma_required"];
    const double deadline_s = std::chrono::duration<double>(ctx.deadline).count();
    const double timeout_s = std::min(ctx.params.value("tool_timeout_s", kToolTimeoutS), deadline_s);
    const auto tools = tool_source(root, capture, ctx.params.value("tools", true), timeout_s);
    if (ctx.params.contains("save_capture")) {
      const std::filesystem::path folder = ctx.params["save_capture"].get<std::string>();
      if (!folder.is_absolute()) throw InputError("field 'save_capture': '" + folder.string() + "' is not an absolute path");
      save_capture(folder / ctx.host, root, tools, modules_of(profile));
    }
    const auto nccl_env = ctx.params.value("nccl_env", std::vector<std::string>{});
    for (const auto& c : check_host(root, profile, tools, ctx.host, nccl_env)) ctx.recorder->emit(to_json(c, ctx.run_id));
  };
  return {step};
}

}  // namespace rocebench::netcheck
