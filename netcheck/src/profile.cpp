#include "rocebench/netcheck/profile.hpp"

#include <algorithm>
#include <filesystem>

#include "builtin_profiles.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/located_json.hpp"
#include "rocebench/common/schema.hpp"

namespace rocebench::netcheck {

using nlohmann::json;

namespace {

constexpr const char* kDefaultBase = "lossless-roce";

const JsonSchema& profile_schema() {
  static const JsonSchema schema(json::parse(profile_schema_text()));
  return schema;
}

// Sections ("roce", "link", ...) merge key by key; a value a profile sets replaces the base's whole
// (a dscp_to_priority table too, and null: "rate_gbps": null unpins a rate).
void overlay(json& base, const json& top) {
  for (const auto& [key, value] : top.items()) {
    if (value.is_object() && base.contains(key) && base[key].is_object()) {
      for (const auto& [name, setting] : value.items()) base[key][name] = setting;
    } else {
      base[key] = value;
    }
  }
}

const BuiltinText* find_builtin(const std::string& name) {
  const auto& all = builtin_profile_texts();
  const auto it = std::find_if(all.begin(), all.end(), [&](const BuiltinText& b) { return b.name == name; });
  return it == all.end() ? nullptr : &*it;
}

Profile from_document(const LocatedJson& doc, int depth) {
  if (!doc.value.is_object()) doc.fail("", "a profile is a JSON object");
  const auto errors = profile_schema().validate(doc.value);
  if (!errors.empty()) doc.fail(errors.front().pointer, errors.front().message);

  Profile p;
  p.file = doc.file;
  p.name = doc.value.value("name", std::string());
  const bool builtin = doc.file == "built-in";
  if (builtin && !doc.value.contains("extends")) {
    p.values = doc.value;
    return p;
  }
  const std::string base_name = doc.value.value("extends", std::string(kDefaultBase));
  const BuiltinText* base = find_builtin(base_name);
  if (!base) doc.fail("/extends", "no built-in profile named '" + base_name + "'");
  if (depth > 4) doc.fail("/extends", "profiles extend each other in a loop");
  p.values = from_document(parse_located(base->text, "built-in"), depth + 1).values;
  overlay(p.values, doc.value);
  p.values.erase("extends");
  if (p.name.empty()) p.name = doc.file;
  return p;
}

}  // namespace

const json& Profile::at(const std::string& pointer) const { return values.at(json::json_pointer(pointer)); }

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  for (const auto& b : builtin_profile_texts()) names.push_back(b.name);
  return names;
}

Profile parse_profile(const std::string& text, const std::string& file) { return from_document(parse_located(text, file), 0); }

Profile load_profile(const std::string& name_or_path) {
  if (const BuiltinText* b = find_builtin(name_or_path)) {
    Profile p = from_document(parse_located(b->text, "built-in"), 0);
    p.file = "built-in";
    return p;
  }
  std::error_code ec;
  if (!std::filesystem::exists(name_or_path, ec)) {
    std::string names;
    for (const auto& n : builtin_profile_names()) names += (names.empty() ? "" : ", ") + n;
    throw InputError("profile '" + name_or_path + "': no such file, and no built-in profile of that name (built-in: " + names + ")");
  }
  return from_document(load_located(name_or_path), 0);
}

}  // namespace rocebench::netcheck
