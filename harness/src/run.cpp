// `rocebench run`: the launcher side (start the ranks, wait, summarise) and the rank side
// (`--launcher env`: join the rendezvous, run every step, send records to rank 0).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "emulated_hosts.hpp"
#include "launch.hpp"
#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/hostname.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "metadata.hpp"
#include "plan.hpp"
#include "rendezvous.hpp"
#include "run.hpp"
#include "rocebench/reports/exit_code.hpp"
#include "rocebench/reports/history.hpp"
#include "rocebench/reports/report.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/run_id.hpp"
#include "rocebench/common/schema.hpp"

namespace rocebench {

namespace fs = std::filesystem;

namespace {



std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

// ---- the rank side -------------------------------------------------------------------------

// Stamps each result record of a step with the share of the step's time, so far, in which some task
// of this rank's machine waited for a CPU (`cpu_pressure_pct`), so that compare can tell a machine
// that was busy from code that got slower. Nothing is stamped where the kernel keeps no such count.
class PressureStamp final : public Recorder {
 public:
  explicit PressureStamp(Recorder& inner) : inner_(inner), start_(now()) {}
  void emit(const json& record) override {
    const auto end = now();
    if (!start_ || !end || record.value("kind", "") != "result" || end->second <= start_->second) return inner_.emit(record);
    const double wall_us = std::chrono::duration<double, std::micro>(end->second - start_->second).count();
    const double waited_us = static_cast<double>(end->first - start_->first);
    json stamped = record;
    stamped["cpu_pressure_pct"] = std::round(std::clamp(100 * waited_us / wall_us, 0.0, 100.0) * 10) / 10;
    inner_.emit(stamped);
  }
  void end_step() override { inner_.end_step(); }

