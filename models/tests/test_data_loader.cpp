// The data loader on a folder of real JPEG images the test encodes itself (TurboJPEG): labels from
// sub-folder names, shapes, every image once per epoch, the same batches whatever the thread count,
// bad input naming the folder or file, and `rocebench train --data`.
#include <turbojpeg.h>

#include <algorithm>
#include <array>
#include <functional>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "../../harness/tests/process_util.hpp"
#include "data_image.hpp"
#include "data_loader.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/common/temp_dir.hpp"
#include "rocebench/models/module.hpp"
#include "rocebench/models/train.hpp"

namespace rocebench::models {
namespace {

namespace fs = std::filesystem;

void write_bytes(const fs::path& path, const unsigned char* data, std::size_t size) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// A width × height JPEG of one colour, encoded by TurboJPEG at quality 95.
void write_jpeg(const fs::path& path, int width, int height, std::array<std::uint8_t, 3> rgb) {
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height * 3);
  for (std::size_t k = 0; k < pixels.size(); ++k) pixels[k] = rgb[k % 3];
  tjhandle tj = tjInitCompress();
  ASSERT_NE(tj, nullptr);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(tj, pixels.data(), width, 0, height, TJPF_RGB, &jpeg, &size, TJSAMP_444, 95, 0), 0) << tjGetErrorStr2(tj);
  write_bytes(path, jpeg, size);
  tjFree(jpeg);
  tjDestroy(tj);
}

// Classes "ant" (red images) and "bee" (blue), 5 each of varied sizes, plus a file the scan ignores.
struct Folder {
  fs::path root = make_temp_dir("loader");
  Folder() {
    for (const char* cls : {"bee", "ant"}) fs::create_directory(root / cls);
    for (int k = 0; k < 5; ++k) {
      write_jpeg(root / "ant" / ("a" + std::to_string(k) + ".jpg"), 40 + 8 * k, 30 + 4 * k, {220, 20, 20});
      write_jpeg(root / "bee" / ("b" + std::to_string(k) + ".JPEG"), 36 + 4 * k, 48, {20, 20, 220});
    }
    std::ofstream(root / "ant" / "notes.txt") << "not an image";
  }
};

constexpr Shape kShape{3, 16, 16};

// Mean of channel c of image k of a batch (normalised values).
double channel_mean(const Batch& b, int k, int c) {
  const auto plane = static_cast<std::size_t>(kShape.h * kShape.w);
  const float* p = b.images.data() + static_cast<std::size_t>(k) * kShape.size() + static_cast<std::size_t>(c) * plane;
  double sum = 0;
  for (std::size_t i = 0; i < plane; ++i) sum += p[i];
  return sum / static_cast<double>(plane);
}

TEST(DataLoader, ScanTakesLabelsFromSortedClassFolders) {
  Folder f;
  const ImageFolder folder = scan_image_folder(f.root.string());
  EXPECT_EQ(folder.classes, (std::vector<std::string>{"ant", "bee"}));
  ASSERT_EQ(folder.files.size(), 10u);
  for (const auto& file : folder.files)
    EXPECT_EQ(file.label, fs::path(file.path).parent_path().filename() == "ant" ? 0 : 1) << file.path;
}

TEST(DataLoader, BatchesHaveTheModelShapeAndMatchingLabels) {
  Folder f;
  DataLoader loader(scan_image_folder(f.root.string()), {.shape = kShape, .batch = 4, .threads = 2});
  for (int step = 0; step < 3; ++step) {
    const Batch& b = loader.next();
    ASSERT_EQ(b.images.size(), 4u * kShape.size());
    ASSERT_EQ(b.labels.size(), 4u);
    for (int k = 0; k < 4; ++k) {
      // Red images have a high red and low blue channel after normalisation; blue ones the opposite.
      const bool red = channel_mean(b, k, 0) > 1.0 && channel_mean(b, k, 2) < -1.0;
      const bool blue = channel_mean(b, k, 0) < -1.0 && channel_mean(b, k, 2) > 1.0;
      EXPECT_TRUE(b.labels[static_cast<std::size_t>(k)] == 0 ? red : blue) << "step " << step << " image " << k;
    }
  }
}

