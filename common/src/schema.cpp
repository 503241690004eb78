#include "rocebench/common/schema.hpp"

#include <cmath>
#include <regex>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"

namespace rocebench {

using nlohmann::json;

namespace {

bool has_type(const json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    if (!value.is_number_float()) return false;
    // A number with no fractional part (JSON Schema); casting 7.7e124 to an integer type is undefined.
    const double d = value.get<double>();
    return std::isfinite(d) && d == std::floor(d);
  }
  return false;
}

std::string escape_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string short_dump(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

namespace {

void collect_patterns(const json& node, std::map<std::string, std::regex>& out) {
  if (node.is_object()) {
    for (const auto& [key, child] : node.items()) {
      if (key == "pattern" && child.is_string()) out.emplace(child.get<std::string>(), std::regex(child.get<std::string>()));
      if (key == "patternProperties" && child.is_object()) {
        for (const auto& [pattern, sub] : child.items()) out.emplace(pattern, std::regex(pattern));
      }
      collect_patterns(child, out);
    }
  } else if (node.is_array()) {
    for (const auto& child : node) collect_patterns(child, out);
  }
}

}  // namespace

JsonSchema::JsonSchema(json schema) : root_(std::move(schema)) { collect_patterns(root_, regexes_); }

const std::regex& JsonSchema::regex(const std::string& pattern) const { return regexes_.at(pattern); }

JsonSchema JsonSchema::from_file(const std::filesystem::path& file) {
  static constexpr InputLimits kSchemaLimits{"JSON Schema", 16 * kMiB};  // ours is 10 KB
  const std::string text = read_input(file, kSchemaLimits);
  try {
    return JsonSchema(json::parse(text));
  } catch (const json::exception& e) {
    throw InputError(file.string(), 0, "", "schema is not JSON: " + json_parse_message(e.what()));
  }
}

std::vector<SchemaError> JsonSchema::validate(const json& instance) const {
  std::vector<SchemaError> errors;
  check(root_, instance, "", errors);
  return errors;
}

const json& JsonSchema::resolve(const std::string& ref) const {
  if (ref.rfind("#", 0) != 0) throw InputError("schema $ref '" + ref + "' is not local");
  try {
    return root_.at(json::json_pointer(ref.substr(1)));
  } catch (const json::exception&) {
    throw InputError("schema $ref '" + ref + "' points nowhere");
  }
}

void JsonSchema::check(const json& schema, const json& value, const std::string& pointer,
                       std::vector<SchemaError>& errors) const {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) errors.push_back({pointer, "is not allowed here"});
    return;
  }
  if (auto it = schema.find("errorMessage"); it != schema.end()) {
    // ajv-errors' keyword: any failure here reads as this one message (a renamed field's hint).
    json plain = schema;
    plain.erase("errorMessage");
    std::vector<SchemaError> scratch;
    check(plain, value, pointer, scratch);
    if (!scratch.empty()) errors.push_back({pointer, it->get<std::string>()});
    return;
  }
  auto fail = [&](const std::string& message) { errors.push_back({pointer, message}); };
  auto passes = [&](const json& sub) {
    std::vector<SchemaError> scratch;
    check(sub, value, pointer, scratch);
    return scratch.empty();
  };

  if (auto it = schema.find("$ref"); it != schema.end()) check(resolve(*it), value, pointer, errors);

  if (auto it = schema.find("type"); it != schema.end()) {
    bool ok = false;
    if (it->is_string()) ok = has_type(value, *it);
    else for (const auto& t : *it) ok = ok || has_type(value, t);
    if (!ok) {
      fail("expected " + (it->is_string() ? it->get<std::string>() : it->dump()) + ", got " + short_dump(value));
      return;  // the other keywords would only repeat the same complaint
    }
  }
  if (auto it = schema.find("const"); it != schema.end() && value != *it) fail("must be " + it->dump());
  if (auto it = schema.find("enum"); it != schema.end()) {
    if (std::find(it->begin(), it->end(), value) == it->end()) fail("must be one of " + it->dump() + ", got " + short_dump(value));
  }