 private:
  using Mark = std::pair<std::uint64_t, std::chrono::steady_clock::time_point>;
  static std::optional<Mark> now() {
    const auto total = cpu_pressure_total_us();
    if (!total) return std::nullopt;
    return Mark{*total, std::chrono::steady_clock::now()};
  }
  Recorder& inner_;
  const std::optional<Mark> start_;
};

// Runs every step of the plan on this rank. Throws InfraError when the run cannot go on.
void run_steps(const Plan& plan, const RankEnv& env, const std::string& run_id, const std::string& host,
               StoreClient& client, double deadline_s, const fs::path& results_dir) {
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& step = plan.steps[i];
    PressureStamp recorder(client);
    StepContext ctx;
    ctx.run_id = run_id;
    ctx.step = step.kind->name;
    ctx.scope = fmt::format("step{}", i);
    ctx.host = host;
    ctx.rank = env.rank;
    ctx.world = env.world;
    ctx.local_rank = env.local_rank;
    ctx.address = client.local_address();
    ctx.params = step.params;
    ctx.deadline = millis(deadline_s);
    ctx.rendezvous = &client;
    ctx.recorder = &recorder;
    ctx.results_dir = results_dir;
    try {
      step.kind->run(ctx);
    } catch (const std::exception& e) {
      // A broken peer connection may only be the echo of a rank that died elsewhere: the
      // rendezvous knows which ranks really died, so the reason names them.
      std::string reason = e.what();
      if (!dynamic_cast<const InputError*>(&e)) {
        try {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the server see the death first
          std::vector<std::string> unnamed;  // a transport's wait may have ended on the lost ranks and named them
          for (const std::string& lost : client.lost_ranks()) {
            if (reason.find(lost) == std::string::npos) unnamed.push_back(lost);
          }
          if (!unnamed.empty()) reason += fmt::format(" (lost ranks: {})", fmt::join(unnamed, "; "));
        } catch (const std::exception&) {
        }
      }
      // Recorded before anything else, so the results say which step failed on which rank.
      ResultRecord r;
      r.params = step.params;
      r.status = Status::error;
      r.reason = reason;
      try {
        ctx.record(r);
      } catch (const std::exception&) {
      }
      if (dynamic_cast<const InputError*>(&e)) throw;
      throw InfraError(reason);
    }
    client.barrier(fmt::format("step/{}", i), ctx.deadline);
    if (env.rank == 0) client.end_step();
  }
}

int rank_main(const RunOptions& options) {
  const RankEnv env = rank_env_from(current_environment());
  const std::string host = this_hostname();
  const auto& kinds = all_step_kinds();

  // Rank 0 alone reads the plan and owns the results; the others receive both from it.
  std::optional<Plan> plan;
  std::unique_ptr<RecordWriter> writer;
  std::unique_ptr<StoreServer> server;
  std::string run_id = options.run_id;
  double deadline_s = options.deadline_s;
  fs::path dir;  // rank 0's
  if (env.rank == 0) {
    plan = keep_steps(load_plan(options.plan_path, kinds), options.steps, kinds);
    // A copy carried to this host (a rank 0 started through an agent) is recorded as the launcher named it.
    if (const char* launchers_name = std::getenv("ROCEBENCH_PLAN_FILE")) plan->file = launchers_name;
    if (run_id.empty()) run_id = new_run_id();
    dir = options.results_dir.empty() ? fs::path(options.results_root) / run_id : fs::path(options.results_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    writer = std::make_unique<RecordWriter>(dir / "results.jsonl");
    if (deadline_s <= 0) deadline_s = plan->deadline_s;
    server = std::make_unique<StoreServer>(env.rendezvous, env.token, env.world, run_id,
                                           StoreServer::Sink{[w = writer.get()](const json& r) { w->append(r); },
                                                             [w = writer.get()] { w->sync(); }});
    server->start();
  }
  if (deadline_s <= 0) deadline_s = kDefaultDeadlineS;  // until rank 0 says the run's

  auto fail = [&](int code, const std::string& what) {
    std::cerr << fmt::format("rocebench run: rank {} on {}: {}\n", env.rank, host, what);
    return code;
  };

  int exit_code = kExitOk;
  try {
    StoreClient client(env.rendezvous, env.token, env.rank, env.world, host, Deadline(millis(deadline_s)));
    try {
      if (env.rank == 0) {
        client.set("run/id", run_id);
        client.set("run/plan", plan->text);
        client.set("run/plan_file", plan->file);
        client.set("run/deadline_s", std::to_string(deadline_s));
      } else {
        run_id = client.get("run/id", millis(deadline_s));
        deadline_s = std::stod(client.get("run/deadline_s", millis(deadline_s)));
        plan = parse_plan(client.get("run/plan", millis(deadline_s)), client.get("run/plan_file", millis(deadline_s)),
                          kinds);
      }
      json info = collect_host_info(host);
      if (plan->launcher.pin_cpus) {
        // Emulated hosts share this machine's CPUs: the local launcher numbers its ranks across them.
        const char* machine_rank = std::getenv("ROCEBENCH_MACHINE_RANK");
        const int slot = machine_rank ? std::stoi(machine_rank) : env.local_rank;
        const CpuPin pin = pin_to_cpu(slot);
        info["pinned"] = {{"cpu", pin.cpu}, {"shared", slot >= pin.allowed}, {"allowed", pin.allowed}};
      }
      client.set(fmt::format("run/host/{}", env.rank), info.dump());
      if (env.rank == 0) {
        std::vector<json> per_rank;
        for (int r = 0; r < env.world; ++r) per_rank.push_back(json::parse(client.get(fmt::format("run/host/{}", r), millis(deadline_s))));
        json run = record_header("run", run_id);
        run["rocebench"] = build_info();
        run["plan"] = {{"name", plan->name}, {"sha256", plan->sha256}, {"file", plan->file}};
        run["world"] = env.world;
        run["launcher"] = env.source;
        run["hosts"] = merge_hosts(per_rank);
        client.emit(run);
        client.end_step();
      }
      client.barrier("run/start", millis(deadline_s));
      run_steps(*plan, env, run_id, host, client, deadline_s, dir);
      client.barrier("run/end", millis(deadline_s));
    } catch (const InfraError& e) {
      exit_code = fail(kExitInfra, e.what());
    } catch (const InputError& e) {
      exit_code = fail(kExitBadInput, e.what());
    } catch (const std::exception& e) {
      exit_code = fail(kExitInfra, std::string("internal error: ") + e.what());
    }
    // A rank that stops on purpose says so, so that only real deaths count as lost ranks.
    try {
      client.goodbye();
    } catch (const std::exception&) {
    }
  } catch (const InfraError& e) {
    exit_code = fail(kExitInfra, e.what());
  }

  if (server) {
    // Rank 0 keeps the store up until every rank has said goodbye or is known lost.
    if (!server->wait_finished(Deadline(millis(deadline_s)))) {
      exit_code = fail(kExitInfra, "some ranks neither finished nor were reported lost before the deadline");
    }
    if (!server->lost_ranks().empty() && exit_code == kExitOk) exit_code = kExitInfra;
    writer->sync();
    if (exit_code == kExitOk) exit_code = reports::records_exit_code(read_records(writer->path()).records);
  }
  return exit_code;
}

// ---- the launcher side ---------------------------------------------------------------------

// The run's exit code is its ranks' worst: infrastructure (3, or a signal) > bad input > failed check > ok.
using reports::severity;

// A rank that died without its loss in the results (rank 0 itself, which records the others' losses,
// or an mpirun/srun that ended abnormally) is recorded by the launcher: no loss goes unreported.
// Under mpirun/srun, `reported` holds the ranks they said were killed, with their hosts.
void record_unreported_losses(const fs::path& results, const std::string& run_id, const std::vector<ChildExit>& exits,
                              const std::vector<ReportedDeath>& reported, const std::string& launcher) {
  std::set<int> recorded;
  for (const auto& r : read_records(results).records) {
    if (r.value("kind", "") == "event" && r.value("event", "") == "rank.lost") {
      recorded.insert(r.value("details", json::object()).value("rank", -2));
    }
  }
  for (const auto& d : reported) {
    if (!recorded.insert(d.rank).second) continue;
    RecordWriter(results).append(event_record(
        run_id, "rank.lost",
        fmt::format("rank {} on host {} was lost: {} (reported by {}, recorded by the launcher)", d.rank, d.host, d.ended, launcher),
        {{"rank", d.rank}, {"host", d.host}, {"ended", d.ended}}));
  }
  // mpirun and srun end abnormally when one of their ranks did: once rank 0 recorded that loss, their
  // exit is its echo, not a loss of its own (which would name the host the launcher runs on).
  const bool ranks_recorded = std::any_of(recorded.begin(), recorded.end(), [](int rank) { return rank >= 0; });
  for (const auto& e : exits) {
    if (severity(e.exit_code()) < 3 || recorded.count(e.child.rank)) continue;
    if (e.child.rank < 0 && ranks_recorded) continue;
    const std::string host = e.child.host.empty() ? this_hostname() : e.child.host;
    const std::string who = e.child.rank >= 0 ? fmt::format("rank {} on host {}", e.child.rank, host) : "the launcher (mpirun/srun)";
    RecordWriter(results).append(event_record(run_id, "rank.lost",
                                              fmt::format("{} was lost: {} (recorded by the launcher)", who, e.describe()),
                                              {{"rank", e.child.rank}, {"host", host}, {"ended", e.describe()}}));
  }
}

// The run's answer: the report in <run>/report, judged against the plan's thresholds, and its
// summary on the console. Returns the exit code the verdicts give (0, or 1 when one failed).
int report_run(const fs::path& dir) {
  reports::ReportRequest request;
  request.inputs = {(dir / "results.jsonl").string()};
  request.out_dir = dir / "report";
  request.thresholds_file = (dir / "plan.json").string();
  request.title = "rocebench run " + dir.filename().string();
  try {
    const reports::ReportResult r = reports::write_report(request);
    std::cout << r.summary;
    std::cout << fmt::format("report: {}{}\n", r.html.string(),
                             r.plots_missing.empty() ? "" : " (no plots: " + r.plots_missing + ")");
    return reports::verdicts_exit_code(r.verdicts);
  } catch (const std::exception& e) {
    std::cout << "report: not written: " << e.what() << "\n";
    return kExitInfra;
  }
}

// The plan's history (or --history): the run adds itself and the history's check judges it with
// the nights before. Only a run whose ranks all finished (exit 0 or 1): a partial run would read as
// a step. The check's exit code is 1 on a regression, or 2 / 3 when the database is bad / locked.
reports::NightCheck check_in_history(const std::string& db, const fs::path& dir, int run_exit_code, const std::string& rerun_of,
                                     reports::NightReruns* reruns) {
  if (severity(run_exit_code) > 1) {
    std::cout << fmt::format("history: {} not updated: the run did not finish (exit {})\n", db, run_exit_code);
    return {};
  }
  try {
    return reports::add_and_check(db, dir / "results.jsonl", dir / "history-junit.xml", rerun_of, reruns);
  } catch (const InputError& e) {
    std::cout << fmt::format("history: {} not updated: {}\n", db, e.what());
    return {.exit_code = kExitBadInput};
  } catch (const std::exception& e) {
    std::cout << fmt::format("history: {} not updated: {}\n", db, e.what());
    return {.exit_code = kExitInfra};
  }
}

// --rerun-of names a run of the history the run adds itself to: checked before any rank starts,
// not after the run, when it could no longer be added.
void refuse_bad_rerun_of(const std::string& rerun_of, const std::string& db) {
  if (rerun_of.empty()) return;
  if (db.empty()) {
    throw UsageError(fmt::format("rocebench run: --rerun-of {}: the run adds itself to no history (give --history DB, or a plan "
                                 "with a history)", printable_excerpt(rerun_of)));
  }
  const auto runs = fs::exists(db) ? reports::History(db, reports::History::Mode::existing).runs() : std::vector<reports::HistoryRun>{};
  const auto of = std::find_if(runs.begin(), runs.end(), [&](const auto& r) { return r.run == rerun_of; });
  if (of == runs.end()) throw UsageError(fmt::format("rocebench run: --rerun-of {}: no such run in {}", printable_excerpt(rerun_of), db));
  const auto night = std::find_if(runs.begin(), runs.end(), [&](const auto& r) { return r.run == of->night; });
  reports::check_rerun_time(rerun_of, of->night, night == runs.end() ? "" : night->time, "this run", utc_now_rfc3339());
}

// A run stopped by SIGINT/SIGTERM/SIGHUP says so in its results, with the steps that had recorded.
void record_interruption(const fs::path& results, const std::string& run_id, const std::vector<ChildExit>& exits) {
  const std::string signal = std::string("SIG") + sigabbrev_np(stop_signal());
  std::vector<std::string> steps;
  for (const auto& r : read_records(results).records) {
    const std::string step = r.value("step", "");
    if (r.value("kind", "") == "result" && std::find(steps.begin(), steps.end(), step) == steps.end()) steps.push_back(step);
  }
  json ranks = json::array();
  for (const auto& e : exits) ranks.push_back({{"rank", e.child.rank}, {"ended", e.describe()}});
  RecordWriter(results).append(event_record(
      run_id, "run.interrupted",
      fmt::format("the run was interrupted by {}; results of {} step(s) recorded before it are kept", signal, steps.size()),
      {{"signal", signal}, {"steps_with_results", steps}, {"ranks", ranks}}));
  std::cerr << fmt::format("rocebench run: interrupted by {}: every rank was stopped\n", signal);
}

}  // namespace

void refuse_bad_run_id(const std::string& program, const std::string& run_id) {
  // A run id names a folder under --results: nothing that climbs out of it or into another.
  if (!run_id.empty() && (run_id == "." || run_id == ".." ||
                          run_id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                              std::string::npos)) {
    throw UsageError(fmt::format("{}: --run-id: '{}' is not a folder name (letters, digits, '.', '_', '-')", program,
                                 printable_excerpt(run_id)));
  }
}

void refuse_used_results_dir(const std::string& program, const fs::path& dir, const std::string& flag, const std::string& value) {
  std::error_code ec;
  if (!fs::exists(dir, ec) || (fs::is_directory(dir, ec) && fs::is_empty(dir, ec))) return;
  throw UsageError(fmt::format("{}: {} '{}': the results folder {} already exists and is not empty (an earlier run's?): "
                               "choose another {}", program, flag, printable_excerpt(value), dir.string(),
                               flag == "--run-id" ? "run id" : "folder"));
}

// What one run of a plan left for the reruns its history check may ask for.
struct RunOutcome {
  std::string run_id, db;
  fs::path dir;
  int history_reruns = 0;                  // the plan's
  std::optional<reports::NightCheck> check;  // when the run added itself to a history
};

int run_once(const RunOptions& options, reports::NightReruns* reruns, RunOutcome& outcome) {
  const auto& kinds = all_step_kinds();
  const Plan plan = keep_steps(load_plan(options.plan_path, kinds), options.steps, kinds);  // bad plans stop here, before anything runs
  const std::string type = options.launcher.empty() ? plan.launcher.type : options.launcher;
  if (type != "local" && type != "mpirun" && type != "srun") {
    throw UsageError("rocebench run: --launcher must be local, mpirun, srun or env, not '" + type + "'");
  }
  const double deadline_s = options.deadline_s > 0 ? options.deadline_s : plan.deadline_s;
  const double timeout_s = options.timeout_s > 0 ? options.timeout_s : plan.run_timeout_s;

  // The results folder is made and tested before any rank starts (a dry run makes nothing).
  const std::string run_id = options.run_id.empty() ? new_run_id() : options.run_id;
  const fs::path dir = fs::absolute(options.results_dir.empty() ? fs::path(options.results_root) / run_id : fs::path(options.results_dir));
  const std::string db = !options.history_db.empty() ? options.history_db
                         : plan.history.empty()      ? ""
                                                     : (dir.parent_path() / plan.history).string();
  refuse_bad_rerun_of(options.rerun_of, db);
  outcome = {run_id, db, dir, options.reruns >= 0 ? options.reruns : plan.history_reruns, std::nullopt};
  if (!options.dry_run) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw InputError(dir.string(), 0, "", "cannot create the results folder: " + ec.message());
    { RecordWriter probe(dir / "results.jsonl"); }
    write_file_atomically(dir / "plan.json", plan.text);
  }

  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string plan_arg =
      plan.file.starts_with("builtin:") ? plan.file : fs::absolute(plan.file).string();
  // A rank's command line, reading the plan at `plan_path`.
  auto rank_argv = [&](const std::string& plan_path) {
    std::vector<std::string> argv{self, "run", "--launcher", "env", "--plan", plan_path, "--results-dir", dir.string(),
                                  "--run-id", run_id, "--deadline", fmt::format("{:g}", deadline_s)};
    for (const auto& kind : options.steps) argv.insert(argv.end(), {"--steps", kind});
    return argv;
  };
  LaunchSpec spec;
  spec.rank_argv = rank_argv(plan_arg);
  spec.env["ROCEBENCH_TOKEN"] = random_token();
  spec.mpirun = options.mpirun;

