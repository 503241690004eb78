#include "rocebench/common/errors.hpp"

namespace rocebench {

std::string located_message(const std::string& file, int line, const std::string& field, const std::string& message) {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  if (!out.empty()) out += ": ";
  if (!field.empty()) out += "field '" + field + "': ";
  return out + message;
}

InputError::InputError(const std::string& file, int line, const std::string& field, const std::string& message)
    : std::runtime_error(located_message(file, line, field, message)) {}

}  // namespace rocebench
