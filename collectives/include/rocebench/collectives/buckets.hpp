#pragma once
// Gradient buckets: small gradients are packed into buckets of a given size, and each bucket's
// allreduce starts on a communication thread as soon as the bucket is full — while backward is
// still producing the next gradients.
#include <chrono>
#include <condition_variable>
#include <exception>
#include <cstddef>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "rocebench/collectives/algorithms.hpp"

namespace rocebench::collectives {

class GradientBuckets {
 public:
  // Averages float32 gradients over t's ranks. Every rank must add the same tensors in the same order.
  GradientBuckets(Transport& t, std::size_t bucket_bytes, Algorithm algorithm, std::chrono::milliseconds deadline);
  ~GradientBuckets();

  // A gradient is ready: it joins the open bucket, which is sent off when it reaches bucket_bytes.
  void add(std::span<float> gradient);
  // Sends the last, partial bucket and waits until every gradient holds the average.
  // Throws what the communication thread caught (a lost peer, a deadline).
  void finish();
  // Buckets sent since construction.
  std::size_t buckets_sent() const { return buckets_sent_; }

 private:
  struct Bucket {
    std::vector<std::span<float>> tensors;
    std::vector<float> packed;
  };
  void seal_open_bucket();
  void communicate();

  Transport& transport_;
  std::size_t bucket_bytes_;
  Algorithm algorithm_;
  std::chrono::milliseconds deadline_;
  Bucket open_;
  std::size_t open_bytes_ = 0;
  std::size_t buckets_sent_ = 0;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Bucket> queue_;
  std::size_t in_flight_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

// The gradient tensors of torchvision's ResNet-50 (161 tensors, 25,557,032 parameters), in the
// order backward produces them (last layer first), as element counts.
std::vector<std::size_t> resnet50_gradient_sizes();

}  // namespace rocebench::collectives