  std::vector<Child> children;
  std::vector<std::string> launcher_argv;
  std::unique_ptr<StderrTee> tee;  // mpirun's / srun's stderr
  std::optional<EmulatedHosts> made_hosts;  // taken down after the ranks end
  std::string where_ranks_ran;              // recorded when the plan asked for emulated hosts
  catch_stop_signals();
  if (type == "local") {
    const int ranks = options.ranks > 0 ? options.ranks : plan.launcher.ranks;
    std::vector<EmulatedHost> emulated;
    const bool plan_emulates = options.netns_file.empty() && !plan.launcher.emulated_link_rate.empty();
    if (!options.netns_file.empty()) {
      emulated = load_emulated_hosts(options.netns_file);
    } else if (plan_emulates && !options.dry_run) {
      if (options.loopback) {
        where_ranks_ran = "every rank ran on this host over loopback (--loopback), not on the emulated hosts the plan asks for";
      } else {
        try {
          made_hosts.emplace(ranks, plan.launcher.emulated_link_rate);
          emulated = made_hosts->hosts();
          where_ranks_ran = "rank i ran in emulated host i: " + made_hosts->describe();
        } catch (const std::runtime_error& e) {
          where_ranks_ran = fmt::format("every rank ran on this host over loopback: {}", e.what());
        }
      }
      std::cerr << "rocebench run: " << where_ranks_ran << "\n";
    }
    const std::string master = emulated.empty() ? "127.0.0.1" : emulated.front().address;
    spec.env["MASTER_ADDR"] = master;
    spec.env["MASTER_PORT"] = std::to_string(emulated.empty() ? tcp::pick_free_port(master) : kDefaultRendezvousPort);
    spec.env["WORLD_SIZE"] = std::to_string(ranks);
    if (options.dry_run) {
      std::cout << fmt::format("local: {} ranks{} of: {}\n", ranks,
                               plan_emulates && !options.loopback ? fmt::format(", each in an emulated host with a {} link when run as root",
                                                           plan.launcher.emulated_link_rate)
                                             : "",
                               fmt::join(spec.rank_argv, " "));
      return kExitOk;
    }
    std::map<std::string, int> per_host;
    for (int r = 0; r < ranks; ++r) {
      const EmulatedHost* host = emulated.empty() ? nullptr : &emulated[r % emulated.size()];
      auto env = spec.env;
      env["RANK"] = std::to_string(r);
      // Which CPU it pins itself to (pin_cpus): emulated hosts share this machine's; an agent's host has its own.
      if (!host || host->agent_port == 0) env["ROCEBENCH_MACHINE_RANK"] = std::to_string(r);
      env["LOCAL_RANK"] = std::to_string(per_host[host ? host->netns : ""]++);
      // Rank 0 reads the plan and writes the results. On an agent's host, which need not see this one's
      // files, it works in a copy of the results folder that travels with it: out with the plan as
      // written there (plan.json, recorded under the launcher's name for it), back with the results.
      const bool carried = r == 0 && host && host->agent_port > 0;
      const bool plan_carried = carried && !plan.file.starts_with("builtin:");
      if (plan_carried) env["ROCEBENCH_PLAN_FILE"] = plan_arg;
      children.push_back(spawn(plan_carried ? rank_argv((dir / "plan.json").string()) : spec.rank_argv, env, host, r, {},
                               carried ? dir.string() : ""));
      std::cerr << fmt::format("rocebench run: rank {} started, pid {}{}\n", r, children.back().pid,
                               host ? " in emulated host " + host->name() : "");
    }
  } else {
    const std::string hostfile = options.hostfile.empty()
                                     ? (fs::path(plan.file).parent_path() / plan.launcher.hostfile).string()
                                     : options.hostfile;
    spec.hosts = load_hostfile(hostfile);
    spec.ranks_per_host = options.ranks_per_host > 0 ? options.ranks_per_host : plan.launcher.ranks_per_host;
    spec.extra_args = plan.launcher.extra_args;
    spec.env["MASTER_ADDR"] = spec.hosts.front().host;
    spec.env["MASTER_PORT"] = std::to_string(kDefaultRendezvousPort);
    if (type == "mpirun" && ::geteuid() == 0) spec.extra_args.insert(spec.extra_args.begin(), "--allow-run-as-root");
    launcher_argv = type == "mpirun" ? mpirun_argv(spec) : srun_argv(spec);
    if (options.dry_run) {
      std::cout << fmt::format("{}\n", fmt::join(launcher_argv, " "));
      return kExitOk;
    }
    // Only mpirun / srun know which rank died where when rank 0 (which records losses) is the one.
    tee = std::make_unique<StderrTee>();
    SpawnIo io;
    io.stderr_fd = tee->write_fd();
    children.push_back(spawn(launcher_argv, spec.env, nullptr, -1, io));
    tee->start();
  }

