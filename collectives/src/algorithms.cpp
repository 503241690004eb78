#include "rocebench/collectives/algorithms.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_buffer.hpp"

namespace rocebench::collectives {

std::string to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::ps: return "ps";
    case Algorithm::rd: return "rd";
  }
  return "?";
}

Algorithm parse_algorithm(const std::string& name) {
  for (auto a : {Algorithm::ring, Algorithm::ps, Algorithm::rd}) {
    if (to_string(a) == name) return a;
  }
  throw InputError("unknown algorithm '" + name + "' (ring, ps, rd)");
}

std::size_t segment_begin(std::size_t count, int segments, int s) {
  return count * static_cast<std::size_t>(s) / static_cast<std::size_t>(segments);
}

namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

// The chunks of a segment: [begin, end) element ranges of at most `chunk` elements.
struct Range {
  std::size_t begin, end;
};
std::vector<Range> chunks_of(std::size_t begin, std::size_t end, std::size_t chunk) {
  std::vector<Range> out;
  for (std::size_t b = begin; b < end; b += chunk) out.push_back({b, std::min(end, b + chunk)});
  if (out.empty()) out.push_back({begin, begin});  // an empty segment still exchanges one empty message
  return out;
}

std::size_t chunk_elements(std::size_t chunk_bytes, DataType dtype) {
  return std::max<std::size_t>(1, chunk_bytes / size_of(dtype));
}

// Where an algorithm receives before summing, kept per thread from one call to the next instead of
// a zeroed buffer per call: here a page fault and an munmap cost tens to hundreds of microseconds (perf
// stat, ring, 4 MiB on 4 loopback ranks: 57 -> 47 page faults per op; recursive doubling, 1 MiB on 2
// ranks: 8.1 ms per op with a fresh buffer each call).
char* receive_space(std::size_t bytes) {
  thread_local HostBuffer space;
  if (space.size() < bytes) space = HostBuffer(bytes);
  return space.data();
}

// One pass of the ring, written once for reduce-scatter, allgather and the allreduce that fuses
// them. In step s a rank receives segment (first - 1 - s) from its left neighbour; in the first
// `reduce_steps` steps it sums what arrives into its own copy, later it receives in place. Each
// chunk goes on to the right as soon as it is final, so chunk i of step s + 1 leaves right after
// chunk i of step s lands. Fusing the halves matters: the chunks summed in the last reduce step are
// the allgather's first sends, so the outgoing link never idles for a segment between the halves.
struct RingPass {
  int first;         // the segment sent before step 0
  int reduce_steps;  // steps that sum into the buffer
  int steps;         // all steps
};

void ring_pass(transport::Transport& t, char* buf, std::size_t count, DataType dtype, ReduceOp op, std::size_t chunk_bytes,
               const RingPass& pass, const Deadline& deadline) {
  const int n = t.world(), r = t.rank();
  const std::size_t esize = size_of(dtype);
  const std::size_t chunk = chunk_elements(chunk_bytes, dtype);
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  char* incoming = pass.reduce_steps > 0 ? receive_space((segment_begin(count, n, 1) + 1) * esize) : nullptr;
  auto segment_chunks = [&](int seg) { return chunks_of(segment_begin(count, n, seg), segment_begin(count, n, seg + 1), chunk); };

  // Sends per segment: a receive into a segment first waits for the sends that still read it.
  std::vector<std::vector<transport::Request>> sends(static_cast<std::size_t>(n));
  auto send = [&](int seg, const Range& c) { sends[seg].push_back(t.send(right, buf + c.begin * esize, (c.end - c.begin) * esize)); };

  const int first = mod(pass.first, n);
  for (const auto& c : segment_chunks(first)) send(first, c);
  for (int step = 0; step < pass.steps; ++step) {
    const int seg = mod(pass.first - 1 - step, n);
    const bool reduce = step < pass.reduce_steps;
    const auto in = segment_chunks(seg);
    const std::size_t base = in.front().begin;
    if (!reduce) {
      t.wait(sends[seg], deadline);
      sends[seg].clear();
    }
    std::vector<transport::Request> receives;
    for (const auto& c : in) {
      char* into = reduce ? incoming + (c.begin - base) * esize : buf + c.begin * esize;
      receives.push_back(t.recv(left, into, (c.end - c.begin) * esize));
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
      t.wait(receives[i], deadline);
      if (reduce) reduce_into(dtype, op, buf + in[i].begin * esize, incoming + (in[i].begin - base) * esize, in[i].end - in[i].begin);
      if (step + 1 < pass.steps) send(seg, in[i]);
    }
  }
  for (const auto& pending : sends) t.wait(pending, deadline);
}

}  // namespace

void ring_reduce_scatter(transport::Transport& t, void* data, std::size_t count, DataType dtype, ReduceOp op,
                         std::size_t chunk_bytes, const Deadline& deadline) {
  const int n = t.world();
  if (n == 1) return;
  ring_pass(t, static_cast<char*>(data), count, dtype, op, chunk_bytes, {t.rank() - 1, n - 1, n - 1}, deadline);
}

void ring_allgather(transport::Transport& t, void* data, std::size_t count, DataType dtype, std::size_t chunk_bytes,
                    const Deadline& deadline) {
  const int n = t.world();
  if (n == 1) return;
  ring_pass(t, static_cast<char*>(data), count, dtype, ReduceOp::sum, chunk_bytes, {t.rank(), 0, n - 1}, deadline);
}

