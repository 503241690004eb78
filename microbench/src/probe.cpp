#include "rocebench/microbench/probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/net.hpp"
#include "rocebench/microbench/tcp_probe.hpp"
#include "verbs_probe.hpp"

namespace rocebench::microbench {

namespace {

constexpr std::array kVerbsTests{"write_lat", "send_lat", "read_lat", "write_bw", "send_bw", "read_bw"};

TcpOptions tcp_options(const ProbeSpec& spec) { return {spec.test, spec.mode, spec.wait}; }

class TcpServer final : public ProbeServer {
 public:
  TcpServer(const ProbeSpec& spec, const std::string& address, int port)
      : spec_(spec), fd_(net::listen_on(address, port, 1)) {}
  ~TcpServer() override { ::close(fd_); }
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;
  int port() const override { return net::local_port(fd_); }
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
    if (spec.verbs.qps < 1 || spec.verbs.tx_depth < 1) throw UsageError("--qps and --tx-depth must be at least 1");
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
  if (spec.transport == "tcp") p["mode"] = checked(tcp_options(spec)).mode;
  else p.update(verbs_params(spec.verbs));
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

ProbeSpec spec_from_params(const json& p) {
  ProbeSpec s;
  s.transport = p.value("transport", s.transport);
  s.test = p.value("test", s.transport == "tcp" ? "lat" : "write_lat");
  if (p.contains("bytes")) {
    s.driver.sizes.clear();
    for (const auto& b : p["bytes"].is_array() ? p["bytes"] : json::array({p["bytes"]})) {
      s.driver.sizes.push_back(b.get<std::size_t>());
    }
  }
  if (p.value("all", false)) s.driver.sizes = sweep_sizes();
  s.driver.iterations = p.value("iterations", 0);
  s.driver.warmup = p.value("warmup", -1);
  s.driver.duration_s = p.value("duration_s", 0.0);
  s.mode = p.value("mode", "");
  s.verbs.device = p.value("device", "");
  s.verbs.ib_port = p.value("ib_port", 1);
  s.verbs.gid_index = p.value("gid_index", -1);
  s.verbs.connect = p.value("connect", "cm");
  s.verbs.tos = p.value("tos", -1);
  s.verbs.tx_depth = s.driver.tx_depth = p.value("tx_depth", 128);
  s.driver.cq_mod = p.value("cq_mod", 100);
  s.verbs.qps = p.value("qps", 1);
  s.verbs.bidirectional = p.value("bidirectional", false);
  s.verbs.validate = p.value("validate", false);
  s.verbs.gpu = p.value("gpu", -1);
  validate(s);
  return s;
}

json probe_params_schema() {
  return json::parse(R"({
    "type": "object", "additionalProperties": false,
    "properties": {
      "transport": {"enum": ["tcp", "verbs"]},
      "test": {"enum": ["lat", "bw", "write_lat", "send_lat", "read_lat", "write_bw", "send_bw", "read_bw"]},
      "bytes": {"anyOf": [{"type": "integer", "minimum": 1},
                          {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}}]},
      "all": {"type": "boolean"},
      "iterations": {"type": "integer", "minimum": 1},
      "warmup": {"type": "integer", "minimum": 0},
      "duration_s": {"type": "number", "exclusiveMinimum": 0},
      "mode": {"enum": ["busy", "blocking"]},
      "device": {"type": "string"},
      "ib_port": {"type": "integer", "minimum": 1},
      "gid_index": {"type": "integer", "minimum": 0},
      "connect": {"enum": ["cm", "oob"]},
      "tos": {"type": "integer", "minimum": 0, "maximum": 255},
      "tx_depth": {"type": "integer", "minimum": 1},
      "cq_mod": {"type": "integer", "minimum": 1},
      "qps": {"type": "integer", "minimum": 1},
      "bidirectional": {"type": "boolean"},
      "validate": {"type": "boolean"},
      "gpu": {"type": "integer", "minimum": 0}
    }})");
}

}  // namespace rocebench::microbench