  std::cerr << fmt::format("rocebench run: plan '{}', run {}, results in {}\n", plan.name, run_id, dir.string());
  const auto exits = wait_all(children, Deadline(millis(timeout_s)));
  const std::vector<ReportedDeath> reported =
      tee ? deaths_reported_by_launcher(tee->finish(std::chrono::seconds(2))) : std::vector<ReportedDeath>{};
  int exit_code = kExitOk;
  for (const auto& e : exits) {
    const int code = e.exit_code();
    if (code != 0) {
      std::cerr << fmt::format("rocebench run: {} ended: {}\n",
                               e.child.rank >= 0 ? fmt::format("rank {}", e.child.rank) : launcher_argv.front(), e.describe());
    }
    if (severity(code) > severity(exit_code)) exit_code = severity(code) == 3 ? kExitInfra : code;
  }
  if (!where_ranks_ran.empty()) {
    RecordWriter(dir / "results.jsonl")
        .append(event_record(run_id, made_hosts ? "hosts.emulated" : "hosts.loopback", where_ranks_ran,
                             {{"link_rate", plan.launcher.emulated_link_rate}}));
  }
  made_hosts.reset();
  if (stop_signal() != 0) {
    // Whoever stopped the run wants the prompt back (a CI timeout sends SIGKILL next): the report,
    // seconds of plotting, is left to the command this prints.
    record_interruption(dir / "results.jsonl", run_id, exits);
    std::cerr << fmt::format("rocebench run: what was recorded is in {}; `rocebench report {}` renders it\n",
                             (dir / "results.jsonl").string(), dir.string());
    return 128 + stop_signal();
  }
  record_unreported_losses(dir / "results.jsonl", run_id, exits, reported, launcher_argv.empty() ? "" : fs::path(launcher_argv.front()).filename().string());
  int verdict = options.report ? report_run(dir) : kExitOk;
  if (options.report) std::cout << "results: " << (dir / "results.jsonl").string() << "\n";
  if (!db.empty()) {
    outcome.check = check_in_history(db, dir, exit_code, options.rerun_of, reruns);
    verdict = reports::worse_exit_code(verdict, outcome.check->exit_code);
  }
  return reports::worse_exit_code(exit_code, verdict);
}

