#include "rocebench/common/located_json.hpp"

#include <fmt/format.h>

#include "rocebench/common/json_depth.hpp"

#include <cctype>
#include <string_view>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"

namespace rocebench {

using nlohmann::json;

namespace {

// Walks text already known to be valid JSON and notes the line where each value starts.
class LineScanner {
 public:
  LineScanner(const std::string& text, std::map<std::string, int>& lines) : text_(text), lines_(lines) {}
  void scan() { value(""); }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  std::string string_token() {
    std::string raw;
    ++pos_;  // opening quote
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') raw += text_[pos_++];
      raw += text_[pos_++];
    }
    ++pos_;  // closing quote
    return json::parse("\"" + raw + "\"").get<std::string>();  // undo escapes exactly as the parser does
  }
  static std::string escape(const std::string& key) {
    std::string out;
    for (char c : key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    return out;
  }
  void value(const std::string& pointer) {
    skip_space();
    lines_.emplace(pointer, line_);
    const char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      skip_space();
      if (text_[pos_] == '}') { ++pos_; return; }
      while (true) {
        skip_space();
        const int key_line = line_;
        const std::string child = pointer + "/" + escape(string_token());
        lines_[child] = key_line;
        skip_space();
        ++pos_;  // ':'
        skip_space();
        value(child);  // keeps the key's line: a member is where its key is
        skip_space();
        if (text_[pos_++] == '}') return;  // else ','
      }
    } else if (c == '[') {
      ++pos_;
      skip_space();
      if (text_[pos_] == ']') { ++pos_; return; }
      for (int i = 0;; ++i) {
        value(pointer + "/" + std::to_string(i));
        skip_space();
        if (text_[pos_++] == ']') return;
      }
    } else if (c == '"') {
      string_token();
    } else {
      while (pos_ < text_.size() && std::string_view(",]} \t\r\n").find(text_[pos_]) == std::string_view::npos) ++pos_;
    }
  }
  const std::string& text_;
  std::map<std::string, int>& lines_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

std::string pointer_to_field(const std::string& pointer) {
  std::string out;
  std::size_t pos = 1;
  while (pos <= pointer.size() && !pointer.empty()) {
    const std::size_t next = pointer.find('/', pos);
    std::string token = pointer.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    for (std::size_t i; (i = token.find("~1")) != std::string::npos;) token.replace(i, 2, "/");
    for (std::size_t i; (i = token.find("~0")) != std::string::npos;) token.replace(i, 2, "~");
    const bool index = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
    out += index ? "[" + token + "]" : (out.empty() ? "" : ".") + token;
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

int LocatedJson::line_of(const std::string& pointer) const {
  std::string p = pointer;
  while (true) {
    if (auto it = lines.find(p); it != lines.end()) return it->second;
    if (p.empty()) return 0;
    p = p.substr(0, p.rfind('/'));
  }
}

void LocatedJson::fail(const std::string& pointer, const std::string& message) const {
  throw InputError(file, line_of(pointer), pointer_to_field(pointer), message);
}

LocatedJson parse_located(const std::string& text, const std::string& file) {
  LocatedJson out;
  out.file = file;
  // An error at byte `at` of the text, as "file:line: column C: what".
  const auto error_at = [&](std::size_t at, const std::string& what) {
    int line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return InputError(file, line, "", "column " + std::to_string(at - line_start + 1) + ": " + what);
  };
  if (const std::size_t at = json_too_deep_at(text); at != std::string::npos)
    throw error_at(at, fmt::format("nested deeper than {} levels", kMaxJsonDepth));
  try {
    out.value = json::parse(text);
  } catch (const json::out_of_range& e) {  // a number beyond double's range, such as 1E999
    throw InputError(file, 0, "", "not valid JSON: " + json_parse_message(e.what()));
  } catch (const json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character.
    std::string what = json_parse_message(e.what());
    if (auto i = what.find("syntax error"); i != std::string::npos) what = what.substr(i);
    throw error_at(e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size()), "not valid JSON: " + what);
  }
  LineScanner(text, out.lines).scan();
  return out;
}

LocatedJson load_located(const std::filesystem::path& file) {
  // A plan, profile or thresholds file: hand-written, a few KB, parsed whole with a line per value.
  static constexpr InputLimits kJsonFileLimits{"JSON file", 16 * kMiB};
  return parse_located(read_input(file, kJsonFileLimits), file.string());
}

}  // namespace rocebench
