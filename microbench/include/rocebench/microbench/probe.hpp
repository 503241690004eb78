#pragma once
// One probe as the CLI and the plan step describe it, and the transport-neutral way to open one:
// a server listens and accepts, a client connects. Verbs or TCP is decided here and nowhere else.
#include <chrono>
#include <memory>
#include <string>

#include "rocebench/common/options.hpp"
#include "rocebench/microbench/driver.hpp"
#include "rocebench/microbench/verbs.hpp"

namespace rocebench::microbench {

struct ProbeSpec {
  std::string transport = "tcp";  // tcp | verbs
  std::string test = "lat";       // tcp: lat, bw; verbs: write_lat ... read_bw
  DriverOptions driver;
  std::string mode;  // tcp: busy | blocking (empty = the test's default)
  std::chrono::milliseconds wait{30000};  // deadline of every single wait
  VerbsProbeOptions verbs;
};

// Throws UsageError for an unknown transport or test.
void validate(const ProbeSpec& spec);
ProbeKind kind_of(const ProbeSpec& spec);
// The params every record of this spec carries (also those of a skip record).
json spec_params(const ProbeSpec& spec);

class ProbeServer {
 public:
  virtual ~ProbeServer() = default;
  virtual int port() const = 0;
  virtual std::unique_ptr<Probe> accept() = 0;  // one client, within the spec's wait
};

// Both throw Unavailable when this host cannot run the probe at all (no RDMA device): a
// skip, with the reason.
std::unique_ptr<ProbeServer> listen_probe(const ProbeSpec& spec, const std::string& address, int port);
std::unique_ptr<Probe> connect_probe(const ProbeSpec& spec, const std::string& host, int port);

// The probe's options (plan fields and flags), the step's params schema, and their reader.
const OptionTable& probe_options();
json probe_params_schema();
ProbeSpec spec_from_params(const json& params);

}  // namespace rocebench::microbench