int launch_run(RunOptions options) {
  reports::NightReruns reruns;
  RunOutcome night, last;
  int exit_code = run_once(options, &reruns, night);
  last = night;
  // The night decides itself: while the check finds series UNKNOWN that reruns would decide and
  // nothing failed, rerun the steps behind them, each rerun joining the night.
  while (reruns.made < night.history_reruns && last.check && last.check->exit_code == kExitOk &&
         !last.check->rerun_would_decide.empty() && severity(exit_code) <= 1 && stop_signal() == 0) {
    std::set<std::string> steps;
    for (const auto& [label, step] : last.check->rerun_would_decide) steps.insert(step);
    RunOptions again = options;
    again.steps.assign(steps.begin(), steps.end());
    again.rerun_of = last.check->night;
    again.history_db = night.db;
    again.run_id = fmt::format("{}-rerun{}", night.run_id, reruns.made + 1);
    again.results_dir = fmt::format("{}-rerun{}", night.dir.string(), reruns.made + 1);
    reruns.unknown_before = last.check->unknown;
    ++reruns.made;
    std::cout << fmt::format("history: rerun {} of up to {} of night {}: {} series UNKNOWN that a rerun would decide; rerunning {}\n",
                             reruns.made, night.history_reruns, again.rerun_of, last.check->rerun_would_decide.size(),
                             fmt::join(steps, ", "));
    std::cout.flush();
    const int rc = run_once(again, &reruns, last);
    exit_code = reports::worse_exit_code(exit_code, rc);
  }
  if (reruns.made > 0) {
    // The night's JUnit says what the reruns decided.
    std::error_code ec;
    fs::copy_file(last.dir / "history-junit.xml", night.dir / "history-junit.xml", fs::copy_options::overwrite_existing, ec);
    if (last.check && !last.check->unknown.empty()) {
      std::cout << fmt::format("history: {} series still UNKNOWN after {} rerun(s) of night {}\n", last.check->unknown.size(),
                               reruns.made, night.run_id);
    }
  }
  return exit_code;
}

