#include "fixtures.hpp"

#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include "rocebench/common/scaling_loss.hpp"
#include "rocebench/common/stats.hpp"

namespace rocebench::reports::testing {

namespace fs = std::filesystem;

namespace {

// Every temp dir of a test process lives under one root, removed when the process exits.
struct TempRoot {
  fs::path path;
  TempRoot() {
    std::string pattern = (fs::temp_directory_path() / "rb-reports-XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~TempRoot() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

}  // namespace

fs::path temp_dir() {
  static TempRoot root;
  std::string pattern = (root.path / "test-XXXXXX").string();
  return fs::path(mkdtemp(pattern.data()));
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }

fs::path write_records(const fs::path& file, const std::vector<json>& records) {
  std::ofstream out(file);
  for (const auto& r : records) out << r.dump() << "\n";
  return file;
}

fs::path source_dir() { return fs::path(ROCEBENCH_SOURCE_DIR) / "reports" / "tests" / "data"; }

namespace {

json with_samples(ResultRecord r, const std::string& run, double median) {
  const std::vector<double> xs{median * 0.98, median * 0.99, median, median * 1.01, median * 1.02};
  r.samples = to_json(summarize(xs));
  return to_json(r, run);
}

}  // namespace

json train(const std::string& run, const std::string& model, const std::string& mode, int gpus, double images_per_s) {
  ResultRecord r;
  r.step = "models.train";
  r.host = "node01";
  r.world = gpus;
  r.params = {{"model", model}, {"engine", "cudnn"}, {"precision", "fp16"}, {"batch", 64}, {"mode", mode}};
  const double step_ms = 64.0 * gpus / images_per_s * 1000;
  r.metrics = {{"images_per_s", images_per_s}, {"step_time_ms_p50", step_ms}};
  return with_samples(r, run, step_ms);
}

namespace {

// A models.predict record as `rocebench predict` writes it; `loss` adds the what-if of the largest world size.
json prediction(const std::string& run, const std::string& sync, int gpus, double images_per_s, double efficiency, bool loss) {
  ResultRecord r;
  r.step = "models.predict";
  r.host = "node01";
  r.world = gpus;
  r.params = {{"model", "resnet50"}, {"engine", "predicted"}, {"timeline", "t"}, {"batch", 2}, {"mode", "data_parallel"},
              {"fabric", "25g-roce"}, {"sync", sync}, {"bucket_mb", 25}, {"first_bucket_mb", 1}, {"ranks", gpus}};
  r.metrics = {{"step_time_ms", 200.0 / efficiency}, {"images_per_s", images_per_s}, {"speedup", efficiency * gpus},
               {"efficiency", efficiency}, {"exposed_comm_ms", 200.0 / efficiency - 200}, {"nodes", (gpus + 7) / 8}};
  if (loss) {
    ScalingLoss l;
    l.target = 0.9;
    l.nic_Gbps = 25;
    l.nic_Gbps_needed = 38.2;
    l.efficiency_unlimited_nic = 0.99;
    l.bucket_mb_needed = 50;
    l.best_bucket_mb = 50;
    l.best_bucket_efficiency = 0.91;
    add_what_if_metrics(l, r.metrics);
  }
  r.samples = {{"n", 0}};
  return to_json(r, run);
}

}  // namespace


std::vector<json> measured_and_predicted_run(const std::string& run) {
  std::vector<json> records;
  for (int ranks : {1, 2, 4}) {
    ResultRecord r;
    r.step = "models.scaling";
    r.host = "node01";
    r.world = ranks;
    r.params = {{"model", "resnet50"}, {"engine", "replay"}, {"precision", "fp32"}, {"batch", 2}, {"mode", "data_parallel"},
                {"sync", "ring"}, {"transport", "tcp"}, {"bucket_mb", 25}, {"ranks", ranks}};
    r.metrics = {{"images_per_s", 10.0 * ranks * (ranks == 1 ? 1 : 0.9)}};
    r.samples = {{"n", 1}};
    records.push_back(to_json(r, run));
  }
  for (int gpus : {1, 8, 128}) {
    records.push_back(prediction(run, "ring", gpus, 10.0 * gpus * (gpus == 1 ? 1 : 0.8), gpus == 1 ? 1 : 0.8, gpus == 128));
    records.push_back(prediction(run, "ps", gpus, 10.0 * gpus * (gpus == 1 ? 1 : 0.2), gpus == 1 ? 1 : 0.2, false));
  }
  return records;
}

json collective(const std::string& run, const std::string& op, int world, double bytes, double time_us, double busbw,
                const std::string& transport) {
  ResultRecord r;
  r.step = "collectives." + op;
  r.host = "node01";
  r.world = world;
  r.params = {{"algorithm", "ring"}, {"transport", transport}, {"bytes", bytes}, {"dtype", "float32"}, {"inplace", false}};
  r.metrics = {{"time_us", time_us}, {"algbw_GBps", busbw / 1.5}, {"busbw_GBps", busbw}, {"wrong", 0}};
  return with_samples(r, run, time_us);
}

json probe(const std::string& run, const std::string& transport, const std::string& test, double bytes, double value,
           const std::string& host, const std::string& peer) {
  ResultRecord r;
  r.step = "microbench.probe";
  r.host = host;
  r.world = 2;
  r.params = {{"transport", transport}, {"test", test}, {"bytes", bytes}, {"peer", peer}};
  if (test.find("lat") != std::string::npos) {
    r.metrics = {{"lat_us_min", value * 0.9},  {"lat_us_max", value * 3}, {"lat_us_p50", value}, {"lat_us_avg", value * 1.02},
                 {"lat_us_stdev", value * 0.05}, {"lat_us_p99", value * 1.4}, {"lat_us_p99_9", value * 2}};
    return with_samples(r, run, value);
  }
  r.metrics = {{"bw_peak_Gbps", value * 1.01}, {"bw_avg_Gbps", value}, {"msg_rate_Mpps", value / 8 / bytes * 1000}};
  return to_json(r, run);
}

json pair(const std::string& run, const std::string& src, const std::string& dst, double gbps, bool flagged) {
  ResultRecord r;
  r.step = "microbench.allpairs";
  r.host = src;
  r.world = 3;
  r.params = {{"src", src}, {"dst", dst}, {"test", "write_bw"}};
  r.metrics = {{"bw_avg_Gbps", gbps}};
  if (flagged) {
    r.status = Status::fail;
    r.reason = "below 80% of the median pair";
  }
  return to_json(r, run);
}

json check(const std::string& run, const std::string& host, const std::string& id, const json& observed, bool ok) {
  CheckRecord c;
  c.check = id;
  c.host = host;
  c.subject = "mlx5_0";
  c.expected = "3";
  c.observed = observed;
  c.status = ok ? Status::ok : Status::fail;
  c.hint = "mlnx_qos -i eth2 --pfc 0,0,0,1,0,0,0,0";
  return to_json(c, run);
}

json skipped_check(const std::string& run, const std::string& host, const std::string& id, const std::string& reason) {
  CheckRecord c;
  c.check = id;
  c.host = host;
  c.subject = "host";
  c.status = Status::skip;
  c.reason = reason;
  return to_json(c, run);
}

json skipped_result(const std::string& run, const std::string& step, const std::string& host, int world, const json& params,
                    const std::string& reason) {
  ResultRecord r;
  r.step = step;
  r.host = host;
  r.world = world;
  r.params = params;
  r.status = Status::skip;
  r.reason = reason;
  return to_json(r, run);
}

std::vector<json> full_run(const std::string& run) {
  std::vector<json> out;
  const double one = 1000;
  for (int gpus : {1, 2, 4, 8}) out.push_back(train(run, "resnet50", "allreduce-rdma", gpus, one * gpus * (gpus == 1 ? 1 : 0.9)));
  for (int gpus : {1, 2, 8}) out.push_back(train(run, "resnet50", "allreduce-tcp", gpus, one * gpus * 0.6));
  for (int world : {2, 4}) {
    for (double bytes : {1024.0, 1048576.0, 67108864.0}) {
      const double busbw = bytes < 1e4 ? 0.5 : bytes < 1e7 ? 8 : 11.5 - world * 0.2;
      out.push_back(collective(run, "allreduce", world, bytes, bytes / (busbw / 1.5) / 1e3, busbw));
    }
  }
  for (const std::string transport : {"verbs", "tcp"}) {
    // microbench's test names: verbs name the operation, TCP does not.
    const bool verbs = transport == "verbs";
    const double f = verbs ? 1 : 8;
    out.push_back(probe(run, transport, verbs ? "write_lat" : "lat", 2, 1.6 * f));
    out.push_back(probe(run, transport, verbs ? "write_lat" : "lat", 4096, 2.9 * f));
    out.push_back(probe(run, transport, verbs ? "write_bw" : "bw", 65536, 92 / f));
  }
  for (const std::string src : {"node01", "node02", "node03"}) {
    for (const std::string dst : {"node01", "node02", "node03"}) {
      if (src != dst) out.push_back(pair(run, src, dst, dst == "node03" ? 41 : 93, dst == "node03"));
    }
  }
  ResultRecord summary;
  summary.step = "microbench.allpairs";
  summary.host = "node01";
  summary.world = 3;
  summary.params = {{"summary", true}, {"test", "write_bw"}};
  summary.status = Status::fail;
  summary.reason = "node03 stays bad after retest";
  out.push_back(to_json(summary, run));
  out.push_back(check(run, "node01", "roce.pfc.enabled_priorities", "3", true));
  out.push_back(check(run, "node02", "roce.pfc.enabled_priorities", "none", false));
  return out;
}

json run_record(const std::string& run, const std::string& time, const std::vector<std::pair<std::string, int>>& hosts) {
  json r = record_header("run", run);
  r["time"] = time;
  r["rocebench"] = {{"version", "0.1.0"}, {"git_revision", "abc1234"}};
  r["plan"] = {{"name", "fixture"}, {"sha256", std::string(64, '0')}};
  r["world"] = static_cast<int>(hosts.size()) * 2;
  r["launcher"] = "local";
  r["hosts"] = json::array();
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    json netdevs = json::array({json{{"name", "lo"}, {"operstate", "unknown"}}, json{{"name", "eno1"}, {"operstate", "up"}, {"speed_mbps", 1000}}});
    if (hosts[i].second > 0) netdevs.push_back({{"name", "ens1f0np0"}, {"operstate", "up"}, {"speed_mbps", hosts[i].second}});
    else netdevs = json::array({json{{"name", "ens1f0np0"}, {"operstate", "up"}}});  // a virtual link: no speed
    r["hosts"].push_back({{"hostname", hosts[i].first}, {"ranks", {2 * i, 2 * i + 1}}, {"kernel", "Linux 6.1.0"},
                          {"cpu", {{"model", "x86"}, {"cores", 64}}}, {"memory_bytes", 1LL << 39},
                          {"rdma", {{"rdma_core", "44.0"}, {"devices", json::array()}}}, {"netdevs", netdevs},
                          {"gpu", {{"devices", json::array()}}}});
  }
  return r;
}

std::vector<json> noisy_run(const std::string& run, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(1.0, 0.01);
  std::vector<json> out = full_run(run);
  for (auto& r : out) {
    if (r["kind"] != "result") continue;
    for (auto& [name, value] : r["metrics"].items()) {
      if (name != "wrong") value = value.get<double>() * noise(rng);
    }
    if (r["samples"].contains("median")) {
      const double median = r["samples"]["median"];
      std::vector<double> xs(20);
      for (auto& x : xs) x = median * noise(rng);
      r["samples"] = to_json(summarize(xs));
      r["samples"]["values"] = xs;
    }
  }
  return out;
}

}  // namespace rocebench::reports::testing
