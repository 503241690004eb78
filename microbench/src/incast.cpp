#include "rocebench/microbench/incast.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <exception>
#include <iostream>
#include <mutex>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_fs.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/microbench/counters.hpp"
#include "rocebench/microbench/probe.hpp"
#include "verbs_probe.hpp"

namespace rocebench::microbench {

std::optional<double> jain_fairness(std::span<const double> goodputs) {
  double sum = 0, squares = 0;
  for (const double x : goodputs) {
    if (x < 0) throw std::invalid_argument("a goodput below zero has no fairness");
    sum += x;
    squares += x * x;
  }
  if (goodputs.empty() || squares == 0) return std::nullopt;
  return sum * sum / (static_cast<double>(goodputs.size()) * squares);
}

std::vector<double> aggregate_interval_Gbps(const std::vector<std::vector<std::uint64_t>>& stream_bytes,
                                            std::int64_t interval_ns) {
  if (stream_bytes.empty() || interval_ns <= 0) return {};
  std::size_t common = stream_bytes.front().size();
  for (const auto& s : stream_bytes) common = std::min(common, s.size());
  std::vector<double> out;
  for (std::size_t k = 1; k < common; ++k) {
    std::uint64_t bytes = 0;
    for (const auto& s : stream_bytes) bytes += s[k];
    out.push_back(static_cast<double>(bytes) * 8.0 / static_cast<double>(interval_ns));  // bits per ns = Gb/s
  }
  return out;
}

std::vector<int> receiver_order(const std::vector<std::string>& hosts, const std::string& receivers) {
  std::vector<int> order;
  if (receivers.empty()) {
    for (int i = 0; i < static_cast<int>(hosts.size()); ++i) order.push_back(i);
    return order;
  }
  std::istringstream names(receivers);
  for (std::string name; std::getline(names, name, ',');) {
    const auto it = std::find(hosts.begin(), hosts.end(), name);
    if (it == hosts.end()) {
      throw InputError(fmt::format("microbench.incast: receivers (--receivers): '{}' is not a host of this run ({})",
                                   printable_excerpt(name), fmt::join(hosts, ", ")));
    }
    const int index = static_cast<int>(it - hosts.begin());
    if (std::find(order.begin(), order.end(), index) != order.end()) {
      throw InputError(fmt::format("microbench.incast: receivers (--receivers): '{}' is named twice", name));
    }
    order.push_back(index);
  }
  if (order.empty()) throw InputError("microbench.incast: receivers (--receivers) names no host");
  return order;
}

namespace {

OptionSpec from_probe(const std::string& key) { return probe_options().at(key); }

}  // namespace

const OptionTable& incast_options() {
  static const OptionTable table = [] {
    OptionSpec bytes = from_probe("bytes"), duration = from_probe("duration_s"), qps = from_probe("qps"),
               cq_mod = from_probe("cq_mod");
    bytes.fallback = 65536;
    bytes.help = "message size, e.g. 64K";
    duration.fallback = 2.0;
    duration.help = "seconds each receiver's turn lasts";
    qps.help = "per sender: queue pairs (verbs) or TCP connections (tcp)";
    // A completion at least every few messages: goodput per 100 ms interval counts completions, and
    // one in perftest's 100 would leave whole intervals empty at a share of a 1 Gb/s link.
    cq_mod.fallback = 1;
    return OptionTable({from_probe("transport"), bytes, duration, qps, from_probe("tos"), from_probe("tx_depth"), cq_mod,
                        from_probe("device"), from_probe("ib_port"), from_probe("gid_index"), from_probe("connect"),
                        {.key = "receivers", .flag = "--receivers", .type = OptionType::text,
                         .rules = {{"minLength", 1}},
                         .help = "the receivers in turn, comma-separated host names (default: every host once, in "
                                 "rank order)",
                         .metavar = "HOSTS"},
                        {.key = "link_gbps", .flag = "--link-gbps", .type = OptionType::number,
                         .rules = {{"exclusiveMinimum", 0}, {"maximum", 100000}},
                         .help = "the receivers' link rate, for goodput's share of it (default: the speed the receiver's "
                                 "NIC driver gives; none on a virtual link such as the emulated hosts' veths)",
                         .metavar = "GBPS"}});
  }();
  return table;
}

namespace {

constexpr const char* kStep = "microbench.incast";

struct IncastParams {
  ProbeSpec spec;
  int streams = 1;  // probes per sender: TCP connections; a verbs probe carries its QPs itself
  std::string receivers;
  std::optional<double> link_gbps;
};

IncastParams incast_params(const json& params) {
  const OptionTable& o = incast_options();
  IncastParams ip;
  const std::string transport = o.get<std::string>(params, "transport");
  json probe = {{"transport", transport},
                {"test", transport == "tcp" ? "bw" : "write_bw"},
                {"bytes", o.get<json>(params, "bytes")},
                {"duration_s", o.get<double>(params, "duration_s")},
                {"tx_depth", o.get<int>(params, "tx_depth")},
                {"cq_mod", o.get<int>(params, "cq_mod")},
                {"warmup", 0}};  // the streams start together; the first interval (ramp-up) is left out instead
  for (const char* key : {"tos", "device", "ib_port", "gid_index", "connect"}) {
    if (params.contains(key)) probe[key] = params[key];
  }
  const int qps = o.get<int>(params, "qps");
  if (transport == "tcp") ip.streams = qps;
  else probe["qps"] = qps;
  ip.spec = spec_from_params(probe);
  if (ip.spec.driver.sizes.size() != 1) throw InputError("microbench.incast measures one message size");
  ip.spec.driver.interval_ns = kIncastIntervalNs;
  if (transport == "verbs") ip.spec.driver.drain_s = kIncastDrainS;
  ip.receivers = o.find<std::string>(params, "receivers").value_or("");
  ip.link_gbps = o.find<double>(params, "link_gbps");
  return ip;
}

// The series an incast record belongs to.
json series_params(const IncastParams& ip, int senders) {
  const ProbeSpec& s = ip.spec;
  json p = {{"transport", s.transport}, {"test", s.test}, {"bytes", s.driver.sizes.front()},
            {"duration_s", s.driver.duration_s}, {"qps", s.transport == "tcp" ? ip.streams : s.verbs.qps},
            {"senders", senders}};
  if (s.verbs.tos >= 0) p["tos"] = s.verbs.tos;
  return p;
}

// This host's counters that a lossless verdict reads: the kernel's TCP counters for TCP, the NIC's for verbs.
struct HostCounters {
  TcpCounterSnapshot tcp;
  CounterSnapshot nic;
};

HostCounters read_host_counters(const IncastParams& ip, const std::string& device) {
  HostCounters c;
  if (ip.spec.transport == "tcp") c.tcp = read_tcp_counters(HostFs(ip.spec.verbs.root));
  else c.nic = read_counters(ip.spec.verbs.root, device, ip.spec.verbs.ib_port);
  return c;
}

json counter_record_body(const IncastParams& ip, const HostCounters& before, const HostCounters& after) {
  return ip.spec.transport == "tcp" ? tcp_counter_deltas(before.tcp, after.tcp) : counter_deltas(before.nic, after.nic);
}

// The receiver's link rate: --link-gbps, else the speed the driver of the interface that carries
// `address` gives (asked by ioctl in this process's network namespace: an emulated host's /sys is the
// root namespace's). A virtual link's speed is not its rate (veth says 10000 Mb/s whatever tbf shapes
// it to), so there it is unknown and the record says why.
json link_rate(const IncastParams& ip, const std::string& address) {
  if (ip.link_gbps) return {{"Gbps", *ip.link_gbps}, {"source", "--link-gbps"}};
  std::string name;
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) == 0) {
    for (const ifaddrs* a = all; a; a = a->ifa_next) {
      if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
      char text[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
      if (address == text) name = a->ifa_name;
    }
    ::freeifaddrs(all);
  }
  if (name.empty()) return {{"unknown", fmt::format("no interface has the address {}: give --link-gbps", address)}};
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {{"unknown", fmt::format("socket: {}: give --link-gbps", std::strerror(errno))}};
  ifreq request{};
  std::snprintf(request.ifr_name, sizeof request.ifr_name, "%s", name.c_str());
  ethtool_drvinfo driver{};
  driver.cmd = ETHTOOL_GDRVINFO;
  request.ifr_data = reinterpret_cast<char*>(&driver);
  const bool has_driver = ::ioctl(fd, SIOCETHTOOL, &request) == 0;
  ethtool_cmd settings{};
  settings.cmd = ETHTOOL_GSET;
  request.ifr_data = reinterpret_cast<char*>(&settings);
  const bool has_speed = ::ioctl(fd, SIOCETHTOOL, &request) == 0;
  ::close(fd);
  const std::string driver_name = has_driver ? driver.driver : "";
  for (const char* virtual_link : {"veth", "bridge", "tun", "dummy", "ifb", "macvlan", "ipvlan", "vxlan"}) {
    if (driver_name == virtual_link) {
      return {{"unknown", fmt::format("{} is a {} link, whose speed is not its rate (a shaper's is): give --link-gbps",
                                      name, driver_name)}};
    }
  }
  const std::uint32_t mbps = has_speed ? ethtool_cmd_speed(&settings) : 0;
  if (mbps == 0 || mbps == static_cast<std::uint32_t>(SPEED_UNKNOWN)) {
    return {{"unknown", fmt::format("{} reports no speed: give --link-gbps", name)}};
  }
  return {{"Gbps", static_cast<double>(mbps) / 1000.0}, {"source", fmt::format("ethtool {} ({})", name, driver_name)}};
}

// Runs `work(i)` for i in [0, n) on n threads; the first exception any of them threw is rethrown.
template <typename Work>
void on_threads(std::size_t n, Work work) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(n);
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        work(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Nanoseconds on the wall clock: the one clock the hosts share (as closely as NTP or PTP keeps them).
std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The receiver's side of one turn: accepts every sender's streams in turn (one listener, one at a time,
// so that a verbs client's control socket and its rdma_cm request pair up), serves them all at once.
// Its clock gives the origin of every stream's 100 ms intervals, so that the streams' interval k is the
// same 100 ms at the receiver, however late a stream starts.
void receive(StepContext& ctx, const ProbeSpec& spec, const std::string& key, std::size_t streams) {
  Rendezvous& rdv = *ctx.rendezvous;
  auto listener = listen_probe(spec, ctx.address, 0);
  rdv.set(key + "/endpoint", fmt::format("{} {}", ctx.address, listener->port()));
  std::vector<std::unique_ptr<Probe>> probes;
  for (std::size_t c = 0; c < streams; ++c) {
    rdv.set(fmt::format("{}/turn/{}", key, c), "go");
    probes.push_back(listener->accept());
  }
  rdv.set(key + "/origin", std::to_string(wall_ns()));
  std::exception_ptr failed;
  std::thread serving([&] {
    try {
      on_threads(probes.size(), [&](std::size_t i) { run_passive(*probes[i]); });
    } catch (...) {
      failed = std::current_exception();
    }
  });
  try {
    rdv.barrier(key + "/connected", ctx.deadline);
  } catch (...) {
    serving.join();  // each passive wait has the spec's deadline
    throw;
  }
  serving.join();
  if (failed) std::rethrow_exception(failed);
}

// A sender's side: its streams connect in their turn, start together after every sender has connected,
// and what each measured goes to rank 0.
json send(StepContext& ctx, const ProbeSpec& spec, const std::string& key, std::size_t first_turn, int streams) {
  Rendezvous& rdv = *ctx.rendezvous;
  const std::string endpoint = rdv.get(key + "/endpoint", ctx.deadline);
  const auto space = endpoint.find(' ');
  std::vector<std::unique_ptr<Probe>> probes;
  for (int s = 0; s < streams; ++s) {
    rdv.get(fmt::format("{}/turn/{}", key, first_turn + static_cast<std::size_t>(s)), ctx.deadline);
    probes.push_back(connect_probe(spec, endpoint.substr(0, space), std::stoi(endpoint.substr(space + 1))));
  }
  rdv.barrier(key + "/connected", ctx.deadline);
  DriverOptions driver = spec.driver;
  const std::int64_t origin_wall = std::stoll(rdv.get(key + "/origin", ctx.deadline));
  driver.interval_origin_ns = now_ns() - (wall_ns() - origin_wall);  // on this host's monotonic clock
  std::vector<json> measured(probes.size());
  on_threads(probes.size(), [&](std::size_t i) {
    run_active(*probes[i], driver, [&](const ResultRecord& r) {
      measured[i] = {{"bw_avg_Gbps", r.metrics.value("bw_avg_Gbps", 0.0)},
                     {"interval_bytes", r.samples.value("interval_bytes", json::array())},
                     {"messages", r.samples.value("messages", 0)},
                     {"abandoned_messages", r.samples.value("abandoned_messages", 0)}};
      if (r.params.contains("tcp_congestion")) measured[i]["tcp_congestion"] = r.params["tcp_congestion"];
    });
  });
  return measured;
}

void run_incast_step(StepContext& ctx) {
  IncastParams ip = incast_params(ctx.params);
  ProbeSpec& spec = ip.spec;
  spec.wait = ctx.deadline;
  spec.verbs.address = ctx.address;
  spec.driver.step = ctx.step;
  Rendezvous& rdv = *ctx.rendezvous;
  const std::string& scope = ctx.scope;
  if (ctx.world < 2) throw InputError("microbench.incast needs at least 2 hosts (one receiver, one sender)");

  rdv.set(fmt::format("{}/host/{}", scope, ctx.rank), ctx.host);
  std::vector<std::string> hosts;
  for (int r = 0; r < ctx.world; ++r) hosts.push_back(rdv.get(fmt::format("{}/host/{}", scope, r), ctx.deadline));
  const std::vector<int> order = receiver_order(hosts, ip.receivers);  // every rank refuses the same names

  // Every host must be able to take part; one that cannot (verbs without an RDMA device) makes the
  // step a skip on all, with each host's reason.
  std::string device, unavailable;
  try {
    if (spec.transport == "verbs") device = verbs_device(spec);
  } catch (const Unavailable& e) {
    unavailable = e.what();
  }
  rdv.set(fmt::format("{}/unavailable/{}", scope, ctx.rank), unavailable);
  std::vector<std::string> reasons;
  for (int r = 0; r < ctx.world; ++r) {
    const std::string why = rdv.get(fmt::format("{}/unavailable/{}", scope, r), ctx.deadline);
    if (!why.empty()) reasons.push_back(fmt::format("{}: {}", hosts[static_cast<std::size_t>(r)], why));
  }
  const int senders = ctx.world - 1;
  if (!reasons.empty()) {
    if (ctx.rank == 0) {
      const std::string reason = fmt::format("{}", fmt::join(reasons, "; "));
      std::cout << fmt::format("skip: {}\n", reason) << std::flush;
      ctx.record(skip_record(ctx.step, series_params(ip, senders), reason));
    }
    return;
  }

  if (ctx.rank == 0) {
    std::cout << fmt::format("{:>16} {:>14} {:>10} {:>10} {:>16} {:>16}\n", "#receiver", "goodput[Gb/s]", "of link",
                             "fairness", "p1 100ms[Gb/s]", "p50 100ms[Gb/s]")
              << std::flush;
  }
  for (std::size_t turn = 0; turn < order.size(); ++turn) {
    const int receiver = order[turn];
    const std::string key = fmt::format("{}/turn{}", scope, turn);
    const HostCounters before = read_host_counters(ip, device);
    rdv.barrier(key + "/before", ctx.deadline);  // every host has read its counters before any traffic
    if (ctx.rank == receiver) {
      rdv.set(key + "/link", link_rate(ip, ctx.address).dump());
      receive(ctx, spec, key, static_cast<std::size_t>(senders * ip.streams));
    } else {
      const int sender = ctx.rank < receiver ? ctx.rank : ctx.rank - 1;  // index among the senders
      const json measured = send(ctx, spec, key, static_cast<std::size_t>(sender * ip.streams), ip.streams);
      rdv.set(fmt::format("{}/sent/{}", key, ctx.rank), measured.dump());
    }
    rdv.barrier(key + "/done", ctx.deadline);
    const HostCounters after = read_host_counters(ip, device);

    // Every host records its own counters over the turn (the record's host is this rank's).
    ctx.record(incast_counter_record(series_params(ip, senders), hosts[static_cast<std::size_t>(receiver)],
                                     ctx.rank == receiver, ctx.host, counter_record_body(ip, before, after)));

    if (ctx.rank != 0) continue;
    // Rank 0 puts the receiver's record together from what each sender measured.
    json per_sender = json::object(), abandoned = json::object();
    std::vector<double> goodputs;
    std::vector<std::vector<std::uint64_t>> intervals;
    std::string congestion;
    for (int r = 0; r < ctx.world; ++r) {
      if (r == receiver) continue;
      const json streams = json::parse(rdv.get(fmt::format("{}/sent/{}", key, r), ctx.deadline));
      double goodput = 0;
      for (const json& s : streams) {
        goodput += s.value("bw_avg_Gbps", 0.0);
        intervals.push_back(s.value("interval_bytes", json::array()).get<std::vector<std::uint64_t>>());
        congestion = s.value("tcp_congestion", congestion);
        if (const int left = s.value("abandoned_messages", 0)) {
          const std::string& sender = hosts[static_cast<std::size_t>(r)];
          abandoned[sender] = abandoned.value(sender, 0) + left;
        }
      }
      per_sender[hosts[static_cast<std::size_t>(r)]] = goodput;
      goodputs.push_back(goodput);
    }
    const double aggregate = std::accumulate(goodputs.begin(), goodputs.end(), 0.0);
    const std::vector<double> per_interval = aggregate_interval_Gbps(intervals);
    const json link = json::parse(rdv.get(key + "/link", ctx.deadline));

    ResultRecord r;
    r.params = series_params(ip, senders);
    r.params["receiver"] = hosts[static_cast<std::size_t>(receiver)];
    if (!congestion.empty()) r.params["tcp_congestion"] = congestion;
    r.metrics = {{"goodput_Gbps", aggregate}};
    r.metrics["sender_goodput_Gbps_min"] = *std::min_element(goodputs.begin(), goodputs.end());
    if (const auto fairness = jain_fairness(goodputs)) r.metrics["fairness_jain"] = *fairness;
    if (link.contains("Gbps")) {
      r.metrics["link_Gbps"] = link["Gbps"];
      r.metrics["link_share"] = aggregate / link["Gbps"].get<double>();
      r.samples["link_source"] = link["source"];
    } else {
      r.samples["link_unknown"] = link["unknown"];
    }
    if (!per_interval.empty()) {
      r.metrics["interval_goodput_Gbps_p1"] = percentile_nearest_rank(per_interval, 0.01);
      r.metrics["interval_goodput_Gbps_p50"] = percentile_nearest_rank(per_interval, 0.50);
    }
    r.samples["n"] = per_interval.size();
    r.samples["unit"] = "Gbps per 100 ms interval (the first, ramp-up, left out)";
    r.samples["values"] = per_interval;
    r.samples["per_sender_Gbps"] = per_sender;
    if (!abandoned.empty()) {
      r.samples["abandoned_messages"] = abandoned;
      r.samples["drain_s"] = spec.driver.drain_s;
    }
    if (per_interval.empty()) {
      r.status = Status::error;
      r.reason = fmt::format("no whole 100 ms interval after the first in {} s: give a longer --duration",
                             spec.driver.duration_s);
    }
    std::cout << fmt::format("{:>16} {:>14.3f} {:>10} {:>10.3f} {:>16.3f} {:>16.3f}\n",
                             hosts[static_cast<std::size_t>(receiver)], aggregate,
                             r.metrics.contains("link_share") ? fmt::format("{:.3f}", r.metrics["link_share"].get<double>())
                                                              : "-",
                             r.metrics.value("fairness_jain", 0.0), r.metrics.value("interval_goodput_Gbps_p1", 0.0),
                             r.metrics.value("interval_goodput_Gbps_p50", 0.0))
              << std::flush;
    for (const auto& [sender, left] : abandoned.items()) {
      std::cout << fmt::format("{:>16} {} message(s) from {} given up, none completing for {} s after the turn (the stream stalled)\n",
                               "", left.get<int>(), sender, spec.driver.drain_s)
                << std::flush;
    }
    ctx.record(r);
  }
}

}  // namespace

StepKind incast_step() {
  return {kStep,
          "incast stress: N-1 senders stream to one receiver at once, the receiver rotates; goodput, fairness, "
          "goodput per 100 ms and every host's counter deltas",
          incast_options().schema(), run_incast_step};
}

int incast_main(const std::string& transport, const Args& args) {
  return run_guarded("rocebench probe incast", [&]() -> int {
    const std::string program = fmt::format("rocebench probe {} incast", transport);
    if (transport != "tcp" && transport != "verbs") {
      throw UsageError(fmt::format("rocebench probe incast: the transport must be tcp or verbs, not '{}'",
                                   printable_excerpt(transport)));
    }
    LauncherFlags launcher(3);
    ArgParser p(program,
                "Incast stress: N-1 senders stream to one receiver at once for --duration seconds, then the next\n"
                "host receives, until every host (or each of --receivers) has. Records per receiver: goodput, its\n"
                "share of the link, per-sender goodput and Jain's fairness, goodput per 100 ms (p1, p50); per host\n"
                "and turn: the counter deltas (tcp: the kernel's TcpExt/Tcp/IpExt, verbs: the NIC's).\n"
                "As the plan step microbench.incast, one rank per host (default 3 local ranks; --netns, --launcher).");
    OptionFlags flags(incast_options(), p);
    launcher.add_to(p);
    if (!p.parse(args)) return kExitOk;
    json params = flags.params(program);
    params["transport"] = transport;
    return run_step_as_plan(kStep, params, launcher.to_args(), {program, incast_options().flag_of()});
  });
}

ResultRecord incast_counter_record(const json& series, const std::string& receiver, bool is_receiver, const std::string& host,
                                   const json& deltas) {
  ResultRecord r;
  r.step = "microbench.incast";
  r.host = host;
  r.params = series;
  r.params["receiver"] = receiver;
  r.params["role"] = is_receiver ? "receiver" : "sender";
  r.params["counters"] = series.value("transport", "") == "tcp" ? "kernel_tcp" : "nic";
  r.params["counters_of"] = host;  // one series per host: a history or an export keeps whose counters they are
  for (const auto& [name, value] : deltas.items()) {
    if (value.is_number()) r.metrics[name] = value;
  }
  r.samples = deltas.value("samples", json::object());
  r.samples["n"] = 1;
  return r;
}

}  // namespace rocebench::microbench
