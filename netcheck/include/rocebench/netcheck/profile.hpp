#pragma once
// Expected configurations. Built-in profiles are compiled in from netcheck/profiles/*.json; a user
// profile (JSON) extends one ("extends", default lossless-roce) and overrides any value in it.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rocebench::netcheck {

struct Profile {
  std::string name;
  std::string file;       // where it came from ("built-in" for compiled-in ones)
  nlohmann::json values;  // the merged document, validated against profile.schema.json

  // Value at a JSON pointer ("/roce/pfc_priorities"); the schema and the built-in base guarantee it.
  const nlohmann::json& at(const std::string& pointer) const;
};

std::vector<std::string> builtin_profile_names();
// A built-in name ("lossless-roce") or a file path. Bad files throw InputError "file:line: field 'x': ...".
Profile load_profile(const std::string& name_or_path);
// For tests and tools: a profile from text, as if read from `file`.
Profile parse_profile(const std::string& text, const std::string& file);

}  // namespace rocebench::netcheck
