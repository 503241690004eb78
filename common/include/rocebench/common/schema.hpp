#pragma once
// A JSON Schema validator for the subset of draft 2020-12 our schemas use: type, enum, const,
// properties, required, additionalProperties, patternProperties, items, minItems, maxItems,
// minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, pattern, allOf, anyOf, oneOf,
// not, if/then/else, $ref to "#/$defs/…", and ajv-errors' errorMessage (one message for any failure
// of its schema). Unknown keywords are ignored, as the standard says.
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rocebench {

struct SchemaError {
  std::string pointer;  // JSON pointer to the offending value in the instance ("" = the root)
  std::string message;
};

class JsonSchema {
 public:
  explicit JsonSchema(nlohmann::json schema);
  static JsonSchema from_file(const std::filesystem::path& file);

  std::vector<SchemaError> validate(const nlohmann::json& instance) const;
  const nlohmann::json& document() const { return root_; }

 private:
  const std::regex& regex(const std::string& pattern) const;
  void check(const nlohmann::json& schema, const nlohmann::json& value, const std::string& pointer,
             std::vector<SchemaError>& errors) const;
  const nlohmann::json& resolve(const std::string& ref) const;
  nlohmann::json root_;
  // Every pattern of the schema, compiled once at construction (read-only after: thread-safe).
  std::map<std::string, std::regex> regexes_;
};

// The schema of result records, compiled into the library from common/schema/result.schema.json.
const JsonSchema& result_schema();

}  // namespace rocebench