namespace {

void parameter_server(transport::Transport& t, char* buf, std::size_t count, DataType dtype, ReduceOp op, int servers,
                      const Deadline& deadline) {
  const int n = t.world(), r = t.rank();
  const int s_count = std::clamp(servers, 1, n);
  const std::size_t esize = size_of(dtype);
  // Push: every worker sends shard k to server k. A server sums what arrives into its own copy.
  std::vector<char*> arrivals;
  std::vector<transport::Request> pushes, incoming;
  for (int k = 0; k < s_count; ++k) {
    const std::size_t b = segment_begin(count, s_count, k), e = segment_begin(count, s_count, k + 1);
    if (k != r) pushes.push_back(t.send(k, buf + b * esize, (e - b) * esize));
  }
  if (r < s_count) {
    const std::size_t b = segment_begin(count, s_count, r), e = segment_begin(count, s_count, r + 1);
    char* space = receive_space(static_cast<std::size_t>(n - 1) * (e - b) * esize);
    for (int w = 0; w < n; ++w) {
      if (w == r) continue;
      arrivals.push_back(space + arrivals.size() * (e - b) * esize);
      incoming.push_back(t.recv(w, arrivals.back(), (e - b) * esize));
    }
    for (std::size_t i = 0; i < incoming.size(); ++i) {
      t.wait(incoming[i], deadline);
      reduce_into(dtype, op, buf + b * esize, arrivals[i], e - b);
    }
  }
  t.wait(pushes, deadline);
  // Pull: each server sends its summed shard back to every worker.
  std::vector<transport::Request> pulls;
  for (int k = 0; k < s_count; ++k) {
    const std::size_t b = segment_begin(count, s_count, k), e = segment_begin(count, s_count, k + 1);
    if (k == r) {
      for (int w = 0; w < n; ++w) {
        if (w != r) pulls.push_back(t.send(w, buf + b * esize, (e - b) * esize));
      }
    } else {
      pulls.push_back(t.recv(k, buf + b * esize, (e - b) * esize));
    }
  }
  t.wait(pulls, deadline);
}

// Recursive doubling (MPICH's scheme for any n): the first 2*rem ranks pair up so that a power of
// two take part, exchange whole buffers log2(p) times, then hand the result back.
void recursive_doubling(transport::Transport& t, char* buf, std::size_t count, DataType dtype, ReduceOp op, const Deadline& deadline) {
  const int n = t.world(), r = t.rank();
  const std::size_t bytes = count * size_of(dtype);
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int rem = n - p;
  char* incoming = receive_space(bytes);
  int vrank;  // rank among the p that exchange, -1 for those folded away
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      t.wait(t.send(r + 1, buf, bytes), deadline);
      vrank = -1;
    } else {
      t.wait(t.recv(r - 1, incoming, bytes), deadline);
      reduce_into(dtype, op, buf, incoming, count);
      vrank = r / 2;
    }
  } else {
    vrank = r - rem;
  }
  auto real_rank = [&](int v) { return v < rem ? 2 * v + 1 : v + rem; };
  if (vrank >= 0) {
    for (int mask = 1; mask < p; mask <<= 1) {
      const int partner = real_rank(vrank ^ mask);
      const transport::Request in = t.recv(partner, incoming, bytes);
      const transport::Request out = t.send(partner, buf, bytes);
      t.wait(std::vector<transport::Request>{in, out}, deadline);
      // a + b and b + a are the same float (max too, for numbers), so both partners end bit-identical.
      reduce_into(dtype, op, buf, incoming, count);
    }
  }
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      t.wait(t.recv(r + 1, buf, bytes), deadline);
    } else {
      t.wait(t.send(r - 1, buf, bytes), deadline);
    }
  }
}

}  // namespace

void require_same(transport::Transport& t, double value, const std::string& what, const Deadline& deadline) {
  double range[2] = {value, -value};  // max of both: the largest and the smallest value
  recursive_doubling(t, reinterpret_cast<char*>(range), 2, DataType::float64, ReduceOp::max, deadline);
  refuse_unless_same(t.rank(), value, range, what);
}

void refuse_unless_same(int rank, double value, std::span<const double, 2> range, const std::string& what) {
  if (range[0] != value || -range[1] != value) {
    throw InputError(fmt::format("rank {}: the ranks disagree on {}: this rank has {:g}, the ranks range over {:g}..{:g}",
                                 rank, what, value, -range[1], range[0]));
  }
}

void allreduce(transport::Transport& t, Algorithm algorithm, void* data, std::size_t count, DataType dtype, ReduceOp op,
               const CollectiveOptions& options, const Deadline& deadline) {
  char* buf = static_cast<char*>(data);
  if (t.world() > 1) {
    switch (algorithm) {
      case Algorithm::ring:
        ring_pass(t, buf, count, dtype, op, options.chunk_bytes, {t.rank(), t.world() - 1, 2 * (t.world() - 1)}, deadline);
        break;
      case Algorithm::ps: parameter_server(t, buf, count, dtype, op, options.servers, deadline); break;
      case Algorithm::rd: recursive_doubling(t, buf, count, dtype, op, deadline); break;
    }
  }
  if (op == ReduceOp::avg) finish_average(dtype, buf, count, t.world());
}

}  // namespace rocebench::collectives