// run's options, for `rocebench run` and for the launcher flags of a module command (`program`).
ArgParser run_parser(const std::string& program, RunOptions& o, std::string& plan_positional) {
  ArgParser p(program,
              "Runs a plan: starts its ranks (local, mpirun or srun), which meet at a rendezvous served by rank 0,\n"
              "run every step and append result records to <results>/<run-id>/results.jsonl.\n"
              "With no plan, runs the built-in local plan (harness/plans/local.json).");
  p.positional("PLAN", &plan_positional, "plan file (default: the built-in local plan)", false)
      .option("--plan", &o.plan_path, "plan file, or builtin:local or builtin:nightly", "FILE")
      .option("--launcher", &o.launcher, "local | mpirun | srun (default: the plan's), or env: be one rank", "NAME")
      .option("--ranks", &o.ranks, "ranks to start with the local launcher")
      .range(plan_field_schema("/launcher/ranks"))
      .option("--hostfile", &o.hostfile, "hosts for mpirun / srun ('host slots=N' lines)", "FILE")
      .option("--ranks-per-host", &o.ranks_per_host, "ranks on each host (default: the hostfile's slots)")
      .range(plan_field_schema("/launcher/ranks_per_host"))
      .option("--results", &o.results_root, "folder that receives <run-id>/results.jsonl", "DIR")
      .option("--results-dir", &o.results_dir, "exact results folder for this run", "DIR")
      .option("--run-id", &o.run_id, "run id (default: UTC time and a random suffix)", "ID")
      .option("--netns", &o.netns_file, "hosts file ('NAME ADDRESS [agent=PORT]', as ci/testbeds/netns writes it): rank i runs in host i, in its network namespace or through its agent", "FILE")
      .flag("--loopback", &o.loopback, "keep every rank on this host even when the plan asks for emulated hosts")
      .option("--mpirun", &o.mpirun, "the mpirun to use", "PATH")
      .option("--deadline", &o.deadline_s, "seconds any single wait may take (default: the plan's)", "S")
      .range(plan_field_schema("/deadline_s"))
      .option("--timeout", &o.timeout_s, "seconds the whole run may take (default: the plan's)", "S")
      .range(plan_field_schema("/run_timeout_s"))
      .option("--history", &o.history_db,
              "add the run to this history database and check it with the runs before (default: the plan's history)", "DB")
      .option("--rerun-of", &o.rerun_of, "this run repeats that run of the history (an UNKNOWN asked for it): it joins its night", "RUN")
      .option("--reruns", &o.reruns, "when the history's check finds series UNKNOWN that reruns would decide, rerun their steps "
                                     "up to N times, each joining the night, then exit with the decision (default: the plan's "
                                     "history_reruns: 3 for builtin:nightly, else 0)")
      .range(plan_field_schema("/history_reruns"))
      .option("--steps", &o.steps, "run only the plan's steps of this kind (repeatable)", "KIND")
      .flag("--dry-run", &o.dry_run, "print how the ranks would be started, start nothing");
  return p;
}

