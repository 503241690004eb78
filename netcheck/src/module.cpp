#include "rocebench/netcheck/module.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/net.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/netcheck/checks.hpp"
#include "rocebench/netcheck/host_state.hpp"
#include "rocebench/netcheck/report.hpp"

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

std::vector<CheckRecord> check_host(const std::string& root, const Profile& profile, const ToolSource& tools,
                                    const std::string& hostname) {
  if (!std::filesystem::is_directory(root)) throw InputError("--root " + root + ": not a folder");
  std::vector<std::string> modules;
  for (const char* list : {"/rdma/modules", "/gpudirect/peermem_modules"}) {
    for (const auto& m : profile.at(list)) modules.push_back(m.get<std::string>());
  }
  return run_checks(read_host(HostFs(root), tools, hostname, modules), profile);
}

int check_main(const Args& args) {
  std::string root = "/", profile_name = "lossless-roce", capture, host, run_id, out;
  bool no_tools = false, compare = false, list_checks = false, print_profile = false;
  double tool_timeout_s = kToolTimeoutS;
  std::vector<std::string> files;
  ArgParser parser(kProgram,
                   "Checks this host's RoCE lossless configuration (PFC, DSCP trust, ECN, CNP, RoCE v2 GIDs, MTU,\n"
                   "link state and rate, ACS, peer memory) against a profile and prints a table grouped by device.\n"
                   "With --compare, reads check records of several hosts and reports every setting that differs.\n"
                   "Reads only; never changes a setting. Exit 0 all good, 1 a check failed (or hosts differ), 2 bad input.");
  parser.option("--root", &root, "read /sys, /proc and configfs under DIR (a fixture tree)", "DIR")
      .option("--profile", &profile_name, "built-in profile name or JSON file (default lossless-roce)", "NAME|FILE")
      .option("--capture", &capture,
              "read tool outputs from DIR instead of running them: dcb-pfc-IF.txt, dcb-app-IF.txt, mlnx_qos-IF.txt, "
              "ethtool-S-IF.txt, lspci-vvv.txt",
              "DIR")
      .flag("--no-tools", &no_tools, "do not run dcb, mlnx_qos, ethtool or lspci")
      .option("--tool-timeout", &tool_timeout_s, "seconds each tool may take (default 10)", "S")
      .option("--host", &host, "host name in records (default: this host's name)", "NAME")
      .option("--run-id", &run_id, "run id in records (default: netcheck-<time>)", "ID")
      .option("--out", &out, "append the check records (JSON Lines) to FILE", "FILE")
      .flag("--compare", &compare, "compare the check records in the given results files across hosts")
      .flag("--list-checks", &list_checks, "print the check ids and exit")
      .flag("--print-profile", &print_profile, "print the profile after merging with the one it extends, and exit")
      .rest("FILE", &files, "results files (JSON Lines) for --compare");
  if (!parser.parse(args)) return kExitOk;
  if (!files.empty() && !compare) throw UsageError(std::string(kProgram) + ": results files are only read with --compare\n\n" + parser.usage());
  if (tool_timeout_s <= 0) throw UsageError(std::string(kProgram) + ": --tool-timeout must be positive");

  if (list_checks) {
    for (const auto& id : kCheckIds) std::cout << id << "\n";
    return kExitOk;
  }
  if (compare) return compare_main(files, out);

  const Profile profile = load_profile(profile_name);
  if (print_profile) {
    std::cout << profile.values.dump(2) << "\n";
    return kExitOk;
  }
  if (host.empty()) host = net::this_hostname();
  if (run_id.empty()) run_id = "netcheck-" + utc_now_rfc3339();
  const auto checks = check_host(root, profile, tool_source(root, capture, !no_tools, tool_timeout_s), host);

  std::vector<json> records;
  for (const auto& c : checks) records.push_back(to_json(c, run_id));
  if (!out.empty()) {
    RecordWriter writer(out);
    for (const auto& r : records) writer.append(r);
    writer.sync();
  }
  print_table(std::cout, records);
  const bool failed = std::any_of(checks.begin(), checks.end(), [](const CheckRecord& c) { return c.status == Status::fail; });
  return failed ? kExitCheckFailed : kExitOk;
}

}  // namespace

int compare_main(const std::vector<std::string>& files, const std::string& out) {
  if (files.empty()) throw UsageError(std::string(kProgram) + " --compare: give one or more results files");
  std::vector<json> records;
  for (const auto& file : files) {
    const RecordFile read = read_records(file, &result_schema());
    for (const auto& issue : read.issues) std::cerr << file << ":" << issue.line << ": " << issue.message << "\n";
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
  const auto diffs = compare_hosts(records);
  print_differences(std::cout, diffs, hosts.size());
  if (!out.empty()) {
    RecordWriter writer(out);
    const std::string run_id = records.front().value("run", std::string("netcheck-compare"));
    for (const auto& r : difference_records(diffs)) writer.append(to_json(r, run_id));
    writer.sync();
  }
  return diffs.empty() ? kExitOk : kExitCheckFailed;
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
    for (const auto& c : check_host(root, profile, tools, ctx.host)) ctx.recorder->emit(to_json(c, ctx.run_id));
  };
  return {step};
}

}  // namespace rocebench::netcheck
