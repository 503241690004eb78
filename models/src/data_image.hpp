#pragma once
// Decoding one image file and turning it into a training input: random-resized crop, horizontal
// flip and normalisation with ImageNet's mean and deviation, as torchvision's training transform.
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "rocebench/models/graph.hpp"

namespace rocebench::models {

// 8-bit RGB, rows top to bottom, pixels interleaved.
struct RgbImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;
};

// JPEG (TurboJPEG), PNG (libpng) or binary PPM (P6), told apart by their first bytes; grey images
// become RGB. Throws InputError naming the file when it cannot be read or decoded.
RgbImage decode_image(const std::string& path);

// torchvision's RandomResizedCrop(scale 0.08–1, ratio 3/4–4/3, bilinear) + RandomHorizontalFlip +
// Normalize, written to `out` as C×H×W floats (C = 3). Every random choice comes from `rng`.
void augment(const RgbImage& image, Shape out_shape, std::mt19937_64& rng, std::span<float> out);

}  // namespace rocebench::models
