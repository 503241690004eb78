#pragma once
// JSON parsed together with the line of every value, so that errors in a plan or a profile can
// name the file, line and field.
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace rocebench {

struct LocatedJson {
  std::string file;
  nlohmann::json value;
  std::map<std::string, int> lines;  // JSON pointer -> 1-based line where that value (or key) starts

  // Line of the value at `pointer`, or of its nearest ancestor that has one.
  int line_of(const std::string& pointer) const;
  // Throws InputError "file:line: field 'pointer': message".
  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const;
};

// Syntax errors throw InputError naming file, line and column.
LocatedJson parse_located(const std::string& text, const std::string& file);
LocatedJson load_located(const std::filesystem::path& file);

// Field name for messages: "/steps/0/params/bytes" -> "steps[0].params.bytes".
std::string pointer_to_field(const std::string& pointer);

}  // namespace rocebench
