#include "rocebench/microbench/driver.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/clock.hpp"

namespace rocebench::microbench {

std::vector<std::size_t> sweep_sizes(std::size_t from, std::size_t to) {
  std::vector<std::size_t> out;
  for (std::size_t s = std::max<std::size_t>(from, 1); s <= to; s *= 2) out.push_back(s);
  return out;
}

BandwidthFigures bandwidth_figures(std::size_t bytes, const std::vector<std::int64_t>& posted_ns,
                                   const std::vector<std::int64_t>& completed_ns, std::size_t cq_mod) {
  BandwidthFigures f;
  const std::size_t n = std::min(posted_ns.size(), completed_ns.size());
  if (n == 0) return f;
  const double bits = static_cast<double>(bytes) * 8.0;
  const double total_ns = static_cast<double>(completed_ns[n - 1] - posted_ns[0]);
  if (total_ns > 0) {
    f.avg_Gbps = bits * static_cast<double>(n) / total_ns;  // bits per ns = Gb/s
    f.msg_rate_Mpps = static_cast<double>(n) / total_ns * 1e3;
  }
  // perftest's peak: the smallest mean time per message over a run of consecutive messages, posted
  // i .. completed j, where j is a signaled completion (cq_mod - 1, 2 cq_mod - 1, ..., and the last).
  // Quadratic, so long runs stride over i to stay within ~4M pairs.
  const std::size_t grid = std::max<std::size_t>(1, cq_mod);
  const std::size_t stride = std::max<std::size_t>(1, n * (n / grid + 1) / (std::size_t{4} << 20));
  double best = std::numeric_limits<double>::infinity();
  auto consider = [&](std::size_t i, std::size_t j) {
    const double t = static_cast<double>(completed_ns[j] - posted_ns[i]) / static_cast<double>(j - i + 1);
    if (t > 0 && t < best) best = t;
  };
  for (std::size_t i = 0; i < n; i += stride) {
    for (std::size_t j = (i / grid + 1) * grid - 1; j < n; j += grid) consider(i, j);
    if (n % grid) consider(i, n - 1);
  }
  f.peak_Gbps = std::isfinite(best) ? bits / best : f.avg_Gbps;
  return f;
}

std::vector<std::uint64_t> bytes_per_interval(std::size_t bytes, std::int64_t origin,
                                              const std::vector<std::int64_t>& completed_ns, std::int64_t interval_ns,
                                              std::int64_t until_ns) {
  if ((completed_ns.empty() && until_ns == 0) || interval_ns <= 0) return {};
  const std::int64_t end = std::max(until_ns, completed_ns.empty() ? until_ns : completed_ns.back());
  const auto whole = static_cast<std::size_t>(std::max<std::int64_t>(0, (end - origin) / interval_ns));
  std::vector<std::uint64_t> out(whole, 0);
  for (const std::int64_t t : completed_ns) {
    const auto k = static_cast<std::size_t>(std::max<std::int64_t>(0, t - origin) / interval_ns);
    if (k < whole) out[k] += bytes;
  }
  return out;
}

void sum_directions(ResultRecord& r) {
  for (const char* name : {"bw_avg_Gbps", "bw_peak_Gbps", "msg_rate_Mpps"}) {
    const double fwd = r.metrics.value(name, 0.0), rev = r.metrics.value(std::string("rev_") + name, 0.0);
    r.metrics[std::string("fwd_") + name] = fwd;
    r.metrics[name] = fwd + rev;
  }
}

json latency_metrics(const Summary& s) {
  return {{"lat_us_min", s.min}, {"lat_us_max", s.max},     {"lat_us_p50", s.median},  {"lat_us_avg", s.avg},
          {"lat_us_stdev", s.stdev}, {"lat_us_p99", s.p99}, {"lat_us_p99_9", s.p999}};
}

std::size_t cq_moderation(const DriverOptions& o) { return static_cast<std::size_t>(std::max(1, std::min(o.cq_mod, o.tx_depth))); }

namespace {

constexpr int kLatencyIterations = 1000;  // perftest's defaults
constexpr int kBandwidthIterations = 5000;
constexpr std::size_t kBandwidthChunks = 20;  // spread of bandwidth: Gb/s of consecutive slices
constexpr std::size_t kMaxRawSamples = 10000;  // latency values a record keeps (~100 KB of JSON)

double elapsed_s(std::int64_t since) { return static_cast<double>(now_ns() - since) / 1e9; }

ResultRecord base_record(const Probe& probe, const DriverOptions& o, std::size_t bytes) {
  ResultRecord r;
  r.step = o.step;
  r.params = probe.params();
  r.params["bytes"] = bytes;
  r.params["peer"] = probe.peer();
  if (o.duration_s > 0) r.params["duration_s"] = o.duration_s;
  else r.params["iterations"] = o.iterations > 0 ? o.iterations
                                                 : (probe.kind() == ProbeKind::latency ? kLatencyIterations
                                                                                       : kBandwidthIterations);
  return r;
}

// The per-iteration latencies in measurement order, so a report draws their CDF rather than one
// through the percentiles: all of them up to kMaxRawSamples, else every k-th (`values_every` says k).
// Rounded to the nanosecond the clock resolves.
void keep_values(json& samples, const std::vector<double>& us) {
  const std::size_t every = std::max<std::size_t>(1, (us.size() + kMaxRawSamples - 1) / kMaxRawSamples);
  json values = json::array();
  for (std::size_t i = 0; i < us.size(); i += every) values.push_back(std::round(us[i] * 1e3) / 1e3);
  samples["values"] = std::move(values);
  samples["values_every"] = every;
  samples["metric"] = "lat_us_p50";  // what the values are samples of (the reports' latency headline)
}

// Keeps going while the iteration count or the duration says so.
struct LoopBound {
  int iterations;
  double duration_s;
  std::int64_t start = now_ns();
  bool more(std::size_t done) const {
    return duration_s > 0 ? elapsed_s(start) < duration_s : done + 1 < static_cast<std::size_t>(iterations);
  }
};

ResultRecord measure_latency(Probe& probe, const DriverOptions& o, std::size_t bytes) {
  ResultRecord r = base_record(probe, o, bytes);
  const int warmup = o.warmup >= 0 ? o.warmup : 100;
  for (int i = 0; i < warmup; ++i) probe.ping(false);
  std::vector<double> us;
  LoopBound bound{o.iterations > 0 ? o.iterations : kLatencyIterations, o.duration_s};
  us.reserve(bound.duration_s > 0 ? 1 << 16 : static_cast<std::size_t>(bound.iterations));
  const double divisor = probe.round_trip_divisor();
  bool last = false;
  while (!last) {
    last = !bound.more(us.size());
    const std::int64_t t0 = now_ns();
    probe.ping(last);
    us.push_back(static_cast<double>(now_ns() - t0) / 1e3 / divisor);
  }
  const Summary s = summarize(us, {.drop_largest = us.size() > 2 ? std::size_t{2} : std::size_t{0}});
  r.metrics = latency_metrics(s);
  r.samples = to_json(s);
  r.samples["unit"] = "us";
  keep_values(r.samples, us);
  return r;
}

// perftest's run_iter_bw: keep up to tx_depth messages in flight; the post time of every message and
// the time its completion was seen. A warm-up (untimed) fills and drains the window first, in duration
// mode for at most duration_s. With drain_s, a window that completes nothing for drain_s once
// duration_s is over is given up: its messages are left in flight (`abandoned`) and the loop ends. A
// slow window that still completes is waited for.
struct WindowTimes {
  std::vector<std::int64_t> posted, completed;
  std::size_t abandoned = 0;  // messages still in flight when the loop gave up on them
  std::int64_t gave_up_ns = 0;
};

WindowTimes run_windows(Probe& probe, const DriverOptions& o) {
  const std::size_t depth = static_cast<std::size_t>(std::max(1, o.tx_depth));
  const std::size_t moderation = cq_moderation(o);
  const int warmup = o.warmup >= 0 ? o.warmup : static_cast<int>(depth) * 2;
  const bool may_give_up = o.duration_s > 0 && o.drain_s > 0;
  const auto drain_ns = static_cast<std::int64_t>(o.drain_s * 1e9);
  // Silence counts from here: the duration's end, or the last completion after it.
  std::int64_t quiet_from = now_ns() + static_cast<std::int64_t>(o.duration_s * 1e9);
  WindowTimes t;
  auto& posted = t.posted;
  auto& completed = t.completed;
  // Completes messages until at most `in_flight` of `sent` remain; false once given up.
  auto complete_until = [&](std::vector<std::int64_t>& done, std::size_t sent, std::size_t in_flight) {
    while (sent - done.size() > in_flight) {
      if (const std::size_t n = probe.poll(!may_give_up)) {
        const std::int64_t now = now_ns();
        done.insert(done.end(), n, now);
        quiet_from = std::max(quiet_from, now);
      } else if (may_give_up && now_ns() - quiet_from > drain_ns) {
        t.abandoned = sent - done.size();
        t.gave_up_ns = now_ns();
        return false;
      }
    }
    return true;
  };
  // In duration mode the warm-up lasts no longer than the measurement: on a slow link its two windows
  // would take far longer than duration_s (and hold every other pair of an all-pairs round).
  const std::int64_t warm_until = o.duration_s > 0 ? now_ns() + static_cast<std::int64_t>(o.duration_s * 1e9) : 0;
  std::vector<std::int64_t> warm;
  std::size_t warm_posted = 0;
  for (bool last_warm = warmup <= 0; !last_warm;) {
    if (!complete_until(warm, warm_posted, depth - 1)) return t;
    last_warm = warm_posted + 1 == static_cast<std::size_t>(warmup) || (warm_until && now_ns() > warm_until);
    probe.post(false, (warm_posted + 1) % moderation == 0 || last_warm);
    ++warm_posted;
  }
  if (!complete_until(warm, warm_posted, 0)) return t;

  quiet_from = now_ns() + static_cast<std::int64_t>(o.duration_s * 1e9);
  LoopBound bound{o.iterations > 0 ? o.iterations : kBandwidthIterations, o.duration_s};
  bool last = false;
  while (!last) {
    if (!complete_until(completed, posted.size(), depth - 1)) return t;
    last = !bound.more(posted.size());
    posted.push_back(now_ns());
    probe.post(last, last || posted.size() % moderation == 0);
    const std::size_t n = probe.poll(false);
    if (n) completed.insert(completed.end(), n, now_ns());
  }
  complete_until(completed, posted.size(), 0);
  return t;
}

ResultRecord measure_bandwidth(Probe& probe, const DriverOptions& o, std::size_t bytes) {
  ResultRecord r = base_record(probe, o, bytes);
  const auto [posted, completed, abandoned, gave_up_ns] = run_windows(probe, o);
  BandwidthFigures f = bandwidth_figures(bytes, posted, completed, cq_moderation(o));
  if (abandoned > 0 && !posted.empty()) {  // what got through, over the whole time it was waited for
    const auto ns = static_cast<double>(gave_up_ns - posted.front());
    f.avg_Gbps = static_cast<double>(bytes * completed.size()) * 8.0 / ns;
    f.msg_rate_Mpps = static_cast<double>(completed.size()) / ns * 1e3;
  }
  r.metrics = {{"bw_peak_Gbps", f.peak_Gbps}, {"bw_avg_Gbps", f.avg_Gbps}, {"msg_rate_Mpps", f.msg_rate_Mpps}};

  // The spread: Gb/s of each of up to 20 consecutive slices of the run (of its messages that completed).
  std::vector<double> slices;
  const std::size_t per = std::max<std::size_t>(1, completed.size() / kBandwidthChunks);
  for (std::size_t i = 0; i + per <= completed.size(); i += per) {
    const double ns = static_cast<double>(completed[i + per - 1] - (i ? completed[i - 1] : posted[0]));
    if (ns > 0) slices.push_back(static_cast<double>(bytes * per) * 8.0 / ns);
  }
  if (!slices.empty()) {
    r.samples = to_json(summarize(slices));
    r.samples["unit"] = "Gbps per slice";
  }
  r.samples["messages"] = posted.size();
  if (abandoned > 0) r.samples["abandoned_messages"] = abandoned;
  if (o.interval_ns > 0) {
    r.samples["interval_ns"] = o.interval_ns;
    const std::int64_t origin = o.interval_origin_ns > 0 || posted.empty() ? o.interval_origin_ns : posted.front();
    r.samples["interval_bytes"] = bytes_per_interval(bytes, origin, completed, o.interval_ns, gave_up_ns);
  }
  return r;
}

}  // namespace

void run_active(Probe& probe, const DriverOptions& options, const RecordSink& sink) {
  for (const std::size_t bytes : options.sizes) {
    probe.begin_size(bytes);
    ResultRecord r = probe.kind() == ProbeKind::latency ? measure_latency(probe, options, bytes)
                                                        : measure_bandwidth(probe, options, bytes);
    const json extra = probe.end_size();  // named: items() of a temporary would dangle
    for (const auto& [name, value] : extra.items()) {
      if (name == "failure") {  // e.g. data validation: the measurement stands, the data was wrong
        r.status = Status::fail;
        r.reason = value.get<std::string>();
      } else if (name == "samples") {  // notes that go beside the samples (the NIC counters' sources)
        r.samples.update(value);
      } else if (value.is_number()) {
        r.metrics[name] = value;
      } else {
        r.params[name] = value;
      }
    }
    if (r.metrics.contains("rev_bw_avg_Gbps")) sum_directions(r);
    sink(r);
  }
  probe.begin_size(0);
}

int run_passive(Probe& probe) {
  int served = 0;
  while (const std::size_t bytes = probe.next_size()) {
    if (const auto loop = probe.reverse_loop()) {  // bidirectional: this side sends its own windows
      const WindowTimes t = run_windows(probe, *loop);
      probe.set_reverse_figures(bandwidth_figures(bytes, t.posted, t.completed, cq_moderation(*loop)));
    }
    probe.serve(bytes);
    ++served;
  }
  return served;
}

std::string table_header(ProbeKind kind) {
  if (kind == ProbeKind::latency) {
    return fmt::format("{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "#bytes", "#iters",
                       "t_min[us]", "t_max[us]", "t_typical", "t_avg[us]", "t_stdev", "99%", "99.9%");
  }
  return fmt::format("{:>10} {:>10} {:>16} {:>16} {:>12}\n", "#bytes", "#iters", "BW peak[Gb/s]", "BW avg[Gb/s]",
                     "MsgRate[Mpps]");
}

std::string table_row(const ResultRecord& r, ProbeKind kind) {
  const auto m = [&](const char* k) { return r.metrics.value(k, 0.0); };
  const std::size_t bytes = r.params.value("bytes", std::size_t{0});
  if (r.status == Status::skip || r.status == Status::error) {
    return fmt::format("{:>10} {}: {}\n", bytes, to_string(r.status), r.reason);
  }
  if (kind == ProbeKind::latency) {
    return fmt::format("{:>10} {:>10} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n", bytes,
                       r.samples.value("n", 0), m("lat_us_min"), m("lat_us_max"), m("lat_us_p50"), m("lat_us_avg"),
                       m("lat_us_stdev"), m("lat_us_p99"), m("lat_us_p99_9"));
  }
  return fmt::format("{:>10} {:>10} {:>16.3f} {:>16.3f} {:>12.6f}\n", bytes, r.samples.value("messages", 0),
                     m("bw_peak_Gbps"), m("bw_avg_Gbps"), m("msg_rate_Mpps"));
}

ResultRecord skip_record(const std::string& step, json params, const std::string& reason) {
  ResultRecord r;
  r.step = step;
  r.params = std::move(params);
  r.samples = {{"n", 0}};
  r.status = Status::skip;
  r.reason = reason;
  return r;
}

}  // namespace rocebench::microbench