// A module command's params, checked against its step's schema before the temporary plan exists:
// the error names the flag and the value typed, not a field of a file the user never saw.
void refuse_bad_flags(const std::string& step, const json& params, const CommandOrigin& origin) {
  for (const auto& kind : all_step_kinds()) {
    if (kind.name != step) continue;
    const auto errors = JsonSchema(kind.params_schema).validate(params);
    if (errors.empty()) return;
    const SchemaError& e = errors.front();
    const std::string param = e.pointer.substr(1, e.pointer.find('/', 1) - 1);
    const auto flag = origin.flag_of.find(param);
    const json::json_pointer at(e.pointer.empty() ? "" : e.pointer);
    const std::string value = params.contains(at) ? printable_excerpt(params.at(at).dump()) : "";
    throw UsageError(flag == origin.flag_of.end()
                         ? fmt::format("{}: parameter '{}' {}: {}", origin.program, e.pointer.substr(1), value, e.message)
                         : fmt::format("{}: {} {}: {}", origin.program, flag->second, value, e.message));
  }
}

// The launcher flags of a module command (--ranks 0 …), refused in the command's own name.
void refuse_bad_launcher_flags(const std::vector<std::string>& launcher_args, const CommandOrigin& origin) {
  RunOptions o;
  std::string plan;
  try {
    run_parser(origin.program, o, plan).parse(launcher_args);
  } catch (const UsageError& e) {
    const std::string message = e.what();
    throw UsageError(message.substr(0, message.find("\n\n")));  // run's usage is not the command's
  }
}