TEST(DataLoader, EveryImageOncePerEpoch) {
  Folder f;
  // Batches of 4 through 10 images: three epochs in 15 batches, some batches spanning two epochs.
  DataLoader loader(scan_image_folder(f.root.string()), {.shape = kShape, .batch = 4, .threads = 3, .prefetch = 3});
  std::vector<int> stream;
  for (int step = 0; step < 15; ++step) {
    const Batch& b = loader.next();
    stream.insert(stream.end(), b.files.begin(), b.files.end());
  }
  std::vector<int> orders[3];
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int> seen(stream.begin() + epoch * 10, stream.begin() + epoch * 10 + 10);
    orders[epoch] = seen;
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})) << "epoch " << epoch;
  }
  EXPECT_NE(orders[0], orders[1]) << "each epoch is shuffled anew";
  // Holding batch 14, the loader may have decoded batches 15 and 16 (prefetch 3), no further.
  EXPECT_GE(loader.stats().images, 60);
  EXPECT_LE(loader.stats().images, 68);
}

TEST(DataLoader, SameSeedSameBatchesWhateverTheThreadCount) {
  Folder f;
  const ImageFolder folder = scan_image_folder(f.root.string());
  DataLoader one(folder, {.shape = kShape, .batch = 3, .threads = 1, .seed = 7});
  DataLoader four(folder, {.shape = kShape, .batch = 3, .threads = 4, .prefetch = 3, .seed = 7});
  DataLoader other(folder, {.shape = kShape, .batch = 3, .threads = 1, .seed = 8});
  bool differs = false;
  for (int step = 0; step < 5; ++step) {
    const Batch& a = one.next();
    const Batch& b = four.next();
    EXPECT_EQ(a.files, b.files) << "step " << step;
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_TRUE(a.images == b.images) << "step " << step << ": augmentation depends on the threads";
    differs = differs || other.next().images != a.images;
  }
  EXPECT_TRUE(differs) << "another seed gave the same crops";
}

TEST(DataLoader, AugmentCropsFlipsAndNormalises) {
  // A 64×32 image, left half black, right half white: a flip swaps which side of the output is bright.
  RgbImage image{64, 32, std::vector<std::uint8_t>(64 * 32 * 3)};
  for (int y = 0; y < 32; ++y)
    for (int x = 32; x < 64; ++x)
      for (int c = 0; c < 3; ++c) image.pixels[(static_cast<std::size_t>(y) * 64 + x) * 3 + c] = 255;
  int flipped = 0, plain = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<float> out(static_cast<std::size_t>(kShape.size()));
    augment(image, kShape, rng, out);
    for (float v : out) ASSERT_TRUE(v >= (0 - 0.485f) / 0.229f - 1e-3f && v <= (1 - 0.406f) / 0.225f + 1e-3f) << v;
    const float left = out[8 * 16 + 0], right = out[8 * 16 + 15];  // red channel, middle row
    if (left > right) ++flipped;
    if (right > left) ++plain;
  }
  EXPECT_GT(flipped, 5);
  EXPECT_GT(plain, 5);
}

TEST(DataLoader, DecodesPngAndPpmLikeJpeg) {
  const fs::path dir = make_temp_dir("images");
  const std::string ppm = "P6\n# a comment\n2 1\n255\n";
  std::ofstream(dir / "a.ppm", std::ios::binary) << ppm << std::string("\x0a\x14\x1e\xff\x00\x80", 6);
  const RgbImage img = decode_image((dir / "a.ppm").string());
  EXPECT_EQ(img.width, 2);
  EXPECT_EQ(img.height, 1);
  EXPECT_EQ(img.pixels, (std::vector<std::uint8_t>{10, 20, 30, 255, 0, 128}));
  write_jpeg(dir / "b.jpg", 8, 8, {200, 100, 50});
  const RgbImage jpeg = decode_image((dir / "b.jpg").string());
  EXPECT_EQ(jpeg.width, 8);
  EXPECT_NEAR(jpeg.pixels[0], 200, 3);
  EXPECT_NEAR(jpeg.pixels[2], 50, 3);
}