  if (value.is_number()) {
    const double x = value.get<double>();
    if (auto it = schema.find("minimum"); it != schema.end() && x < it->get<double>()) fail("must be >= " + it->dump());
    if (auto it = schema.find("maximum"); it != schema.end() && x > it->get<double>()) fail("must be <= " + it->dump());
    if (auto it = schema.find("exclusiveMinimum"); it != schema.end() && x <= it->get<double>()) fail("must be > " + it->dump());
    if (auto it = schema.find("exclusiveMaximum"); it != schema.end() && x >= it->get<double>()) fail("must be < " + it->dump());
  }
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    if (auto it = schema.find("minLength"); it != schema.end() && s.size() < it->get<std::size_t>())
      fail("must have at least " + it->dump() + " characters");
    if (auto it = schema.find("pattern"); it != schema.end() && !std::regex_search(s, regex(it->get<std::string>())))
      fail("must match " + it->dump() + ", got " + short_dump(value));
  }
  if (value.is_array()) {
    if (auto it = schema.find("minItems"); it != schema.end() && value.size() < it->get<std::size_t>())
      fail("must have at least " + it->dump() + " items");
    if (auto it = schema.find("maxItems"); it != schema.end() && value.size() > it->get<std::size_t>())
      fail("must have at most " + it->dump() + " items");
    if (auto it = schema.find("items"); it != schema.end()) {
      for (std::size_t i = 0; i < value.size(); ++i) check(*it, value[i], pointer + "/" + std::to_string(i), errors);
    }
  }
  if (value.is_object()) {
    if (auto it = schema.find("required"); it != schema.end()) {
      for (const auto& key : *it) {
        if (!value.contains(key.get<std::string>())) {
          errors.push_back({pointer + "/" + escape_token(key), "is required but missing"});
        }
      }
    }
    const json* properties = schema.contains("properties") ? &schema["properties"] : nullptr;
    const json* patterns = schema.contains("patternProperties") ? &schema["patternProperties"] : nullptr;
    const json* additional = schema.contains("additionalProperties") ? &schema["additionalProperties"] : nullptr;
    for (const auto& [key, child] : value.items()) {
      const std::string child_pointer = pointer + "/" + escape_token(key);
      bool matched = false;
      if (properties && properties->contains(key)) {
        matched = true;
        check((*properties)[key], child, child_pointer, errors);
      }
      if (patterns) {
        for (const auto& [pattern, sub] : patterns->items()) {
          if (std::regex_search(key, regex(pattern))) {
            matched = true;
            check(sub, child, child_pointer, errors);
          }
        }
      }
      if (!matched && additional) {
        if (additional->is_boolean() && !additional->get<bool>()) {
          errors.push_back({child_pointer, "is not a known field"});
        } else {
          check(*additional, child, child_pointer, errors);
        }
      }
    }
  }

  if (auto it = schema.find("allOf"); it != schema.end()) {
    for (const auto& sub : *it) check(sub, value, pointer, errors);
  }
  if (auto it = schema.find("anyOf"); it != schema.end()) {
    if (std::none_of(it->begin(), it->end(), passes)) fail("matches none of the allowed forms");
  }
  if (auto it = schema.find("oneOf"); it != schema.end()) {
    const auto n = std::count_if(it->begin(), it->end(), passes);
    if (n != 1) fail(n == 0 ? "matches none of the allowed forms" : "matches more than one of the allowed forms");
  }
  if (auto it = schema.find("not"); it != schema.end() && passes(*it)) fail("matches a form that is not allowed");
  if (auto it = schema.find("if"); it != schema.end()) {
    const bool cond = passes(*it);
    const char* branch = cond ? "then" : "else";
    if (schema.contains(branch)) check(schema[branch], value, pointer, errors);
  }
}

}  // namespace rocebench
