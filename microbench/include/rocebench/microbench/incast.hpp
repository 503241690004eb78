#pragma once
// The incast stress step (issue #41): N-1 senders stream to one receiver at once for a duration, then
// the next host receives, until every host (or each of `receivers`) has been the receiver once. The
// senders run the probes' own bandwidth loop (driver.hpp) on TCP or verbs; the step adds the rotation,
// the goodput per 100 ms interval, the fairness between senders, and every host's counter deltas over
// each turn (TCP: the kernel's, verbs: the NIC's). It only measures: the lossless verdict is reports'.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/options.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::microbench {

// Goodput is sampled per interval of this length (the 100 ms: a fabric that stalls shows there).
inline constexpr std::int64_t kIncastIntervalNs = 100'000'000;

// A verbs sender gives up on its messages still in flight when none has completed for this long after
// its turn: an RC stream whose resends do not get through (heavy loss) ends its turn and is recorded as
// stalled, instead of holding every host until the step's deadline. A slow one that completes is waited for.
inline constexpr double kIncastDrainS = 5.0;

// What a host records of its own counters over one turn of the incast: `deltas` (counter_deltas or
// tcp_counter_deltas: metrics, and "samples" beside them) in the turn's `series` (its params), with the
// turn's receiver, the host's role in it, and whose counters they are.
ResultRecord incast_counter_record(const json& series, const std::string& receiver, bool is_receiver, const std::string& host,
                                   const json& deltas);

// Jain's fairness index of the senders' goodputs, (sum x)^2 / (n sum x^2): 1 when all get the same,
// 1/n when one gets everything. nullopt when it is undefined (no values, or all zero); a negative
// value throws std::invalid_argument.
std::optional<double> jain_fairness(std::span<const double> goodputs);

// The receiver's goodput (Gb/s) in each interval: the streams' bytes per interval (all counted from the
// one origin the receiver gives its senders) summed over the intervals that every stream covers, less the
// first one (the streams' ramp-up: TCP's slow start, the first window of a verbs queue).
std::vector<double> aggregate_interval_Gbps(const std::vector<std::vector<std::uint64_t>>& stream_bytes,
                                            std::int64_t interval_ns = kIncastIntervalNs);

// The receivers in turn, as host indices: those `receivers` names (comma-separated host names), else
// every host in rank order. A name that is not a host of the run, or one named twice, throws InputError
// naming the field and its flag.
std::vector<int> receiver_order(const std::vector<std::string>& hosts, const std::string& receivers);

// The step's options (plan fields and flags), most of them the probes' own declarations.
const OptionTable& incast_options();
StepKind incast_step();
// `rocebench probe TRANSPORT incast ...`: the step as a one-step plan.
int incast_main(const std::string& transport, const Args& args);

}  // namespace rocebench::microbench
