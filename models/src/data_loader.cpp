#include "data_loader.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "data_image.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"

namespace rocebench::models {
namespace {

namespace fs = std::filesystem;

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".ppm";
}

std::uint64_t mix(std::uint64_t seed, std::uint64_t value) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + value * 0xD1B54A32D192ED03ull + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

ImageFolder scan_image_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(fmt::format("data folder '{}' {}", dir, fs::exists(dir, ec) ? "is not a folder" : "does not exist"));
  ImageFolder folder{dir, {}, {}};
  std::vector<fs::path> class_dirs;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory()) class_dirs.push_back(entry.path());
  std::sort(class_dirs.begin(), class_dirs.end());
  for (const auto& class_dir : class_dirs) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(class_dir))
      if (entry.is_regular_file() && is_image_name(entry.path())) names.push_back(entry.path().string());
    if (names.empty()) continue;
    std::sort(names.begin(), names.end());
    const int label = static_cast<int>(folder.classes.size());
    folder.classes.push_back(class_dir.filename().string());
    for (auto& n : names) folder.files.push_back({std::move(n), label});
  }
  if (folder.files.empty())
    throw InputError(fmt::format("data folder '{}' has no images: expected {}/<class>/<name>.jpg (or .jpeg, .png, .ppm)", dir, dir));
  return folder;
}

DataLoader::DataLoader(ImageFolder folder, const LoaderOptions& options)
    : folder_(std::move(folder)), options_(options) {
  if (options.shape.c != 3)
    throw InputError(fmt::format("the data loader makes RGB images; the model takes {} channels", options.shape.c));
  if (options.batch < 1 || options.threads < 1 || options.prefetch < 2)
    throw InputError(fmt::format("data loader: batch ({}) and threads ({}) must be at least 1, prefetch ({}) at least 2",
                                 options.batch, options.threads, options.prefetch));
  slots_.resize(static_cast<std::size_t>(options.prefetch));
  const auto b = static_cast<std::size_t>(options.batch);
  for (auto& s : slots_) s.batch = {std::vector<float>(b * static_cast<std::size_t>(options.shape.size())),
                                    std::vector<int>(b), std::vector<int>(b)};
  stats_.threads = options.threads;
  for (int t = 0; t < options.threads; ++t) threads_.emplace_back([this] { work(); });
}

DataLoader::~DataLoader() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

int DataLoader::file_at(std::int64_t position) {
  const auto n = static_cast<std::int64_t>(folder_.files.size());
  const std::int64_t epoch = position / n;
  if (epoch != order_epoch_) {
    order_.resize(static_cast<std::size_t>(n));
    std::iota(order_.begin(), order_.end(), 0);
    std::mt19937_64 rng(mix(options_.seed, static_cast<std::uint64_t>(epoch)));
    std::shuffle(order_.begin(), order_.end(), rng);
    order_epoch_ = epoch;
  }
  return order_[static_cast<std::size_t>(position % n)];
}

void DataLoader::work() {
  const std::int64_t batch = options_.batch, prefetch = options_.prefetch;
  const auto image_floats = static_cast<std::size_t>(options_.shape.size());
  for (;;) {
    std::int64_t position = 0;
    int file = 0;
    Slot* slot = nullptr;
    {
      std::unique_lock lock(mutex_);
      // Batch b goes into slot b % prefetch once batch b − prefetch has been released.
      work_cv_.wait(lock, [&] { return stop_ || next_image_ / batch < consumed_ + prefetch; });
      if (stop_) return;
      position = next_image_++;
      slot = &slots_[static_cast<std::size_t>((position / batch) % prefetch)];
      if (position % batch == 0) {
        slot->filling = position / batch;
        slot->remaining = options_.batch;
      }
      file = file_at(position);
    }
    const std::int64_t t0 = now_ns();
    const auto k = static_cast<std::size_t>(position % batch);
    try {
      const RgbImage image = decode_image(folder_.files[static_cast<std::size_t>(file)].path);
      std::mt19937_64 rng(mix(options_.seed, static_cast<std::uint64_t>(position) + (1ull << 62)));
      augment(image, options_.shape, rng, std::span(slot->batch.images).subspan(k * image_floats, image_floats));
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      stop_ = true;
      work_cv_.notify_all();
      ready_cv_.notify_all();
      return;
    }
    slot->batch.labels[k] = folder_.files[static_cast<std::size_t>(file)].label;
    slot->batch.files[k] = file;
    const std::int64_t busy = now_ns() - t0;
    std::lock_guard lock(mutex_);
    ++stats_.images;
    stats_.busy_s += static_cast<double>(busy) / 1e9;
    if (--slot->remaining == 0) {
      slot->ready = slot->filling;
      ready_cv_.notify_all();
    }
  }
}

const Batch& DataLoader::next() {
  std::unique_lock lock(mutex_);
  if (holding_) {
    ++consumed_;
    holding_ = false;
    work_cv_.notify_all();
  }
  const std::int64_t wanted = consumed_;
  Slot& slot = slots_[static_cast<std::size_t>(wanted % options_.prefetch)];
  const std::int64_t t0 = now_ns();
  const bool arrived = ready_cv_.wait_for(lock, options_.deadline, [&] { return error_ || slot.ready == wanted; });
  stats_.waited_s += static_cast<double>(now_ns() - t0) / 1e9;
  if (error_) std::rethrow_exception(error_);
  if (!arrived)
    throw DeadlineExceeded(fmt::format("data loader: batch {} from '{}' not ready after {} s ({} decoding threads)", wanted,
                                       folder_.root, options_.deadline.count(), options_.threads));
  holding_ = true;
  return slot.batch;
}

LoaderStats DataLoader::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace rocebench::models
