#include "rocebench/microbench/probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "rocebench/common/cli.hpp"
#include "rocebench/microbench/tcp_probe.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "verbs_probe.hpp"

namespace rocebench::microbench {

namespace {

constexpr std::array kVerbsTests{"write_lat", "send_lat", "read_lat", "write_bw", "send_bw", "read_bw"};

TcpOptions tcp_options(const ProbeSpec& spec) { return {spec.test, spec.mode, spec.wait, spec.verbs.tos}; }

class TcpServer final : public ProbeServer {
 public:
  TcpServer(const ProbeSpec& spec, const std::string& address, int port)
      : spec_(spec), fd_(tcp::listen_on(address, port, 1)) {}
  ~TcpServer() override { ::close(fd_); }
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;
  int port() const override { return tcp::local_port(fd_); }
  std::unique_ptr<Probe> accept() override { return tcp_accept(fd_, tcp_options(spec_)); }

 private:
  ProbeSpec spec_;
  int fd_;
};

}  // namespace

void validate(const ProbeSpec& spec) {
  if (spec.transport == "tcp") {
    checked(tcp_options(spec));
  } else if (spec.transport == "verbs") {
    if (std::find(kVerbsTests.begin(), kVerbsTests.end(), spec.test) == kVerbsTests.end()) {
      throw UsageError(fmt::format("unknown verbs test '{}' ({})", spec.test, fmt::join(kVerbsTests, ", ")));
    }
    if (spec.verbs.connect != "cm" && spec.verbs.connect != "oob") {
      throw UsageError(fmt::format("unknown connection method '{}' (cm, oob)", spec.verbs.connect));
    }
    if (spec.verbs.qps < 1 || spec.driver.tx_depth < 1) throw UsageError("--qps and --tx-depth must be at least 1");
  } else {
    throw UsageError(fmt::format("unknown transport '{}' (verbs, tcp)", spec.transport));
  }
  if (spec.driver.cq_mod < 1) throw UsageError("--cq-mod must be at least 1");
  if (spec.verbs.bidirectional && (spec.transport != "verbs" || kind_of(spec) != ProbeKind::bandwidth)) {
    throw UsageError("--bidirectional is for the verbs bandwidth tests (write_bw, send_bw, read_bw)");
  }
  if (spec.verbs.gpu >= 0 && (spec.transport != "verbs" || spec.test == "write_lat" || spec.test == "send_lat")) {
    // Their ping-pong reads and writes flag bytes in the buffer from the host, as perftest's do.
    throw UsageError("--gpu is for the verbs bandwidth tests and read_lat (write_lat and send_lat poll the buffer "
                     "from the host)");
  }
  if (spec.driver.sizes.empty()) throw UsageError("no message sizes");
}

ProbeKind kind_of(const ProbeSpec& spec) {
  return spec.test.ends_with("lat") ? ProbeKind::latency : ProbeKind::bandwidth;
}

json spec_params(const ProbeSpec& spec) {
  json p = {{"transport", spec.transport}, {"test", spec.test}};
  if (spec.transport == "tcp") {
    p["mode"] = checked(tcp_options(spec)).mode;
    if (spec.verbs.tos >= 0) p["tos"] = spec.verbs.tos;
  }
  else p.update(verbs_params(spec));
  return p;
}

std::unique_ptr<ProbeServer> listen_probe(const ProbeSpec& spec, const std::string& address, int port) {
  validate(spec);
  if (spec.transport == "tcp") return std::make_unique<TcpServer>(spec, address, port);
  return verbs_listen(spec, address, port);
}

std::unique_ptr<Probe> connect_probe(const ProbeSpec& spec, const std::string& host, int port) {
  validate(spec);
  if (spec.transport == "tcp") return tcp_connect(host, port, tcp_options(spec));
  return verbs_connect(spec, host, port);
}

const OptionTable& probe_options() {
  static const OptionTable table = [] {
    const ProbeSpec d;
    json sizes = d.driver.sizes;
    return OptionTable(
        {{.key = "transport", .type = OptionType::text, .rules = {{"enum", {"tcp", "verbs"}}}, .fallback = d.transport,
          .help = "tcp | verbs"},
         {.key = "test", .type = OptionType::text,
          .rules = {{"enum", {"lat", "bw", "write_lat", "send_lat", "read_lat", "write_bw", "send_bw", "read_bw"}}},
          .help = "lat | bw (tcp); write_lat ... read_bw (verbs)"},
         {.key = "bytes", .flag = "--size", .type = OptionType::sizes, .rules = {{"minimum", 1}},
          .fallback = sizes, .help = "one message size, e.g. 64, 4K, 1M (a plan: one or a list)", .metavar = "BYTES"},
         {.key = "all", .flag = "--all", .type = OptionType::boolean, .fallback = false,
          .help = "sweep every power of two from 2 B to 8 MiB"},
         {.key = "iters", .flag = "--iters", .rules = {{"minimum", 1}, {"maximum", 1000000000}},
          .help = "iterations per size (default 1000 lat, 5000 bw)"},
         {.key = "duration_s", .flag = "--duration", .type = OptionType::number,
          .rules = {{"minimum", 0.001}, {"maximum", 86400}}, .help = "run each size this many seconds instead",
          .metavar = "S"},
         {.key = "warmup", .flag = "--warmup", .rules = {{"minimum", 0}, {"maximum", 1000000000}},
          .help = "warm-up iterations (default 100 lat, 2 windows bw)"},
         {.key = "tx_depth", .flag = "--tx-depth", .rules = {{"minimum", 1}, {"maximum", 16384}},
          .fallback = d.driver.tx_depth, .help = "bandwidth: messages in flight"},
         {.key = "cq_mod", .flag = "--cq-mod", .rules = {{"minimum", 1}, {"maximum", 16384}}, .fallback = d.driver.cq_mod,
          .help = "bandwidth: signal one WR in N, as perftest -Q"},
         {.key = "mode", .flag = "--mode", .type = OptionType::text, .rules = {{"enum", {"busy", "blocking"}}},
          .help = "tcp: busy (spin on non-blocking recv; lat default) | blocking (bw default)"},
         {.key = "device", .flag = "--device", .type = OptionType::text, .help = "verbs: RDMA device (default: the first)",
          .metavar = "NAME"},
         {.key = "ib_port", .flag = "--ib-port", .rules = {{"minimum", 1}, {"maximum", 255}}, .fallback = d.verbs.ib_port,
          .help = "verbs: device port"},
         {.key = "gid_index", .flag = "--gid-index", .rules = {{"minimum", 0}, {"maximum", 255}},
          .help = "verbs: GID index (default: the RoCE v2 GID of the address)"},
         {.key = "connect", .flag = "--connect", .type = OptionType::text, .rules = {{"enum", {"cm", "oob"}}},
          .fallback = d.verbs.connect, .help = "verbs: cm (rdma_cm) | oob (QP attributes over TCP)"},
         {.key = "tos", .flag = "--tos", .rules = {{"minimum", 0}, {"maximum", 255}},
          .help = "traffic class: the IP ToS byte (tcp) or the RoCE traffic class (verbs), e.g. 104 for DSCP 26"},
         {.key = "qps", .flag = "--qps", .rules = {{"minimum", 1}, {"maximum", 1024}}, .fallback = d.verbs.qps,
          .help = "verbs bw: queue pairs"},
         {.key = "bidirectional", .flag = "--bidirectional", .type = OptionType::boolean, .fallback = false,
          .help = "verbs bw: both directions at once"},
         {.key = "validate", .flag = "--validate", .type = OptionType::boolean, .fallback = false,
          .help = "verbs: check the data of every message"},
         {.key = "gpu", .flag = "--gpu", .rules = {{"minimum", 0}, {"maximum", 1023}},
          .help = "verbs: this side's buffers in GPU N's memory (GPUDirect RDMA: dma-buf, else nvidia-peermem); "
                  "bandwidth tests and read_lat"}},
        {{"iterations", "iters"}});
  }();
  return table;
}

json probe_params_schema() { return probe_options().schema(); }

ProbeSpec spec_from_params(const json& p) {
  const OptionTable& o = probe_options();
  ProbeSpec s;
  s.transport = o.get<std::string>(p, "transport");
  s.test = o.find<std::string>(p, "test").value_or(s.transport == "tcp" ? "lat" : "write_lat");
  const json bytes = o.get<json>(p, "bytes");
  s.driver.sizes = bytes.is_array() ? bytes.get<std::vector<std::size_t>>() : std::vector<std::size_t>{bytes.get<std::size_t>()};
  if (o.get<bool>(p, "all")) s.driver.sizes = sweep_sizes();
  s.driver.iterations = o.find<int>(p, "iters").value_or(s.driver.iterations);
  s.driver.warmup = o.find<int>(p, "warmup").value_or(s.driver.warmup);
  s.driver.duration_s = o.find<double>(p, "duration_s").value_or(s.driver.duration_s);
  s.mode = o.find<std::string>(p, "mode").value_or(s.mode);
  s.verbs.device = o.find<std::string>(p, "device").value_or(s.verbs.device);
  s.verbs.ib_port = o.get<int>(p, "ib_port");
  s.verbs.gid_index = o.find<int>(p, "gid_index").value_or(s.verbs.gid_index);
  s.verbs.connect = o.get<std::string>(p, "connect");
  s.verbs.tos = o.find<int>(p, "tos").value_or(s.verbs.tos);
  s.driver.tx_depth = o.get<int>(p, "tx_depth");
  s.driver.cq_mod = o.get<int>(p, "cq_mod");
  s.verbs.qps = o.get<int>(p, "qps");
  s.verbs.bidirectional = o.get<bool>(p, "bidirectional");
  s.verbs.validate = o.get<bool>(p, "validate");
  s.verbs.gpu = o.find<int>(p, "gpu").value_or(s.verbs.gpu);
  validate(s);
  return s;
}

}  // namespace rocebench::microbench