void expect_input_error(const std::function<void()>& f, const std::string& expected) {
  try {
    f();
    ADD_FAILURE() << "no error, expected " << expected;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(DataLoader, BadFoldersAndFilesAreNamed) {
  const fs::path root = make_temp_dir("bad");
  expect_input_error([&] { scan_image_folder((root / "missing").string()); }, "missing' does not exist");
  expect_input_error([&] { scan_image_folder(root.string()); }, "has no images: expected");
  fs::create_directory(root / "cls");
  std::ofstream(root / "cls" / "broken.jpg", std::ios::binary) << "\xff\xd8\xff not really a jpeg";
  write_jpeg(root / "cls" / "fine.jpg", 20, 20, {1, 2, 3});
  // An undecodable file stops the run with its name (exit 2), rather than training on fewer images.
  DataLoader loader(scan_image_folder(root.string()), {.shape = kShape, .batch = 2, .threads = 2});
  expect_input_error([&] { loader.next(); }, "broken.jpg: not a decodable JPEG");
  std::ofstream(root / "cls" / "broken.jpg", std::ios::binary | std::ios::trunc) << "GIF89a";
  expect_input_error([&] { decode_image((root / "cls" / "broken.jpg").string()); }, "not a JPEG, PNG or binary PPM");
}

TEST(DataLoader, TrainRecordsLoaderThroughputAndInputWait) {
  Folder f;
  TrainConfig c{.model = "resnet20_cifar", .batch = 4, .iters = 3, .warmup = 1, .data = f.root.string(), .loader_threads = 2};
  ResultRecord r = measure_training(c, 1);
  r.host = "h";
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_EQ(r.params["input"], "images");
  EXPECT_EQ(r.params["loader_threads"], 2);
  EXPECT_GT(r.metrics["loader_images_per_s"].get<double>(), 0);
  EXPECT_GE(r.metrics["input_wait_ms_per_step"].get<double>(), 0);
  // The wait is part of a step: on average it is no longer than the longest step.
  EXPECT_LE(r.metrics["input_wait_ms_per_step"].get<double>(), r.samples["max"].get<double>());
  EXPECT_TRUE(result_schema().validate(to_json(r, "run")).empty());
}

TEST(DataLoader, TrainCommandLineExitsTwoOnABadDataFolder) {
  RBTEST_NEEDS_ROCEBENCH();
  const auto dir = rbtest::temp_dir("train-data");
  EXPECT_EQ(rbtest::run({ROCEBENCH_BINARY, "train", "--model", "resnet20_cifar", "--batch", "2", "--iters", "1", "--data",
                         "/nonexistent/rb", "--results-dir", (dir / "r").string()}, dir, "bad"), 2);
  EXPECT_NE(rbtest::slurp(dir / "bad.err").find("/nonexistent/rb"), std::string::npos) << rbtest::slurp(dir / "bad.err");
  Folder f;
  for (int k = 0; k < 11; ++k) fs::create_directory(f.root / ("extra" + std::to_string(k)));
  for (int k = 0; k < 11; ++k) write_jpeg(f.root / ("extra" + std::to_string(k)) / "x.jpg", 8, 8, {0, 0, 0});
  expect_input_error([&] { measure_training({.model = "resnet20_cifar", .batch = 2, .iters = 1, .data = f.root.string()}, 1); },
                     "has 13 classes; resnet20_cifar has 10 outputs");
}

}  // namespace
}  // namespace rocebench::models
