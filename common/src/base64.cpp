#include "rocebench/common/base64.hpp"

namespace rocebench {

namespace {
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(std::string_view data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < data.size(); i += 3) {
    const auto byte = [&](std::size_t k) { return k < data.size() ? static_cast<unsigned char>(data[k]) : 0u; };
    const unsigned n = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < data.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < data.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    // Only the last group may end in padding: "xx==" (one byte) or "xxx=" (two).
    int pad = 0;
    if (i + 4 == text.size() && text[i + 3] == '=') pad = text[i + 2] == '=' ? 2 : 1;
    unsigned n = 0;
    for (int k = 0; k < 4; ++k) {
      n <<= 6;
      if (k >= 4 - pad) continue;
      const auto v = kAlphabet.find(text[i + static_cast<std::size_t>(k)]);
      if (v == std::string_view::npos) return std::nullopt;  // '=' too, where it is not padding
      n |= static_cast<unsigned>(v);
    }
    out += static_cast<char>((n >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

}  // namespace rocebench
