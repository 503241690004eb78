#pragma once
// Gradient buckets: gradients are packed into buckets in the order backward makes them final, and
// each bucket's allreduce starts on a communication thread as soon as the bucket is full — while
// backward is still producing the next gradients (PyTorch DDP's reducer).
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "rocebench/collectives/algorithms.hpp"
#include "rocebench/common/host_buffer.hpp"

namespace rocebench::collectives {

struct BucketOptions {
  // DDP's defaults: a small first bucket so that communication starts early, then bucket_cap_mb 25.
  std::size_t first_bucket_bytes = 1 << 20;
  std::size_t bucket_bytes = 25 << 20;  // 0: one bucket, reduced when backward is over (no overlap)
  Algorithm algorithm = Algorithm::ring;
  CollectiveOptions collective{};

  // Whether the open bucket, the `index`-th of the step, is full at `open_bytes`.
  bool full(std::size_t index, std::size_t open_bytes) const {
    const std::size_t cap = index == 0 ? first_bucket_bytes : bucket_bytes;
    return bucket_bytes > 0 && open_bytes >= cap;
  }
};

// When one bucket of a step was handed to the communication thread and reduced (now_ns() clock).
struct BucketTime {
  std::size_t bytes = 0;
  std::int64_t sealed_ns = 0, start_ns = 0, end_ns = 0;
};

// What the communication thread does with one bucket: checks that every rank holds as many
// elements, packs the tensors into `space` (grown when too small), averages over the ranks, unpacks.
void reduce_bucket(transport::Transport& t, std::span<const std::span<float>> tensors, HostBuffer& space,
                   const BucketOptions& options, const Deadline& deadline);

class GradientBuckets {
 public:
  // Averages float32 gradients over t's ranks. Every rank must add the same tensors in the same order.
  GradientBuckets(transport::Transport& t, const BucketOptions& options, std::chrono::milliseconds deadline);
  ~GradientBuckets();

  // A gradient is final: it joins the open bucket, which is sent off when it is full.
  void add(std::span<float> gradient);
  // Sends the last, partial bucket and waits until every gradient holds the average. The object
  // then takes the next step's gradients. Throws what the communication thread caught (a lost peer,
  // a deadline).
  void finish();
  // Buckets sent since construction.
  std::size_t buckets_sent() const { return buckets_sent_; }
  // The timing of each bucket since the last call, after finish().
  std::vector<BucketTime> take_times();

 private:
  struct Bucket {
    std::vector<std::span<float>> tensors;
    BucketTime time;
  };
  void seal_open_bucket();
  void communicate();

  transport::Transport& transport_;
  BucketOptions options_;
  std::chrono::milliseconds deadline_;
  Bucket open_;
  std::size_t open_index_ = 0;  // the open bucket's place in this step
  std::size_t buckets_sent_ = 0;
  HostBuffer packed_;   // the communication thread's

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Bucket> queue_;
  std::vector<BucketTime> done_;
  std::size_t in_flight_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace rocebench::collectives