void install_step_runner() {
  set_launcher_check(refuse_bad_launcher_flags);
  set_step_runner([](const std::string& step, const json& params, const std::vector<std::string>& launcher_args,
                     const CommandOrigin& origin) {
    refuse_bad_flags(step, params, origin);
    refuse_bad_launcher_flags(launcher_args, origin);
    // The plan is a file, like any other, so that the run's plan.json and hash describe it.
    // How many local ranks: the command's --ranks (LauncherFlags gives its default).
    const json plan = {{"name", "cli-" + step}, {"launcher", {{"type", "local"}}},
                       {"steps", json::array({{{"step", step}, {"params", params}}})}};
    char name[] = "/tmp/rocebench-plan-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw InfraError("cannot create a temporary plan file");
    ::close(fd);
    write_file_atomically(name, plan.dump(2) + "\n");
    Args args{name};
    args.insert(args.end(), launcher_args.begin(), launcher_args.end());
    const int rc = run_main(args);
    fs::remove(name);
    return rc;
  });
}

int run_main(const Args& args) {
  return run_guarded("rocebench run", [&]() -> int {
    RunOptions o;
    std::string plan_positional;
    ArgParser p = run_parser("rocebench run", o, plan_positional);
    if (!p.parse(args)) return kExitOk;
    if (!plan_positional.empty()) o.plan_path = plan_positional;
    refuse_bad_run_id("rocebench run", o.run_id);
    if (o.launcher == "env") {
      if (o.results_dir.empty() && !o.run_id.empty()) o.results_dir = (fs::path(o.results_root) / o.run_id).string();
      return rank_main(o);
    }
    if (o.results_dir.empty() && !o.run_id.empty()) {
      refuse_used_results_dir("rocebench run", fs::path(o.results_root) / o.run_id, "--run-id", o.run_id);
    }
    return launch_run(o);
  });
}

}  // namespace rocebench
