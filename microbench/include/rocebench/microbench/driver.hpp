#pragma once
// The probe driver (the nccl-tests pattern): it owns the options, the size sweep, warm-up, the
// iteration or duration loop, timing, statistics, the table and the records. A transport's test
// contributes only its own part through the small `Probe` interface below.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/common/stats.hpp"

namespace rocebench::microbench {

enum class ProbeKind { latency, bandwidth };

struct DriverOptions {
  std::vector<std::size_t> sizes{2};
  int iterations = 0;        // 0 = the test's default (perftest: 1000 latency, 5000 bandwidth)
  int warmup = -1;           // -1 = default
  double duration_s = 0;     // > 0: duration mode instead of an iteration count
  int tx_depth = 128;        // bandwidth: messages in flight
  int cq_mod = 100;          // bandwidth: one WR in cq_mod is signaled, as perftest -Q (at most tx_depth)
  std::int64_t interval_ns = 0;  // bandwidth, > 0: the record's samples keep the bytes completed per interval
  std::int64_t interval_origin_ns = 0;  // where those intervals start (now_ns()'s clock); 0: at the first post
  // bandwidth with duration_s, > 0: once the duration is over, messages still in flight when none has
  // completed for this long are given up (samples.abandoned_messages) instead of waited for. Only for
  // a probe whose end is told over its control socket (verbs), not by its last message (TCP).
  double drain_s = 0;
  std::string step = "microbench.probe";
};

// perftest's CQ moderation, lowered to the TX depth as perftest does: one send in this many is signaled.
std::size_t cq_moderation(const DriverOptions& o);

// Bandwidth as perftest computes it from post and completion times (ns) of every message.
struct BandwidthFigures {
  double peak_Gbps = 0, avg_Gbps = 0, msg_rate_Mpps = 0;
};

// One connected endpoint pair of one transport running one test. The active side (the client)
// drives; the passive side (the server) answers until the active side's last message.
class Probe {
 public:
  virtual ~Probe() = default;
  virtual ProbeKind kind() const = 0;
  // perftest reports half the round trip for write/send (and TCP) latency, the full one for read.
  virtual double round_trip_divisor() const { return 2.0; }
  // transport, test and mode options of the records (the driver adds bytes and peer).
  virtual json params() const = 0;
  virtual std::string peer() const = 0;

  // Active side. begin_size announces the message size to the peer (0 = no more sizes).
  virtual void begin_size(std::size_t bytes) = 0;
  virtual void ping(bool last) = 0;              // latency: one exchange
  // Bandwidth: one message on the wire. Only a `signaled` one reports its completion, for itself and the
  // unsignaled ones before it (perftest's CQ moderation); the driver signals every cq_mod-th message
  // and the last of each loop, so a full window always has one coming.
  virtual void post(bool last, bool signaled) = 0;
  virtual std::size_t poll(bool wait) = 0;       // bandwidth: messages completed since the last call
  virtual json end_size() { return json::object(); }  // extra metrics of the size (counters, MTU)

  // Passive side: the next size the peer announces (0 = done), then serve it to its last message.
  virtual std::size_t next_size() = 0;
  virtual void serve(std::size_t bytes) = 0;

  // Bidirectional bandwidth (perftest -b): the passive side also posts windows, in the loop the
  // active side runs (returned here), before serve(); its own figures go back to the active side,
  // whose end_size() returns them as rev_bw_avg_Gbps, rev_bw_peak_Gbps and rev_msg_rate_Mpps.
  virtual std::optional<DriverOptions> reverse_loop() const { return std::nullopt; }
  virtual void set_reverse_figures(const BandwidthFigures& /*own*/) {}
};

// Sizes: "2..8M" style sweep (every power of two, perftest -a), or one size.
std::vector<std::size_t> sweep_sizes(std::size_t from = 2, std::size_t to = std::size_t{8} << 20);

// The peak looks only at runs that end on a completion perftest would have seen: every `cq_mod`-th
// message (it signals one WR in cq_mod) and the last one.
BandwidthFigures bandwidth_figures(std::size_t bytes, const std::vector<std::int64_t>& posted_ns,
                                   const std::vector<std::int64_t>& completed_ns, std::size_t cq_mod);

// Bytes completed in each whole interval of `interval_ns` from `origin_ns` to the last completion, or to
// `until_ns` when that is later (a stream that stalled: its empty intervals count); a partial interval at
// the end is left out, a completion before the origin counts in the first. Completions are counted when
// they were seen, so a moderated queue (cq_mod), or a sender the CPU left waiting, puts a burst of
// messages in one interval.
std::vector<std::uint64_t> bytes_per_interval(std::size_t bytes, std::int64_t origin_ns,
                                              const std::vector<std::int64_t>& completed_ns, std::int64_t interval_ns,
                                              std::int64_t until_ns = 0);

// A bidirectional record as perftest -b reports it: bw_avg_Gbps, bw_peak_Gbps and msg_rate_Mpps become
// the sums of both directions; this side's own figures stay as fwd_*, the peer's are the rev_* ones.
void sum_directions(ResultRecord& r);

// Latency records as the contract names them.
json latency_metrics(const Summary& s);

// What the driver hands its sink: one record per size, and the table row it printed.
using RecordSink = std::function<void(const ResultRecord&)>;

// Active side: runs every size, emitting each record as it finishes (a later failure keeps it).
void run_active(Probe& probe, const DriverOptions& options, const RecordSink& sink);
// Passive side: serves sizes until the peer says it is done. Returns the number of sizes served.
int run_passive(Probe& probe);

// The human table (perftest columns).
std::string table_header(ProbeKind kind);
std::string table_row(const ResultRecord& r, ProbeKind kind);

// A skip record for a test that cannot run here (no device), with the reason.
ResultRecord skip_record(const std::string& step, json params, const std::string& reason);

}  // namespace rocebench::microbench
