#include "rocebench/collectives/buckets.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace rocebench::collectives {

GradientBuckets::GradientBuckets(Transport& t, std::size_t bucket_bytes, Algorithm algorithm,
                                 std::chrono::milliseconds deadline)
    : transport_(t), bucket_bytes_(bucket_bytes), algorithm_(algorithm), deadline_(deadline),
      thread_([this] { communicate(); }) {}

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
  open_bytes_ += gradient.size_bytes();
  if (open_bytes_ >= bucket_bytes_) seal_open_bucket();
}

void GradientBuckets::seal_open_bucket() {
  if (open_.tensors.empty()) return;
  open_.packed.resize(open_bytes_ / sizeof(float));
  std::size_t at = 0;
  for (const auto& g : open_.tensors) {
    std::memcpy(open_.packed.data() + at, g.data(), g.size_bytes());
    at += g.size();
  }
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(open_));
    ++in_flight_;
  }
  changed_.notify_all();
  ++buckets_sent_;
  open_ = {};
  open_bytes_ = 0;
}

void GradientBuckets::finish() {
  seal_open_bucket();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return in_flight_ == 0 || error_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void GradientBuckets::communicate() {
  while (true) {
    Bucket bucket;
    bool failed;
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
        require_same(transport_, static_cast<double>(bucket.packed.size()), "the bucket's element count",
                     Deadline(deadline_));
        allreduce(transport_, algorithm_, bucket.packed.data(), bucket.packed.size(), DataType::float32, ReduceOp::avg,
                  {}, Deadline(deadline_));
        std::size_t at = 0;
        for (const auto& g : bucket.tensors) {
          std::memcpy(g.data(), bucket.packed.data() + at, g.size_bytes());
          at += g.size();
        }
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      --in_flight_;
    }
    changed_.notify_all();
  }
}

std::vector<std::size_t> resnet50_gradient_sizes() {
  std::vector<std::size_t> forward;
  auto conv_bn = [&](std::size_t in, std::size_t out, std::size_t k) {
    forward.push_back(out * in * k * k);  // conv weight (no bias: batch norm follows)
    forward.push_back(out);               // bn weight
    forward.push_back(out);               // bn bias
  };
  conv_bn(3, 64, 7);
  std::size_t in = 64;
  const std::size_t widths[] = {64, 128, 256, 512};
  const int blocks[] = {3, 4, 6, 3};
  for (int layer = 0; layer < 4; ++layer) {
    const std::size_t w = widths[layer];
    for (int b = 0; b < blocks[layer]; ++b) {
      conv_bn(in, w, 1);
      conv_bn(w, w, 3);
      conv_bn(w, 4 * w, 1);
      if (b == 0) conv_bn(in, 4 * w, 1);  // downsample projection
      in = 4 * w;
    }
  }
  forward.push_back(1000 * 2048);  // fc weight
  forward.push_back(1000);         // fc bias
  std::reverse(forward.begin(), forward.end());
  return forward;
}

}  // namespace rocebench::collectives
