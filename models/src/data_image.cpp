#include "data_image.hpp"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"

namespace rocebench::models {
namespace {

std::vector<std::uint8_t> read_file(const std::string& path) {
  static constexpr InputLimits kImage{"training image", 64 * kMiB};  // a JPEG of ImageNet size is well under 1 MiB
  const std::string bytes = read_input(path, kImage);
  return {bytes.begin(), bytes.end()};
}

RgbImage decode_jpeg(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitDecompress(), tjDestroy);
  if (!tj) throw InfraError("TurboJPEG: cannot create a decompressor");
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  auto* data = const_cast<unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());
  if (tjDecompressHeader3(tj.get(), data, size, &width, &height, &subsampling, &colorspace) != 0)
    throw InputError(fmt::format("{}: not a decodable JPEG ({})", path, tjGetErrorStr2(tj.get())));
  RgbImage img{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * 3)};
  // A warning (a truncated file, corrupt data) counts as an error: the pixels would be made up.
  if (tjDecompress2(tj.get(), data, size, img.pixels.data(), width, 0, height, TJPF_RGB, TJFLAG_STOPONWARNING) != 0)
    throw InputError(fmt::format("{}: not a decodable JPEG ({})", path, tjGetErrorStr2(tj.get())));
  return img;
}

RgbImage decode_png(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
    throw InputError(fmt::format("{}: not a decodable PNG ({})", path, png.message));
  png.format = PNG_FORMAT_RGB;
  RgbImage img{static_cast<int>(png.width), static_cast<int>(png.height), std::vector<std::uint8_t>(PNG_IMAGE_SIZE(png))};
  if (!png_image_finish_read(&png, nullptr, img.pixels.data(), 0, nullptr))
    throw InputError(fmt::format("{}: not a decodable PNG ({})", path, png.message));
  return img;
}

// Binary PPM: "P6", width, height, maxval 255, whitespace and comments between, then the pixels.
RgbImage decode_ppm(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::size_t pos = 2;
  auto next_number = [&]() -> long {
    while (pos < bytes.size() && (std::isspace(bytes[pos]) || bytes[pos] == '#')) {
      if (bytes[pos] == '#')
        while (pos < bytes.size() && bytes[pos] != '\n') ++pos;
      else
        ++pos;
    }
    long v = 0;
    const std::size_t start = pos;
    while (pos < bytes.size() && std::isdigit(bytes[pos]) && v < 1'000'000) v = v * 10 + (bytes[pos++] - '0');
    return pos == start ? -1 : v;
  };
  const long width = next_number(), height = next_number(), maxval = next_number();
  if (width <= 0 || height <= 0 || maxval != 255 || pos >= bytes.size())
    throw InputError(fmt::format("{}: not a decodable PPM (want P6 with maxval 255)", path));
  ++pos;  // the single whitespace before the pixels
  const auto size = static_cast<std::size_t>(width * height * 3);
  if (bytes.size() - pos < size)
    throw InputError(fmt::format("{}: not a decodable PPM ({} of {} pixel bytes)", path, bytes.size() - pos, size));
  return {static_cast<int>(width), static_cast<int>(height),
          std::vector<std::uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(pos),
                                    bytes.begin() + static_cast<std::ptrdiff_t>(pos + size))};
}

double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

RgbImage decode_image(const std::string& path) {
  const auto bytes = read_file(path);
  auto starts = [&](std::initializer_list<std::uint8_t> magic) {
    return bytes.size() >= magic.size() && std::equal(magic.begin(), magic.end(), bytes.begin());
  };
  if (starts({0xFF, 0xD8, 0xFF})) return decode_jpeg(path, bytes);
  if (starts({0x89, 'P', 'N', 'G'})) return decode_png(path, bytes);
  if (starts({'P', '6'})) return decode_ppm(path, bytes);
  throw InputError(fmt::format("{}: not a JPEG, PNG or binary PPM image", path));
}

void augment(const RgbImage& image, Shape out_shape, std::mt19937_64& rng, std::span<float> out) {
  // The crop: an area fraction and aspect ratio (log-uniform) that fit, 10 tries, else the centre.
  const double w = image.width, h = image.height, area = w * h;
  double cw = std::min(w, h), ch = cw, cx = (w - cw) / 2, cy = (h - ch) / 2;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * uniform(rng, 0.08, 1.0);
    const double ratio = std::exp(uniform(rng, std::log(3.0 / 4), std::log(4.0 / 3)));
    const double tw = std::round(std::sqrt(target * ratio)), th = std::round(std::sqrt(target / ratio));
    if (tw > 0 && th > 0 && tw <= w && th <= h) {
      cw = tw, ch = th;
      cx = std::floor(uniform(rng, 0, w - cw + 1));
      cy = std::floor(uniform(rng, 0, h - ch + 1));
      break;
    }
  }
  const bool flip = uniform(rng, 0, 1) < 0.5;
  static constexpr float kMean[3] = {0.485f, 0.456f, 0.406f}, kStd[3] = {0.229f, 0.224f, 0.225f};
  const int oh = out_shape.h, ow = out_shape.w;
  auto pixel = [&](int x, int y, int c) {
    x = std::clamp(x, 0, image.width - 1);
    y = std::clamp(y, 0, image.height - 1);
    return static_cast<float>(image.pixels[(static_cast<std::size_t>(y) * image.width + x) * 3 + c]);
  };
  // Bilinear sampling at pixel centres (align_corners=False).
  for (int oy = 0; oy < oh; ++oy) {
    const double sy = cy + (oy + 0.5) * ch / oh - 0.5;
    const int y0 = static_cast<int>(std::floor(sy));
    const auto fy = static_cast<float>(sy - y0);
    for (int ox = 0; ox < ow; ++ox) {
      const int dx = flip ? ow - 1 - ox : ox;
      const double sx = cx + (dx + 0.5) * cw / ow - 0.5;
      const int x0 = static_cast<int>(std::floor(sx));
      const auto fx = static_cast<float>(sx - x0);
      for (int c = 0; c < 3; ++c) {
        const float top = pixel(x0, y0, c) * (1 - fx) + pixel(x0 + 1, y0, c) * fx;
        const float bottom = pixel(x0, y0 + 1, c) * (1 - fx) + pixel(x0 + 1, y0 + 1, c) * fx;
        const float v = (top * (1 - fy) + bottom * fy) / 255.f;
        out[(static_cast<std::size_t>(c) * oh + oy) * ow + ox] = (v - kMean[c]) / kStd[c];
      }
    }
  }
}

}  // namespace rocebench::models
