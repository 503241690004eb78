#pragma once
// The data-loader path of `rocebench train --data DIR`: a folder of images in ImageNet's layout
// (DIR/<class>/<image>), decoded and augmented on a pool of threads with several batches in flight,
// so training waits only when the loader is slower than the step. The point is to measure the
// input pipeline's cost next to the synthetic-batch throughput.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rocebench/models/graph.hpp"

namespace rocebench::models {

struct ImageFolder {
  std::string root;
  std::vector<std::string> classes;  // sub-folder names, sorted: a class's label is its index
  struct File {
    std::string path;
    int label = 0;
  };
  std::vector<File> files;  // sorted by class, then name
};

// Lists DIR/<class>/*.{jpg,jpeg,png,ppm} (case-insensitive; other files are ignored). Throws
// InputError when DIR is missing or not a folder, or holds no class folder with an image.
ImageFolder scan_image_folder(const std::string& dir);

struct LoaderOptions {
  Shape shape{};             // the model's input; 3 channels
  int batch = 32;
  int threads = 4;           // decoding threads
  int prefetch = 2;          // batches in flight: 2 = double buffering, 3 = triple
  std::uint64_t seed = 1;    // epoch order and augmentation
  std::chrono::seconds deadline{120};  // longest wait for one batch
};

// Images (batch × C × H × W) and labels; `files` says which ImageFolder file each image came from.
struct Batch {
  std::vector<float> images;
  std::vector<int> labels;
  std::vector<int> files;
};

// The loader's counters: what it decoded, how long its threads were busy, how long next() waited.
struct LoaderStats {
  std::int64_t images = 0;
  double busy_s = 0;       // summed over the decoding threads
  double waited_s = 0;     // inside next(), waiting for a batch
  int threads = 0;
  // Decode + augment throughput of the pool when it never waits for a free slot.
  double images_per_s() const { return busy_s > 0 ? static_cast<double>(images) * threads / busy_s : 0; }
};

// Epoch e visits every file once, in an order shuffled by (seed, e); batches follow one another
// through the epochs (a batch may span two). Image k of the stream is augmented with a generator
// seeded by (seed, k), so batches are the same whatever the thread count or timing.
class DataLoader {
 public:
  DataLoader(ImageFolder folder, const LoaderOptions& options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch, valid until the following call. Throws the first decoding error (InputError
  // naming the file), or DeadlineExceeded when no batch arrives within the deadline.
  const Batch& next();
  LoaderStats stats() const;
  const ImageFolder& folder() const { return folder_; }

 private:
  struct Slot {
    Batch batch;
    std::int64_t filling = -1;  // the batch number being decoded into it
    int remaining = 0;          // images of it still being decoded
    std::int64_t ready = -1;    // the batch number it holds complete
  };
  void work();
  int file_at(std::int64_t position);  // under mutex_

  ImageFolder folder_;
  LoaderOptions options_;
  std::vector<Slot> slots_;
  std::vector<int> order_;        // the current epoch's permutation of files
  std::int64_t order_epoch_ = -1;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_, ready_cv_;
  std::int64_t next_image_ = 0;   // stream position the next free thread decodes
  std::int64_t consumed_ = 0;     // batches handed out and released
  bool holding_ = false;          // the caller holds batch consumed_ (returned by next())
  bool stop_ = false;
  std::exception_ptr error_;
  LoaderStats stats_;
  std::vector<std::thread> threads_;
};

}  // namespace rocebench::models
