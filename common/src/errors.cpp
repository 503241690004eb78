#include "rocebench/common/errors.hpp"

namespace rocebench {

std::string printable_excerpt(std::string_view text, std::size_t max_chars) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  std::size_t used = 0;
  for (; used < text.size() && out.size() < max_chars; ++used) {
    const char c = text[used];
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  if (used < text.size()) out += "… (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string located_message(const std::string& file, int line, const std::string& field, const std::string& message) {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  if (!out.empty()) out += ": ";
  if (!field.empty()) out += "field '" + field + "': ";
  return out + message;
}

std::string json_parse_message(std::string_view what) {
  static constexpr std::string_view kQuote = "last read: '";
  const std::size_t at = what.find(kQuote);
  if (at == std::string_view::npos) return printable_excerpt(what, 300);
  std::string_view read = what.substr(at + kQuote.size());
  if (!read.empty() && read.back() == '\'') read.remove_suffix(1);
  return printable_excerpt(what.substr(0, at + kQuote.size()), 300) + printable_excerpt(read, 40) + "'";
}

InputError::InputError(const std::string& file, int line, const std::string& field, const std::string& message)
    : std::runtime_error(located_message(file, line, field, message)) {}

}  // namespace rocebench
