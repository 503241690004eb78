#include "rocebench/collectives/buckets.hpp"
#include "rocebench/common/host_buffer.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace rocebench::collectives {

void reduce_bucket(transport::Transport& t, std::span<const std::span<float>> tensors, HostBuffer& space,
                   const BucketOptions& options, const Deadline& deadline) {
  std::size_t count = 0;
  for (const auto& g : tensors) count += g.size();
  require_same(t, static_cast<double>(count), "the bucket's element count", deadline);
  if (space.size() < count * sizeof(float)) space = HostBuffer(count * sizeof(float));
  const std::span<float> packed(reinterpret_cast<float*>(space.data()), count);
  std::size_t at = 0;
  for (const auto& g : tensors) {
    std::memcpy(packed.data() + at, g.data(), g.size_bytes());
    at += g.size();
  }
  allreduce(t, options.algorithm, packed.data(), count, DataType::float32, ReduceOp::avg, options.collective, deadline);
  at = 0;
  for (const auto& g : tensors) {
    std::memcpy(g.data(), packed.data() + at, g.size_bytes());
    at += g.size();
  }
}

GradientBuckets::GradientBuckets(transport::Transport& t, const BucketOptions& options, std::chrono::milliseconds deadline)
    : transport_(t), options_(options), deadline_(deadline), thread_([this] { communicate(); }) {}

GradientBuckets::~GradientBuckets() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void GradientBuckets::add(std::span<float> gradient) {
  open_.tensors.push_back(gradient);
  open_.time.bytes += gradient.size_bytes();
  if (options_.full(open_index_, open_.time.bytes)) seal_open_bucket();
}

void GradientBuckets::seal_open_bucket() {
  if (open_.tensors.empty()) return;
  open_.time.sealed_ns = now_ns();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(open_));
    ++in_flight_;
  }
  changed_.notify_all();
  ++buckets_sent_;
  ++open_index_;
  open_ = {};
}

void GradientBuckets::finish() {
  seal_open_bucket();
  open_index_ = 0;
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return in_flight_ == 0 || error_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

std::vector<BucketTime> GradientBuckets::take_times() {
  std::lock_guard lock(mutex_);
  return std::exchange(done_, {});
}

void GradientBuckets::communicate() {
  while (true) {
    Bucket bucket;
    bool failed, reduced = false;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      bucket = std::move(queue_.front());
      queue_.pop_front();
      failed = error_ != nullptr;  // after a failure the rest are only drained
    }
    try {
      if (!failed) {
        bucket.time.start_ns = now_ns();
        reduce_bucket(transport_, bucket.tensors, packed_, options_, Deadline(deadline_));
        bucket.time.end_ns = now_ns();
        reduced = true;
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (reduced) done_.push_back(bucket.time);
      --in_flight_;
    }
    changed_.notify_all();
  }
}

}  // namespace rocebench::collectives
